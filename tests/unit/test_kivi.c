/* test_kivi.c: the KIVI cache (keys per channel in u4 / u2, values per
 * token). Rows stay f16 until G of them make a group, which is quantized at
 * once; every key comes back within half its channel's step; 2 bits lose
 * more than 4; the bytes are the hand-counted ones; generation through it
 * agrees across attention forms and ISAs; bad specs say what is wrong. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/generate.h"
#include "sim/quality.h"

#define HD 32

static KvCache *open_kivi(const char *spec, size_t n_layers, size_t n_seqs, size_t n_kv_heads)
{
    KvGeometry g = { .n_layers = n_layers, .n_seqs = n_seqs, .n_kv_heads = n_kv_heads, .head_dim = HD,
                     .max_seq_len = 256 };
    Err e = { 0 };
    KvCache *c = kv_open(spec, &g, &e);
    if (!c)
        fail_msg("%s: %s", spec, e.msg);
    return c;
}

/* Key and value of (position, head, channel): channels of very different
 * ranges (channel 3 an outlier far from 0, channel 5 constant), as KIVI
 * expects of keys. */
static float key_at(size_t pos, size_t h, size_t i)
{
    if (i == 5)
        return 0.75f;
    float wobble = sinf(0.7f * (float)pos + 1.3f * (float)i + (float)h);
    return i == 3 ? 40.0f + 8.0f * wobble : (0.1f + 0.05f * (float)i) * wobble;
}

static float value_at(size_t pos, size_t h, size_t i)
{
    return cosf(0.3f * (float)pos + 0.9f * (float)i + 2.0f * (float)h);
}

/* Append n rows to (layer, seq) from its current length, one call. */
static void append(KvCache *c, size_t layer, size_t seq, size_t n)
{
    const size_t H = c->geo.n_kv_heads, pos0 = kv_length(c, layer, seq);
    float *k = malloc(n * H * HD * sizeof *k), *v = malloc(n * H * HD * sizeof *v);
    for (size_t t = 0; t < n; t++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < HD; i++) {
                k[(t * H + h) * HD + i] = key_at(pos0 + t, h, i);
                v[(t * H + h) * HD + i] = value_at(pos0 + t, h, i);
            }
    Err e = { 0 };
    if (kv_append(c, layer, seq, pos0, n, k, v, NULL, &e) < 0)
        fail_msg("append: %s", e.msg);
    free(k);
    free(v);
}

/* What we implement: the first G - 1 rows are one f16 block (no k_chan);
 * the G-th append quantizes them, leaving one group block of G code rows
 * and no residual; row G + 1 starts a new f16 residual after it. A prefill
 * of many rows in one call groups exactly as row-by-row appends do. */
static void test_groups_quantize_when_full(void **state)
{
    (void)state;
    KvCache *c = open_kivi("kivi:group=8", 1, 1, 2);
    assert_string_equal(format_name(c->k_fmt), "u4"); /* what descriptions show */
    assert_int_equal(c->v_fmt, FMT_Q4_0);
    assert_true(c->lossy);
    KvBlock b;
    for (size_t n = 1; n < 8; n++) {
        append(c, 0, 0, 1);
        assert_int_equal(kv_n_blocks(c, 0, 0), 1);
        kv_block(c, 0, 0, 1, 0, &b);
        assert_true(b.pos == 0 && b.n == n && b.k_fmt == FMT_F16 && b.v_fmt == FMT_F16 && !b.k_chan);
    }
    append(c, 0, 0, 1); /* the 8th row fills the group */
    assert_int_equal(kv_n_blocks(c, 0, 0), 1);
    kv_block(c, 0, 0, 1, 0, &b);
    assert_true(b.pos == 0 && b.n == 8 && b.k_fmt == FMT_U4 && b.v_fmt == FMT_Q4_0 && b.k_chan);
    append(c, 0, 0, 1);
    assert_int_equal(kv_n_blocks(c, 0, 0), 2);
    kv_block(c, 0, 0, 1, 1, &b);
    assert_true(b.pos == 8 && b.n == 1 && b.k_fmt == FMT_F16 && !b.k_chan);

    /* 20 rows at once: two groups and 4 residual rows, the same bytes */
    KvCache *d = open_kivi("kivi:group=8", 1, 1, 2);
    append(d, 0, 0, 20);
    append(c, 0, 0, 11);
    assert_int_equal(kv_n_blocks(d, 0, 0), 3);
    for (size_t i = 0; i < 3; i++)
        for (size_t h = 0; h < 2; h++) {
            KvBlock x, y;
            kv_block(c, 0, 0, h, i, &x);
            kv_block(d, 0, 0, h, i, &y);
            assert_true(x.pos == y.pos && x.n == y.n && x.k_fmt == y.k_fmt && (x.k_chan != NULL) == (i < 2));
            assert_memory_equal(x.k, y.k, x.n * x.k_stride);
            assert_memory_equal(x.v, y.v, x.n * x.v_stride);
            if (x.k_chan)
                assert_memory_equal(x.k_chan, y.k_chan, 2 * HD * sizeof *x.k_chan);
        }
    KvStats st;
    kv_stats(d, &st);
    assert_int_equal(st.chan_groups, 2);
    assert_int_equal(st.page_rows, 0); /* not paged */
    KvCell cells[24];
    kv_cells(d, 0, 0, cells, 24);
    for (size_t i = 0; i < 24; i++) {
        assert_int_equal(cells[i].state, i < 20 ? CELL_LOSSY : CELL_EMPTY);
        if (i < 20) {
            assert_int_equal(cells[i].k_fmt, i < 16 ? FMT_U4 : FMT_F16);
            assert_int_equal(cells[i].v_fmt, i < 16 ? FMT_Q4_0 : FMT_F16);
            assert_int_equal(cells[i].page_start, i % 8 == 0);
        }
    }
    kv_free(c);
    kv_free(d);
}

/* Every key of every group, decoded as attention decodes it (scale * code +
 * min), against the key appended. With s the channel's exact scale
 * (max - min) / (2^bits - 1) of the f16 keys and s16 its stored fp16 value,
 * the error is within s16 / 2 (codes chosen against s16), plus
 * (2^bits - 1) |s - s16| where the top code cannot reach the maximum, plus
 * the key's own f16 rounding (it waited in the residual), plus float
 * arithmetic. The minimum is an f16 key itself: stored exactly. Returns the
 * RMS error over the ordinary channels and sets *worst to the largest error
 * against the f16 key in half steps (s16 / 2); the values must be q4_0's
 * encoding of the f16 values, bit for bit. */
static double check_groups(const char *spec, unsigned bits, size_t G, size_t rows, double *worst)
{
    const size_t H = 2;
    const float top = (float)((1u << bits) - 1);
    KvCache *c = open_kivi(spec, 1, 1, H);
    append(c, 0, 0, rows);
    double sum2 = 0;
    size_t count = 0;
    *worst = 0;
    float codes[HD], chan_bound[HD], vq[HD];
    unsigned char vrow[64];
    for (size_t g = 0; g < rows / G; g++)
        for (size_t h = 0; h < H; h++) {
            KvBlock b;
            kv_block(c, 0, 0, h, g, &b);
            assert_true(b.k_chan && b.pos == g * G && b.n == G);
            for (size_t i = 0; i < HD; i++) {
                float lo = INFINITY, hi = -INFINITY;
                for (size_t r = 0; r < G; r++) {
                    float x = fp16_to_f32(fp16_from_f32(key_at(b.pos + r, h, i)));
                    lo = fminf(lo, x);
                    hi = fmaxf(hi, x);
                }
                const float s = (hi - lo) / top, s16 = fp16_to_f32(b.k_chan[i]);
                assert_true(fp16_to_f32(b.k_chan[HD + i]) == lo);
                if (i == 5) /* a constant channel: scale 0, every key exactly the minimum */
                    assert_true(s16 == 0.0f);
                chan_bound[i] = (float)(s16 / 2.0 + top * fabs((double)s - s16) + 1e-5 * s16); /* less f16 */
            }
            for (size_t r = 0; r < G; r++) {
                codec_ref[b.k_fmt].dequantize(codes, (const char *)b.k + r * b.k_stride, HD);
                for (size_t i = 0; i < HD; i++) {
                    const float key = codes[i] * fp16_to_f32(b.k_chan[i]) + fp16_to_f32(b.k_chan[HD + i]);
                    const double x = key_at(b.pos + r, h, i), err = fabs((double)key - x);
                    const double bound = chan_bound[i] + fabs(x - fp16_to_f32(fp16_from_f32((float)x))) + 1e-6 * fabs(x);
                    if (!(err <= bound))
                        fail_msg("%s: group %zu head %zu row %zu channel %zu: key %.9g decodes to %.9g (error %.3g "
                                 "> bound %.3g)", spec, g, h, r, i, x, key, err, bound);
                    assert_true(codes[i] <= top && codes[i] == floorf(codes[i]));
                    const double s16 = fp16_to_f32(b.k_chan[i]), x16 = fp16_to_f32(fp16_from_f32((float)x));
                    if (s16 > 0)
                        *worst = fmax(*worst, fabs((double)key - x16) / (s16 / 2));
                    if (i != 3 && i != 5) /* the outlier channel would swamp the others' mean */
                        sum2 += err * err, count++;
                }
                /* V: per token, q4_0 of the f16 value */
                for (size_t i = 0; i < HD; i++)
                    vq[i] = fp16_to_f32(fp16_from_f32(value_at(b.pos + r, h, i)));
                codec_ref[FMT_Q4_0].quantize(vrow, vq, HD);
                assert_memory_equal(vrow, (const char *)b.v + r * b.v_stride, format_row_bytes(FMT_Q4_0, HD));
            }
        }
    kv_free(c);
    return sqrt(sum2 / (double)count);
}

static void test_per_channel_error(void **state)
{
    (void)state;
    double w4, w2, w5;
    double e4 = check_groups("kivi:bits=4,group=16", 4, 16, 48, &w4);
    double e2 = check_groups("kivi:bits=2,group=16", 2, 16, 48, &w2);
    check_groups("kivi:bits=4,group=5", 4, 5, 23, &w5); /* a group of 5, a partial residual */
    printf("  RMS key error (channels other than the outlier): 4 bits %.4g, 2 bits %.4g\n", e4, e2);
    printf("  worst error against the f16 key, in half steps: %.4f, %.4f, %.4f\n", w4, w2, w5);
    assert_true(e4 > 0 && e2 > 3.0 * e4); /* a step 5x coarser */
}

/* The bytes held, counted by hand, for bits=2, group=16, v=q8_0, head_dim
 * 32, 2 KV heads, 2 layers, 40 rows per layer: per head and group the
 * scales and minimums 2 x 32 x 2 = 128 B, 16 u2 rows of 2 words = 128 B and
 * 16 q8_0 rows of 34 B = 544 B: 800 B. 40 rows = 2 groups + 8 f16 residual
 * rows of K and V, 8 x 2 x 64 = 1024 B. Per layer 2 x (1600 + 1024) =
 * 5248 B; two layers 10496 B. Reserved: the groups made plus the residual
 * of 16 rows, 16 x 2 x 64 = 2048 B per head: 2 x (1600 + 2048) x 2 = 14592. */
static void test_bytes(void **state)
{
    (void)state;
    KvCache *c = open_kivi("kivi:bits=2,group=16,v=q8_0", 2, 1, 2);
    assert_int_equal(kv_bytes_used(c), 0);
    assert_int_equal(kv_bytes_reserved(c), 0); /* nothing until a sequence starts */
    append(c, 0, 0, 15);
    assert_int_equal(kv_bytes_used(c), 2 * 15 * 2 * 64);
    assert_int_equal(kv_bytes_reserved(c), 2 * 2048); /* the residual only */
    append(c, 0, 0, 1);                                /* a group: memory grows by one group */
    assert_int_equal(kv_bytes_used(c), 2 * 800);
    assert_int_equal(kv_bytes_reserved(c), 2 * (2048 + 800));
    append(c, 0, 0, 24);
    append(c, 1, 0, 40);
    assert_int_equal(kv_bytes_used(c), 10496);
    assert_int_equal(kv_bytes_reserved(c), 14592);
    kv_reset(c); /* empty, memory kept and reused */
    assert_int_equal(kv_bytes_used(c), 0);
    assert_int_equal(kv_bytes_reserved(c), 14592);
    append(c, 0, 0, 40);
    append(c, 1, 0, 40);
    assert_int_equal(kv_bytes_used(c), 10496);
    assert_int_equal(kv_bytes_reserved(c), 14592);
    kv_drop(c, 0); /* memory given back */
    assert_int_equal(kv_bytes_reserved(c), 0);
    kv_free(c);
}

static void test_fork_and_drop(void **state)
{
    (void)state;
    KvCache *c = open_kivi("kivi:group=8,v=f16", 1, 2, 2);
    append(c, 0, 0, 20);
    Counters ctr = { 0 };
    Err e = { 0 };
    assert_int_equal(kv_fork(c, 0, 1, &ctr, &e), 0);
    assert_true(ctr.bytes_copied > 0);
    assert_int_equal(kv_length(c, 0, 1), 20);
    assert_int_equal(kv_n_blocks(c, 0, 1), 3);
    append(c, 0, 1, 5); /* the copy grows alone */
    assert_int_equal(kv_length(c, 0, 0), 20);
    assert_int_equal(kv_n_blocks(c, 0, 1), 4);
    for (size_t i = 0; i < 2; i++) {
        KvBlock a, b;
        kv_block(c, 0, 0, 1, i, &a);
        kv_block(c, 0, 1, 1, i, &b);
        assert_true(a.k != b.k); /* copies, not shared */
        assert_memory_equal(a.k, b.k, a.n * a.k_stride);
        assert_memory_equal(a.k_chan, b.k_chan, 2 * HD * sizeof *a.k_chan);
    }
    assert_int_equal(kv_fork(c, 0, 1, NULL, &e), -1); /* dst not empty */
    size_t before = kv_bytes_reserved(c);
    kv_drop(c, 1);
    assert_int_equal(kv_length(c, 0, 1), 0);
    assert_true(kv_bytes_reserved(c) < before);
    append(c, 0, 1, 3);
    assert_int_equal(kv_n_blocks(c, 0, 1), 1);
    kv_free(c);
}

/* Generation through the cache on every ISA this CPU runs, in every form:
 * naive, materialize (keys decoded to an f32 view first) and flash (scales
 * folded into the query) agree to 1e-4 relative on the logits (the orders of
 * the sums differ) and choose the same tokens. */
#define GEN_TOL 1e-4

static void test_generation_agrees(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.head_dim = 32, c.d_model = 64;
    Model m;
    test_model(&m, &c);
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    static const char *specs[] = { "kivi:bits=4,group=8", "kivi:bits=2,group=16,v=int4" };
    int prompt[40], out[8], want[8];
    test_tokens(prompt, 40, c.vocab, 8);
    float *lg = malloc(c.vocab * sizeof(float)), *ref = malloc(c.vocab * sizeof(float));
    for (size_t si = 0; si < 2; si++)
        for (size_t k = 0; k < n_isa; k++)
            for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
                Err e = { 0 };
                m.kern = isa[k];
                m.attend = (AttendAlgo)algo;
                KvGeometry geo = model_kv_geometry(&m, 1);
                KvCache *kc = kv_open(specs[si], &geo, &e);
                assert_non_null(kc);
                GenOptions go = { .n_generate = 8 };
                Generator *g;
                assert_int_equal(gen_init(&g, &m, kc, prompt, 1, 40, &go, &e), 0);
                StepReport r;
                while (gen_step(g, &r, &e) == 1)
                    memcpy(lg, r.logits, c.vocab * sizeof(float)); /* the last step's */
                size_t len;
                memcpy(out, gen_sequence(g, 0, &len) + 40, sizeof out);
                gen_free(g);
                kv_free(kc);
                if (k == 0 && algo == ATTEND_NAIVE) {
                    memcpy(ref, lg, c.vocab * sizeof(float));
                    memcpy(want, out, sizeof want);
                    continue;
                }
                if (max_rel_diff(lg, ref, c.vocab, GEN_TOL, specs[si]) > GEN_TOL || memcmp(out, want, sizeof out))
                    fail_msg("%s: %s %s differs from %s naive", specs[si], isa[k]->isa,
                             attend_algo_name((AttendAlgo)algo), isa[0]->isa);
            }
    printf("  %zu ISA(s) x 3 forms agree within %g\n", n_isa, GEN_TOL);
    free(lg);
    free(ref);
    model_free(&m);
}

static QualitySummary measure(const Model *m, const char *spec)
{
    int prompt[60];
    test_tokens(prompt, 60, m->cfg.vocab, 6);
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *c = kv_open(spec, &geo, &e);
    if (!c)
        fail_msg("%s: %s", spec, e.msg);
    GenOptions o = { .n_generate = 6 };
    QualitySummary s;
    if (quality_run(m, c, prompt, 60, &o, NULL, NULL, &s, &e) < 0)
        fail_msg("quality %s: %s", spec, e.msg);
    kv_free(c);
    printf("  %-24s attention error %.3g, mass kept >= %.4f, logit error %.3g\n", spec, s.max_attn_err,
           s.min_mass_kept, s.max_logit_err);
    return s;
}

/* Against the exact shadow: both widths lose something, 2 bits more, and
 * neither drops a position. */
static void test_quality(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.head_dim = 32, c.d_model = 64;
    Model m;
    test_model(&m, &c);
    m.attend = ATTEND_FLASH;
    QualitySummary k4 = measure(&m, "kivi:bits=4,group=16,v=f16");
    QualitySummary k2 = measure(&m, "kivi:bits=2,group=16,v=f16");
    assert_true(k4.max_attn_err > 0 && k2.max_attn_err > k4.max_attn_err);
    assert_true(k4.min_mass_kept > 1 - 1e-5 && k2.min_mass_kept > 1 - 1e-5);
    model_free(&m);
}

static void expect_refused(const char *spec, int k_only, const char *want)
{
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = HD, .max_seq_len = 64,
                     .k_only = k_only };
    Err e = { 0 };
    KvCache *c = kv_open(spec, &g, &e);
    if (c || e.kind != ERR_USAGE || !strstr(e.msg, want))
        fail_msg("%s: want a usage error with '%s', got '%s'", spec, want, c ? "(opened)" : e.msg);
}

static void test_bad_specs(void **state)
{
    (void)state;
    expect_refused("kivi:bits=3", 0, "bits=3; per-channel keys take bits=4 or bits=2");
    expect_refused("kivi:group=0", 0, "option group");
    expect_refused("kivi:v=u4", 0, "'u4' is a per-channel key code format");
    expect_refused("kivi:v=q3", 0, "unknown format 'q3'");
    expect_refused("kivi:hot=4", 0, "no option 'hot'");
    expect_refused("kivi+quant:k=q8_0", 0, "takes no '+quant'");
    expect_refused("kivi", 1, "cannot hold an MLA latent cache");
    expect_refused("contiguous+quant:k=u4", 0, "'u4' is a per-channel key code format");
    expect_refused("mixed:cold=u2", 0, "'u2' is a per-channel key code format");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_quantize_when_full),
        cmocka_unit_test(test_per_channel_error),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_fork_and_drop),
        cmocka_unit_test(test_generation_agrees),
        cmocka_unit_test(test_quality),
        cmocka_unit_test(test_bad_specs),
    };
    return cmocka_run_group_tests_name("kivi", tests, NULL, NULL);
}
