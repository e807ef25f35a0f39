/* test_attend_split.c: split-K decode attention. The log-sum-exp merge of
 * parts computed apart equals the softmax over all their rows; split
 * attention on 2 threads equals one-thread flash within 1e-6 for every
 * cache format, over several blocks, with a window and with the integer
 * dots; the counts are flash's plus the merge's.
 *
 * Relative to what: an output is a weighted mean of value rows, so its
 * bound is the largest |value|, and float sums in another order differ by
 * a few units of that bound's last place. The test takes the norm-wise
 * difference (root mean square over the G x hd outputs) over that bound.
 * A single element can stray further (1.03e-6 of the bound, f32, 2348
 * rows, 3 parts), and relative to the output itself the figure grows with
 * cancellation (random values of both signs average to near 0: 1.3e-6 at
 * 1500 rows), where one-thread flash is no closer to the exact sum. */
#include "testutil.h"

#include "kernels/attend_split.h"
#include "util/pool.h"

#define SPLIT_TOL 1e-6

static void fill(float *x, size_t n, uint32_t s)
{
    s = 2463534242u ^ (s * 2654435761u);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        x[i] = -1.5f + 3.0f * (float)(s >> 8) / (float)(1u << 24);
    }
}

static double worst_max; /* the largest single difference seen, over its bound: reported */

/* The root mean square of a - b over n, relative to bound (the norm-wise
 * relative difference); the largest single one goes to worst_max. */
static double rel_to_bound(const float *a, const float *b, size_t n, double bound)
{
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)a[i] - (double)b[i];
        sq += d * d;
        worst_max = fmax(worst_max, fabs(d) / bound);
    }
    return sqrt(sq / (double)n) / bound;
}

/* The merge against a softmax in double over all rows: parts of scores s
 * and values v (one value per row, hd 1 .. 3), each part's state made by
 * hand. */
static void test_merge_is_softmax(void **state)
{
    (void)state;
    enum { ROWS = 10, HD = 3, G = 2 };
    static const size_t cuts[][4] = { { 0, 10, 10, 10 }, { 0, 3, 10, 10 }, { 0, 1, 2, 10 }, { 0, 5, 5, 10 } };
    float s[G][ROWS], v[ROWS][HD];
    fill(&s[0][0], G * ROWS, 1);
    fill(&v[0][0], ROWS * HD, 2);
    s[1][7] = 30.0f; /* one score far above the others: a part's max must dominate */
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        float m[3 * G], l[3 * G], acc[3 * G * HD], out[G * HD];
        for (size_t p = 0; p < 3; p++)
            for (size_t g = 0; g < G; g++) {
                float mx = -INFINITY, sum = 0.0f, *a = acc + (p * G + g) * HD;
                memset(a, 0, HD * sizeof *a);
                for (size_t r = cuts[c][p]; r < cuts[c][p + 1]; r++)
                    mx = s[g][r] > mx ? s[g][r] : mx;
                for (size_t r = cuts[c][p]; r < cuts[c][p + 1]; r++) {
                    const float e = expf(s[g][r] - mx);
                    sum += e;
                    for (size_t d = 0; d < HD; d++)
                        a[d] += e * v[r][d];
                }
                m[p * G + g] = mx, l[p * G + g] = sum;
            }
        attend_merge(out, m, l, acc, 3, G, HD);
        for (size_t g = 0; g < G; g++) {
            double mx = -INFINITY, sum = 0.0, want[HD] = { 0 };
            for (size_t r = 0; r < ROWS; r++)
                mx = s[g][r] > mx ? s[g][r] : mx;
            for (size_t r = 0; r < ROWS; r++) {
                const double e = exp(s[g][r] - mx);
                sum += e;
                for (size_t d = 0; d < HD; d++)
                    want[d] += e * v[r][d];
            }
            for (size_t d = 0; d < HD; d++)
                if (fabs(out[g * HD + d] - want[d] / sum) > 1e-6 * fmax(1.0, fabs(want[d] / sum)))
                    fail_msg("cut %zu head %zu [%zu]: merged %.9g, softmax %.9g", c, g, d, out[g * HD + d],
                             want[d] / sum);
        }
    }
    float m[2] = { 1.0f, -INFINITY }, l[2] = { 0.0f, 0.0f }, acc[2] = { 5.0f, 5.0f }, out[1] = { 9.0f };
    attend_merge(out, m, l, acc, 2, 1, 1); /* no part saw a row */
    assert_true(out[0] == 0.0f);
}

/* How rows are cut: never a part below ATTEND_SPLIT_MIN_ROWS, never more
 * parts than asked. */
static void test_parts(void **state)
{
    (void)state;
    assert_int_equal(attend_split_parts(100000, 1), 1);
    assert_int_equal(attend_split_parts(2 * ATTEND_SPLIT_MIN_ROWS - 1, 2), 1);
    assert_int_equal(attend_split_parts(2 * ATTEND_SPLIT_MIN_ROWS, 2), 2);
    assert_int_equal(attend_split_parts(8192, 2), 2);
    assert_int_equal(attend_split_parts(8192, 1000), ATTEND_SPLIT_MAX_PARTS / 2); /* 8192 / 256 = 32 */
    assert_int_equal(attend_split_parts(1000000, 1000), ATTEND_SPLIT_MAX_PARTS);
}

typedef struct {
    size_t hd, G, rows, n_blocks;
    unsigned char *k, *v;
    KvBlock blocks[5];
    unsigned short chan[5][2 * 128];
} Kv;

/* rows at positions 0.., in n_blocks blocks of formats kf, vf (per-channel
 * key codes get a scale and minimum per block) */
static void make_kv(Kv *c, size_t hd, size_t G, size_t rows, size_t n_blocks, Format kf, Format vf)
{
    memset(c, 0, sizeof *c);
    c->hd = hd, c->G = G, c->rows = rows, c->n_blocks = n_blocks;
    const size_t kr = format_row_bytes(kf, hd), vr = format_row_bytes(vf, hd);
    c->k = malloc(rows * kr);
    c->v = malloc(rows * vr);
    float row[128];
    const int chan = format_is_per_channel(kf);
    for (size_t r = 0; r < rows; r++) {
        fill(row, hd, (uint32_t)(r * 2 + 1));
        if (chan) /* codes 0 .. 3, which u2 and u4 both hold */
            for (size_t i = 0; i < hd; i++)
                row[i] = (float)((r * 7 + i * 3) % 4);
        codec_ref[kf].quantize(c->k + r * kr, row, hd);
        fill(row, hd, (uint32_t)(r * 2 + 2));
        codec_ref[vf].quantize(c->v + r * vr, row, hd);
    }
    for (size_t b = 0, start = 0; b < n_blocks; b++) {
        const size_t n = rows / n_blocks + (b < rows % n_blocks);
        for (size_t i = 0; chan && i < hd; i++) {
            c->chan[b][i] = fp16_from_f32(0.25f + 0.01f * (float)(i + b));
            c->chan[b][hd + i] = fp16_from_f32(-1.0f + 0.03f * (float)i);
        }
        c->blocks[b] = (KvBlock){ .pos = start, .n = n, .k = c->k + start * kr, .v = c->v + start * vr,
                                  .k_stride = kr, .v_stride = vr, .k_fmt = kf, .v_fmt = vf,
                                  .k_chan = chan ? c->chan[b] : NULL };
        start += n;
    }
}

/* One decode query at the last position: out [G][hd], by flash (parts 0)
 * or split into `parts` */
static void attend_kv(const Kv *c, size_t parts, size_t window, int int_dot, float *out, Counters *ctr)
{
    const Kernels *k = kernels_select(NULL, NULL);
    float q[4 * 128], chan_q[4 * 128];
    fill(q, c->G * c->hd, 99);
    float *scores = malloc(c->G * c->rows * sizeof(float));
    unsigned char q8[4 * 136];
    void *iv = malloc(attend_iv_bytes(c->G, c->hd));
    AttnArgs a = { .q = q, .q_stride = c->G * c->hd, .out = out, .out_stride = c->G * c->hd, .n_q = 1,
                   .group = c->G, .head_dim = c->hd, .pos0 = c->rows - 1, .window = window, .blocks = c->blocks,
                   .n_blocks = c->n_blocks, .scores = scores, .chan_q = chan_q, .q8 = int_dot ? q8 : NULL,
                   .iv = int_dot ? iv : NULL };
    if (parts)
        attend_split(k, &a, parts, ctr);
    else
        attend(k, ATTEND_FLASH, &a, ctr);
    free(scores);
    free(iv);
}

static void check_format(Format f, size_t hd, size_t G, size_t rows, size_t n_blocks, size_t window, int int_dot)
{
    Kv c;
    make_kv(&c, hd, G, rows, n_blocks, f, format_is_per_channel(f) ? FMT_F32 : f);
    float want[4 * 128], got[4 * 128];
    Counters one = { 0 };
    attend_kv(&c, 0, window, int_dot, want, &one);
    double vmax = 0.0; /* the outputs' bound: the largest |value| stored */
    float kr[128], vr[128];
    for (size_t b = 0; b < n_blocks; b++)
        for (size_t r = 0; r < c.blocks[b].n; r++) {
            block_decode_row(codec_ref, &c.blocks[b], r, hd, kr, vr);
            for (size_t i = 0; i < hd; i++)
                vmax = fmax(vmax, fabs((double)vr[i]));
        }
    static const size_t asks[] = { 2, 3, 5 };
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        Counters split = { 0 };
        attend_kv(&c, asks[i], window, int_dot, got, &split);
        const size_t seen = window && window < rows ? window : rows, parts = attend_split_parts(seen, asks[i]);
        const double d = rel_to_bound(got, want, G * hd, vmax);
        if (d > SPLIT_TOL)
            fail_msg("%s hd=%zu G=%zu rows=%zu blocks=%zu window=%zu int_dot=%d, %zu parts: %.3g from flash",
                     format_name(f), hd, G, rows, n_blocks, window, int_dot, parts, d);
        assert_true(parts > 1);
        assert_int_equal(split.attn_split_queries, 1);
        assert_int_equal(split.attn_split_parts, parts);
        assert_int_equal(split.kv_bytes_read, one.kv_bytes_read);
        assert_int_equal(split.flops_qk, one.flops_qk);
        assert_int_equal(split.flops_av, one.flops_av);
    }
    free(c.k);
    free(c.v);
}

/* Every format, one block and several (a paged cache), G 1 and 4, a
 * window; on two threads, with more parts than threads too. */
static void test_split_equals_flash(void **state)
{
    (void)state;
    Err e = { 0 };
    assert_int_equal(pool_set_threads(2, &e), 0);
    size_t n = 0;
    for (int f = 0; f < FMT_COUNT; f++) {
        check_format((Format)f, 32, 4, 1500, 1, 0, 0);
        check_format((Format)f, 128, 1, 2 * ATTEND_TILE + 300, 5, 0, 0);
        check_format((Format)f, 32, 4, 1800, 3, 1300, 0);
        n += 3;
    }
    printf("  %zu (format, shape) cases: split on 2 threads within %.0e of flash (norm-wise; the largest single\n"
           "  difference %.2g of the values' bound)\n", n, SPLIT_TOL, worst_max);
}

/* --int-dot: keys scored by integer dots (exact, any cut); the 4-bit values'
 * integer weights round against the largest scale seen so far, which a
 * part starting later has not seen: within 1e-6 still on these rows. */
static void test_split_int_dot(void **state)
{
    (void)state;
    Err e = { 0 };
    assert_int_equal(pool_set_threads(2, &e), 0);
    static const Format fmts[] = { FMT_Q8_0, FMT_Q4_0, FMT_INT4, FMT_FP4 };
    for (size_t i = 0; i < 4; i++)
        check_format(fmts[i], 32, 4, 1500, 3, 0, 1);
}

typedef struct {
    Kv *kv;
    float *out;
    Counters ctr;
} Nested;

static void nested_iteration(void *ctx, size_t i)
{
    Nested *n = ctx;
    (void)i;
    attend_kv(n->kv, 2, 0, 0, n->out, &n->ctr);
}

/* Called from inside a pool_run iteration, split attention keeps one part:
 * flash's bytes exactly, and no split counted. */
static void test_nested_stays_whole(void **state)
{
    (void)state;
    Err e = { 0 };
    assert_int_equal(pool_set_threads(2, &e), 0);
    Kv c;
    make_kv(&c, 32, 4, 1500, 3, FMT_F16, FMT_F16);
    float want[4 * 32], got[4 * 32];
    attend_kv(&c, 0, 0, 0, want, NULL);
    Nested n = { &c, got, { 0 } };
    pool_run(1, nested_iteration, &n);
    assert_int_equal(n.ctr.attn_split_queries, 0);
    assert_memory_equal(got, want, sizeof want);
    free(c.k);
    free(c.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_is_softmax),
        cmocka_unit_test(test_parts),
        cmocka_unit_test(test_split_equals_flash),
        cmocka_unit_test(test_split_int_dot),
        cmocka_unit_test(test_nested_stays_whole),
    };
    return cmocka_run_group_tests_name("attend_split", tests, NULL, NULL);
}
