/* test_attend.c: decode and prefill attention over blocks, in every format,
 * form and ISA: naive, materialize and flash agree; every ISA agrees with
 * the reference; the cache bytes read are the stored bytes. */
#include "testutil.h"

/* The same data through different summation orders and exp approximations. */
#define ATTEND_TOL 2e-5

typedef struct {
    size_t hd, G, rows, n_blocks, window;
    Format k_fmt, v_fmt;
    unsigned char *k, *v; /* rows in the formats, block after block */
    KvBlock blocks[8];
    float q[8 * 4 * 128]; /* up to 8 query tokens x G 4... sized for the cases below */
    const AttnBias *bias; /* optional attention structure */
    int int_dot;          /* score q8_0/q4_0 keys by integer dots (AttnArgs.q8) */
    int int_values;       /* flash: add 4-bit values with integer weights (AttnArgs.iv) */
} Case;

static void fill(float *x, size_t n, unsigned salt)
{
    uint32_t s = 2463534242u ^ (salt * 2654435761u);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        x[i] = -1.5f + 3.0f * (float)(s >> 8) / (float)(1u << 24);
    }
}

/* Rows 0..rows-1 at positions 0..rows-1, split into n_blocks runs, encoded
 * by the reference codecs. */
static void make_case(Case *c, size_t hd, size_t G, size_t rows, size_t n_blocks, Format kf, Format vf)
{
    memset(c, 0, sizeof *c);
    c->hd = hd, c->G = G, c->rows = rows, c->n_blocks = n_blocks, c->k_fmt = kf, c->v_fmt = vf;
    size_t kr = format_row_bytes(kf, hd), vr = format_row_bytes(vf, hd);
    c->k = malloc(rows * kr);
    c->v = malloc(rows * vr);
    float *row = malloc(hd * sizeof(float));
    for (size_t r = 0; r < rows; r++) {
        fill(row, hd, (unsigned)(r * 2 + 1));
        codec_ref[kf].quantize(c->k + r * kr, row, hd);
        fill(row, hd, (unsigned)(r * 2 + 2));
        codec_ref[vf].quantize(c->v + r * vr, row, hd);
    }
    free(row);
    size_t start = 0;
    for (size_t b = 0; b < n_blocks; b++) {
        size_t n = rows / n_blocks + (b < rows % n_blocks);
        c->blocks[b] = (KvBlock){ .pos = start, .n = n, .k = c->k + start * kr, .v = c->v + start * vr,
                                  .k_stride = kr, .v_stride = vr, .k_fmt = kf, .v_fmt = vf };
        start += n;
    }
    fill(c->q, sizeof c->q / sizeof c->q[0], 99);
}

static void free_case(Case *c)
{
    free(c->k);
    free(c->v);
}

/* out [n_q][G][hd] for queries at positions pos0.. */
static void run(const Kernels *k, AttendAlgo algo, const Case *c, size_t n_q, size_t pos0, float *out,
                Counters *ctr)
{
    float *scores = malloc(c->G * (c->rows + ATTEND_TILE) * sizeof(float));
    float *view = malloc(2 * c->rows * c->hd * sizeof(float));
    float chan_q[4 * 128];
    unsigned char q8[4 * 136]; /* G 4 x a q8_0 row of 128 */
    void *iv = malloc(attend_iv_bytes(c->G, c->hd));
    KvBlock view_blocks[8];
    AttnArgs a = {
        .bias = c->bias, .chan_q = chan_q, .q8 = c->int_dot ? q8 : NULL, .iv = c->int_values ? iv : NULL,
        .q = c->q, .q_stride = c->G * c->hd, .out = out, .out_stride = c->G * c->hd,
        .n_q = n_q, .group = c->G, .head_dim = c->hd, .pos0 = pos0, .window = c->window,
        .blocks = c->blocks, .n_blocks = c->n_blocks, .scores = scores, .view = view, .view_blocks = view_blocks,
    };
    attend(k, algo, &a, ctr);
    free(scores);
    free(view);
    free(iv);
}

static void test_forms_and_isas_agree(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    static const size_t hds[] = { 32, 128 }, groups[] = { 1, 4 }, rowss[] = { 1, 63, 64, 65, 200, ATTEND_TILE + 1, 2 * ATTEND_TILE + 65 }; /* the last: 3 tiles */
    size_t checked = 0;
    for (int f = 0; f < FMT_COUNT; f++)
        for (size_t hi = 0; hi < 2; hi++)
            for (size_t gi = 0; gi < 2; gi++)
                for (size_t ri = 0; ri < sizeof rowss / sizeof rowss[0]; ri++) {
                    Case c;
                    size_t rows = rowss[ri];
                    /* the code formats hold keys only: their V stays f32 */
                    Format vf = format_is_per_channel((Format)f) ? FMT_F32 : (Format)f;
                    make_case(&c, hds[hi], groups[gi], rows, rows >= 3 ? 3 : 1, (Format)f, vf);
                    size_t n_out = c.G * c.hd;
                    float want[4 * 128], got[4 * 128];
                    run(isa[0], ATTEND_NAIVE, &c, 1, rows - 1, want, NULL); /* decode: the last position */
                    for (size_t k = 0; k < n_isa; k++)
                        for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
                            run(isa[k], (AttendAlgo)algo, &c, 1, rows - 1, got, NULL);
                            if (max_rel_diff(got, want, n_out, ATTEND_TOL, "out") > ATTEND_TOL)
                                fail_msg("%s %s %s hd=%zu G=%zu rows=%zu", isa[k]->isa,
                                         attend_algo_name((AttendAlgo)algo), format_name((Format)f), c.hd, c.G, rows);
                            checked++;
                        }
                    free_case(&c);
                }
    printf("  %zu (format, shape, ISA, form) cases agree with reference naive attention\n", checked);
}

/* Integer key scores (--int-dot): with the query rounded to q8_0, naive and
 * flash on every ISA give the f32 attention of that rounded query, to float
 * rounding: the integer dots are exact, only their scaling rounds. */
static void test_int_dot_scores(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    static const Format fmts[] = { FMT_Q8_0, FMT_Q4_0, FMT_INT4, FMT_FP4 };
    static const size_t groups[] = { 1, 4 }, rowss[] = { 65, 2 * ATTEND_TILE + 65 };
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++)
        for (size_t gi = 0; gi < 2; gi++)
            for (size_t ri = 0; ri < 2; ri++) {
                Case c;
                make_case(&c, 128, groups[gi], rowss[ri], 3, fmts[fi], FMT_Q8_0);
                float rounded_q[4 * 128], keep_q[4 * 128], want[4 * 128], got[4 * 128];
                unsigned char row[136];
                const size_t n_out = c.G * c.hd;
                memcpy(keep_q, c.q, sizeof keep_q);
                for (size_t g = 0; g < c.G; g++) { /* the query as the integer path sees it */
                    codec_ref[FMT_Q8_0].quantize(row, c.q + g * c.hd, c.hd);
                    codec_ref[FMT_Q8_0].dequantize(rounded_q + g * c.hd, row, c.hd);
                }
                memcpy(c.q, rounded_q, n_out * sizeof(float));
                run(isa[0], ATTEND_NAIVE, &c, 1, c.rows - 1, want, NULL);
                memcpy(c.q, keep_q, n_out * sizeof(float));
                c.int_dot = 1;
                static const AttendAlgo forms[] = { ATTEND_NAIVE, ATTEND_FLASH }; /* materialize decodes to f32 */
                for (size_t k = 0; k < n_isa; k++)
                    for (size_t a = 0; a < 2; a++) {
                        run(isa[k], forms[a], &c, 1, c.rows - 1, got, NULL);
                        if (max_rel_diff(got, want, n_out, ATTEND_TOL, "out") > ATTEND_TOL)
                            fail_msg("int dot: %s %s %s G=%zu rows=%zu", isa[k]->isa, attend_algo_name(forms[a]),
                                     format_name(c.k_fmt), c.G, c.rows);
                    }
                /* and it is a rounding: the f32 query's attention differs from it */
                c.int_dot = 0;
                run(isa[0], ATTEND_NAIVE, &c, 1, c.rows - 1, got, NULL);
                assert_true(memcmp(got, want, n_out * sizeof(float)) != 0);
                free_case(&c);
            }
}

/* A part's weights are rounded against its largest weight times the
 * largest value scale seen, so where one row dominates, each of the
 * others' weights carries up to 1/65534 of that: up to 2.5e-4 of the
 * output over 300 peaked rows here (int4), small beside the 4-bit
 * formats' own rounding of the values. */
#define INT_VALUES_TOL 1e-3

/* Integer value weights (AttnArgs.iv, flash): on every ISA within rounding
 * of 16-bit weights of the f32 weights' attention, bit for bit the same
 * however the rows are cut into blocks (the parts' integer sums are exact),
 * and for the formats flash adds so a rounding indeed (not the f32 path);
 * the f32 path for the others. */
static void test_int_values(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    static const Format fmts[] = { FMT_Q4_0, FMT_INT4, FMT_FP4, FMT_F16 };
    static const size_t hds[] = { 32, 128 }, groups[] = { 1, 3, 4 }, rowss[] = { 1, 65, 300, 2 * ATTEND_TILE + 65 };
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++)
        for (size_t hi = 0; hi < 2; hi++)
            for (size_t gi = 0; gi < 3; gi++)
                for (size_t ri = 0; ri < 4; ri++) {
                    Case one, cut;
                    const size_t rows = rowss[ri];
                    make_case(&one, hds[hi], groups[gi], rows, 1, FMT_F16, fmts[fi]);
                    make_case(&cut, hds[hi], groups[gi], rows, rows >= 7 ? 7 : 1, FMT_F16, fmts[fi]);
                    const size_t n_out = one.G * one.hd;
                    float want[4 * 128], got[4 * 128], got_cut[4 * 128];
                    run(isa[0], ATTEND_NAIVE, &one, 1, rows - 1, want, NULL);
                    one.int_values = cut.int_values = 1;
                    const int ints = iaxpy_takes(one.v_fmt);
                    for (size_t k = 0; k < n_isa; k++) {
                        run(isa[k], ATTEND_FLASH, &one, 1, rows - 1, got, NULL);
                        run(isa[k], ATTEND_FLASH, &cut, 1, rows - 1, got_cut, NULL);
                        if (max_rel_diff(got, want, n_out, INT_VALUES_TOL, "out") > INT_VALUES_TOL)
                            fail_msg("int values: %s %s hd=%zu G=%zu rows=%zu", isa[k]->isa,
                                     format_name(one.v_fmt), one.hd, one.G, rows);
                        if (memcmp(got, got_cut, n_out * sizeof(float)))
                            fail_msg("int values: %s %s hd=%zu G=%zu rows=%zu: 7 blocks differ from 1",
                                     isa[k]->isa, format_name(one.v_fmt), one.hd, one.G, rows);
                    }
                    one.int_values = 0;
                    run(isa[n_isa - 1], ATTEND_FLASH, &one, 1, rows - 1, want, NULL);
                    if (rows > 1 && (memcmp(got, want, n_out * sizeof(float)) != 0) != (ints && isa[n_isa - 1]->iaxpy)) /* one row: w = 1, exact */
                        fail_msg("int values: %s hd=%zu G=%zu rows=%zu: %s the f32 weights' result", format_name(one.v_fmt),
                                 one.hd, one.G, rows, ints ? "the same as" : "not");
                    free_case(&one);
                    free_case(&cut);
                }
}

/* Integer value weights where the values' scales grow along the rows, so
 * that part after part holds a scale larger than any before it and flash
 * must add its rows again against the raised bound: still within rounding
 * of the f32 weights, on every ISA, for every format it takes. */
static void test_int_values_growing_scales(void **state)
{
    (void)state;
    const Kernels *isa[4];
    const size_t n_isa = kernels_available(isa, 4), rows = 5 * ATTEND_IV_ROWS + 37, hd = 128;
    static const Format fmts[] = { FMT_Q4_0, FMT_INT4, FMT_FP4 };
    for (size_t fi = 0; fi < 3; fi++)
        for (size_t G = 1; G <= 3; G += 2) {
            Case c;
            make_case(&c, hd, G, rows, 3, FMT_F16, fmts[fi]);
            const size_t vr = format_row_bytes(fmts[fi], hd), n_out = G * hd;
            float row[128], want[3 * 128], got[3 * 128];
            for (size_t r = 0; r < rows; r++) { /* twice the scale every part */
                fill(row, hd, (unsigned)(r * 2 + 2));
                for (size_t i = 0; i < hd; i++)
                    row[i] *= exp2f((float)r / (float)ATTEND_IV_ROWS);
                codec_ref[fmts[fi]].quantize(c.v + r * vr, row, hd);
            }
            run(isa[0], ATTEND_NAIVE, &c, 1, rows - 1, want, NULL);
            c.int_values = 1;
            for (size_t k = 0; k < n_isa; k++) {
                run(isa[k], ATTEND_FLASH, &c, 1, rows - 1, got, NULL);
                if (max_rel_diff(got, want, n_out, INT_VALUES_TOL, "out") > INT_VALUES_TOL)
                    fail_msg("int values, growing scales: %s %s G=%zu", isa[k]->isa, format_name(fmts[fi]), G);
            }
            free_case(&c);
        }
}

/* Prefill: n_q queries, each causal; a window limits them further. */
static void test_prefill_causal_and_window(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    for (size_t window = 0; window <= 5; window += 5) {
        Case c;
        make_case(&c, 32, 2, 70, 2, FMT_F32, FMT_F32);
        c.window = window;
        const size_t n_q = 8, pos0 = 62; /* the last 8 positions */
        float want[8 * 2 * 32], got[8 * 2 * 32], single[2 * 32];
        run(isa[0], ATTEND_NAIVE, &c, n_q, pos0, want, NULL);
        /* query t alone, against only the rows up to its position, gives the same answer */
        for (size_t t = 0; t < n_q; t++) {
            Case one = c;
            memcpy(one.q, c.q + t * 64, 64 * sizeof(float));
            run(isa[0], ATTEND_NAIVE, &one, 1, pos0 + t, single, NULL);
            assert_true(max_rel_diff(single, want + t * 64, 64, 1e-6, "causal") <= 1e-6);
        }
        for (size_t k = 0; k < n_isa; k++)
            for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
                run(isa[k], (AttendAlgo)algo, &c, n_q, pos0, got, NULL);
                if (max_rel_diff(got, want, sizeof want / sizeof want[0], ATTEND_TOL, "prefill") > ATTEND_TOL)
                    fail_msg("prefill %s %s window %zu", isa[k]->isa, attend_algo_name((AttendAlgo)algo), window);
            }
        free_case(&c);
    }
}

/* A decode step over a q4_0 cache reads 18 bytes per 32 values of K and V;
 * the materialized view adds its f32 write and read-back. */
static void test_bytes_read_q4_0(void **state)
{
    (void)state;
    const Kernels *k = kernels_select(NULL, NULL);
    Case c;
    const size_t hd = 128, rows = 100;
    make_case(&c, hd, 4, rows, 2, FMT_Q4_0, FMT_Q4_0);
    float out[4 * 128];
    for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
        Counters ctr = { 0 };
        run(k, (AttendAlgo)algo, &c, 1, rows - 1, out, &ctr);
        uint64_t elements = 2 * rows * hd; /* K and V */
        assert_int_equal(ctr.kv_bytes_read * 32, elements * 18);
        uint64_t view = algo == ATTEND_MATERIALIZE ? 2 * elements * sizeof(float) : 0; /* write + read back */
        assert_int_equal(ctr.view_bytes, view);
        assert_int_equal(ctr.flops_qk, 2 * 4 * rows * hd);
    }
    free_case(&c);
}

/* Attention structure: every form and ISA adds the same bias to the scaled
 * scores as a plain softmax written out here; a retrieval bias puts almost
 * all the weight on its needle. */
static void test_structure_bias(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    const size_t hd = 32, G = 2, rows = 150, heavy[] = { 40, 90 };
    const AttnBias bias = { .sink = 3.0f, .local = 0.02f, .heavy = 2.0f, .heavy_pos = heavy, .n_heavy = 2,
                            .retrieval = 12.0f, .needle = 7, .ask = rows - 1 };
    Case c;
    make_case(&c, hd, G, rows, 3, FMT_F32, FMT_F32);
    c.bias = &bias;
    const float *keys = (const float *)c.k, *vals = (const float *)c.v;
    float want[2 * 32] = { 0 }, w[150], needle_weight = 0;
    for (size_t g = 0; g < G; g++) {
        float mx = -INFINITY, sum = 0;
        for (size_t r = 0; r < rows; r++) {
            float dot = 0;
            for (size_t i = 0; i < hd; i++)
                dot += c.q[g * hd + i] * keys[r * hd + i];
            w[r] = dot / sqrtf((float)hd) + attn_bias_at(&bias, rows - 1, r);
            mx = fmaxf(mx, w[r]);
        }
        for (size_t r = 0; r < rows; r++)
            sum += w[r] = expf(w[r] - mx);
        for (size_t r = 0; r < rows; r++)
            for (size_t i = 0; i < hd; i++)
                want[g * hd + i] += w[r] / sum * vals[r * hd + i];
        needle_weight = fmaxf(needle_weight, w[bias.needle] / sum);
    }
    assert_true(needle_weight > 0.9f);
    float got[2 * 32];
    for (size_t k = 0; k < n_isa; k++)
        for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
            run(isa[k], (AttendAlgo)algo, &c, 1, rows - 1, got, NULL);
            if (max_rel_diff(got, want, G * hd, ATTEND_TOL, "bias") > ATTEND_TOL)
                fail_msg("bias: %s %s", isa[k]->isa, attend_algo_name((AttendAlgo)algo));
        }
    free_case(&c);
}

/* Per-channel keys (KIVI): codes with a scale and a minimum per channel per
 * block give what the keys they stand for give, in every form and ISA, and
 * the scales and minimums are counted among the bytes read. The codes are
 * stored as f32 values and in the code formats u4 and u2. */
static void check_per_channel_keys(Format code_fmt)
{
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    const size_t hd = 32, G = 4, rows = 96, n_blocks = 3, kr = format_row_bytes(code_fmt, hd);
    const size_t levels = code_fmt == FMT_U2 ? 4 : 16;
    Case codes, plain;
    make_case(&codes, hd, G, rows, n_blocks, code_fmt, FMT_F32);
    make_case(&plain, hd, G, rows, n_blocks, FMT_F32, FMT_F32);
    unsigned short chan[3][2 * 32];
    float code[32];
    for (size_t b = 0; b < n_blocks; b++) {
        KvBlock *blk = &codes.blocks[b];
        for (size_t i = 0; i < hd; i++) {
            chan[b][i] = fp16_from_f32(0.25f + 0.01f * (float)(i + b));      /* scale */
            chan[b][hd + i] = fp16_from_f32(-1.0f + 0.03f * (float)i);      /* minimum */
        }
        blk->k_chan = chan[b];
        float *key = (float *)plain.k + blk->pos * hd;
        for (size_t r = 0; r < blk->n; r++) {
            for (size_t i = 0; i < hd; i++) {
                code[i] = (float)((r * 7 + i * 3) % levels);
                key[r * hd + i] = code[i] * fp16_to_f32(chan[b][i]) + fp16_to_f32(chan[b][hd + i]);
            }
            codec_ref[code_fmt].quantize(codes.k + (blk->pos + r) * kr, code, hd);
        }
    }
    float want[4 * 32], got[4 * 32];
    run(isa[0], ATTEND_NAIVE, &plain, 1, rows - 1, want, NULL);
    for (size_t k = 0; k < n_isa; k++)
        for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
            Counters ctr = { 0 };
            run(isa[k], (AttendAlgo)algo, &codes, 1, rows - 1, got, &ctr);
            if (max_rel_diff(got, want, G * hd, ATTEND_TOL, "per-channel") > ATTEND_TOL)
                fail_msg("per-channel keys (%s codes): %s %s", format_name(code_fmt), isa[k]->isa,
                         attend_algo_name((AttendAlgo)algo));
            assert_int_equal(ctr.kv_bytes_read, rows * (kr + hd * sizeof(float)) + n_blocks * 2 * hd * 2);
        }
    free_case(&codes);
    free_case(&plain);
}

static void test_per_channel_keys(void **state)
{
    (void)state;
    check_per_channel_keys(FMT_F32);
    check_per_channel_keys(FMT_U4);
    check_per_channel_keys(FMT_U2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms_and_isas_agree),
        cmocka_unit_test(test_int_dot_scores),
        cmocka_unit_test(test_int_values),
        cmocka_unit_test(test_int_values_growing_scales),
        cmocka_unit_test(test_prefill_causal_and_window),
        cmocka_unit_test(test_bytes_read_q4_0),
        cmocka_unit_test(test_structure_bias),
        cmocka_unit_test(test_per_channel_keys),
    };
    return cmocka_run_group_tests_name("attend", tests, NULL, NULL);
}
