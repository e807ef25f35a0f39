/* test_iaxpy.c: 4-bit value rows added with integer weights (IAxpyFn) on
 * every ISA equal the exact sums of the rounded weights times the codes,
 * the codes taken from the codec's own decoding (value / scale) and the
 * weights rounded here by the documented rule, whatever the heads, rows,
 * row length, and however the rows are cut into calls; the largest scale
 * is reported; clamped weights stay exact; ties round to even; a factor of
 * 0 adds nothing. */
#include "testutil.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

enum { QK = 32, MAXN = 352, MAXG = 6, MAXROWS = 1024 };

static const Format formats[] = { FMT_Q4_0, FMT_INT4, FMT_FP4 };

/* Where the f16 scale of value i's block lies: q4_0 its block's, int4 and
 * fp4 the row's, after the nibbles. */
static size_t scale_offset(Format fmt, size_t n, size_t i)
{
    return fmt == FMT_Q4_0 ? (i / QK) * format_block_bytes(fmt) : n / 2;
}

/* The scale that multiplies value i's integer code: fp4's halved (its
 * codes are the E2M1 values doubled). */
static float code_scale(Format fmt, const unsigned char *row, size_t n, size_t i)
{
    uint16_t h;
    memcpy(&h, row + scale_offset(fmt, n, i), sizeof h);
    return fp16_to_f32(h) * (fmt == FMT_FP4 ? 0.5f : 1.0f);
}

/* rows: n_rows seeded rows of n values in fmt; codes: their integer codes,
 * from the codec's decoding (exact: a code times a half is a float). */
static void make_rows(Format fmt, unsigned char *rows, int *codes, size_t n_rows, size_t n, unsigned seed)
{
    const size_t rb = format_row_bytes(fmt, n);
    float src[MAXN], val[MAXN];
    for (size_t r = 0; r < n_rows; r++) {
        for (size_t i = 0; i < n; i++)
            src[i] = sinf(0.7f * (float)(i + 1) * (float)(r + seed)) * (1.0f + (float)((r + i) % 5));
        codec_ref[fmt].quantize(rows + r * rb, src, n);
        codec_ref[fmt].dequantize(val, rows + r * rb, n);
        for (size_t i = 0; i < n; i++) {
            const float d = code_scale(fmt, rows + r * rb, n, i), c = val[i] / d;
            assert_true(d != 0.0f && c == rintf(c) && fabsf(c) <= 12.0f);
            codes[r * n + i] = (int)c;
        }
    }
}

/* The rule IAxpyFn documents, written out apart: p * d, times k, clamped to
 * +-32767, rounded to nearest with ties to even (the default mode); 0 for
 * a factor of 0. */
static long rounded_weight(float p, float d, float k)
{
    if (k == 0.0f)
        return 0;
    float x = p * d;
    x *= k;
    if (x > 32767.0f)
        x = 32767.0f;
    if (x < -32767.0f)
        x = -32767.0f;
    return lrintf(x);
}

/* The largest |scale| of the rows' blocks. */
static float largest_scale(Format fmt, const unsigned char *rows, size_t n_rows, size_t n)
{
    const size_t rb = format_row_bytes(fmt, n);
    float dmax = 0.0f;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t i = 0; i < n; i += QK)
            dmax = fmaxf(dmax, fabsf(code_scale(fmt, rows + r * rb, n, i)));
    return dmax;
}

/* Every ISA's sums and largest scale against the exact ones, with the
 * heads' factors to_int, the rows in one call and cut into two. */
static void check_rows(Format fmt, const unsigned char *rows, const int *codes, size_t n_rows, size_t n, size_t G,
                       const float *p, size_t ld, const float *to_int)
{
    const size_t rb = format_row_bytes(fmt, n);
    const float dmax = largest_scale(fmt, rows, n_rows, n);
    int32_t *start = malloc(G * n * sizeof *start), *got = malloc(G * n * sizeof *got);
    int64_t *want = malloc(G * n * sizeof *want);
    assert_true(start && got && want);
    for (size_t g = 0; g < G; g++)
        for (size_t i = 0; i < n; i++) {
            start[g * n + i] = (int32_t)((g * 131 + i * 17) % 1001) - 500;
            int64_t sum = start[g * n + i];
            for (size_t r = 0; r < n_rows; r++)
                sum += rounded_weight(p[g * ld + r], code_scale(fmt, rows + r * rb, n, i), to_int[g]) *
                       codes[r * n + i];
            want[g * n + i] = sum;
        }
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8);
    const size_t cuts[] = { 0, 1, 2, 7, 65 }; /* the rows in one call, or cut after these many */
    for (size_t t = 0; t < n_tables; t++) {
        if (!tables[t]->iaxpy)
            continue;
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            const size_t cut = cuts[c] < n_rows ? cuts[c] : 0;
            float got_max = c % 2 ? 0.0f : dmax / 2; /* raised, not reset */
            memcpy(got, start, G * n * sizeof *got);
            if (cut)
                tables[t]->iaxpy(got, &got_max, p, ld, to_int, fmt, rows, rb, cut, G, n);
            tables[t]->iaxpy(got, &got_max, p + cut, ld, to_int, fmt, rows + cut * rb, rb, n_rows - cut, G, n);
            if (got_max != dmax)
                fail_msg("%s iaxpy %s rows %zu n %zu: largest scale %g, not %g", tables[t]->isa, format_name(fmt),
                         n_rows, n, (double)got_max, (double)dmax);
            for (size_t k = 0; k < G * n; k++)
                if (got[k] != want[k])
                    fail_msg("%s iaxpy %s rows %zu (cut at %zu) n %zu G %zu: head %zu value %zu is %ld, not %lld",
                             tables[t]->isa, format_name(fmt), n_rows, cut, n, G, k / n, k % n, (long)got[k],
                             (long long)want[k]);
        }
    }
    free(start), free(got), free(want);
}

/* Seeded rows and weights of both signs, as softmax weights in (0, 1] and
 * beyond, for one shape; each head's factor k_scale times the largest
 * that leaves its weights unclamped. */
static void check(Format fmt, size_t n_rows, size_t n, size_t G, float k_scale)
{
    const size_t rb = format_row_bytes(fmt, n), ld = n_rows + 3;
    unsigned char *rows = malloc(n_rows * rb);
    int *codes = malloc(n_rows * n * sizeof *codes);
    float *p = malloc(G * ld * sizeof *p), to_int[MAXG];
    assert_true(rows && codes && p);
    make_rows(fmt, rows, codes, n_rows, n, (unsigned)(n_rows + G));
    for (size_t k = 0; k < G * ld; k++)
        p[k] = expf(-0.01f * (float)((k * 7919u) % 997)) * (k % 5 ? 1.0f : -3.0f);
    const float dmax = largest_scale(fmt, rows, n_rows, n);
    for (size_t g = 0; g < G; g++) {
        float pmax = 0.0f;
        for (size_t r = 0; r < n_rows; r++)
            pmax = fmaxf(pmax, fabsf(p[g * ld + r]));
        to_int[g] = k_scale * 32767.0f / (pmax * dmax);
    }
    check_rows(fmt, rows, codes, n_rows, n, G, p, ld, to_int);
    free(rows), free(codes), free(p);
}

static void test_shapes(void **state)
{
    (void)state;
    /* rows: odd and even, within a chunk of the SIMD kernel and over it;
     * lengths: q4_0 rows of 1, 2, 3, 4, 8 and 11 blocks */
    const size_t row_counts[] = { 1, 2, 37, 130 }, lengths[] = { 32, 64, 96, 128, 256, 352 }, groups[] = { 1, 2, 3, 4, 5, 6 };
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
        for (size_t a = 0; a < 4; a++)
            for (size_t b = 0; b < 6; b++)
                for (size_t c = 0; c < 4; c++)
                    check(formats[f], row_counts[a], lengths[b], groups[c], 1.0f);
}

/* Factors far too large for the scales: every weight clamps to +-32767,
 * and a tile of such rows still sums exactly (the contract's bound, with
 * room to spare). */
static void test_clamped_weights(void **state)
{
    (void)state;
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        check(formats[f], 37, 128, 3, 1000.0f);
        check(formats[f], MAXROWS, 128, 2, 1e30f);
    }
}

/* Rows whose scales are set to 1 (fp4: its codes' 0.5), weights on
 * halves: each rounds to the even neighbour, on every ISA. */
static void test_ties_to_even(void **state)
{
    (void)state;
    enum { ROWS = 9, N = 128 };
    static const float halves[ROWS] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 32766.5f, 3.5f, 4.5f };
    static const long even[ROWS] = { 0, 2, 2, 0, -2, -2, 32766, 4, 4 };
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        const Format fmt = formats[f];
        const size_t rb = format_row_bytes(fmt, N);
        unsigned char rows[ROWS * 72];
        int codes[ROWS * N];
        assert_true(rb <= 72);
        make_rows(fmt, rows, codes, ROWS, N, 5);
        const uint16_t one = 0x3C00; /* 1.0 in f16 */
        for (size_t r = 0; r < ROWS; r++)
            for (size_t i = 0; i < N; i += QK)
                memcpy(rows + r * rb + scale_offset(fmt, N, i), &one, sizeof one);
        const float k = fmt == FMT_FP4 ? 2.0f : 1.0f; /* k * d = 1 */
        for (size_t r = 0; r < ROWS; r++)
            assert_true(rounded_weight(halves[r], code_scale(fmt, rows + r * rb, N, 0), k) == even[r]);
        check_rows(fmt, rows, codes, ROWS, N, 1, halves, ROWS, &k);
    }
}

/* Heads whose factor is 0 add nothing, whatever the scales (an infinite
 * one here), and the largest scale is still reported; the other heads
 * are unchanged by them. */
static void test_zero_factors(void **state)
{
    (void)state;
    enum { ROWS = 37, N = 128, G = 3 };
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        const Format fmt = formats[f];
        const size_t rb = format_row_bytes(fmt, N);
        unsigned char rows[ROWS * 72];
        int codes[ROWS * N];
        float p[G * ROWS];
        assert_true(rb <= 72);
        make_rows(fmt, rows, codes, ROWS, N, 9);
        for (size_t k = 0; k < G * ROWS; k++)
            p[k] = 1.0f / (float)(k + 1);
        const float mixed[G] = { 0.0f, 32767.0f / largest_scale(fmt, rows, ROWS, N), 0.0f };
        check_rows(fmt, rows, codes, ROWS, N, G, p, ROWS, mixed);
        const uint16_t inf = 0x7C00; /* +inf in f16 */
        memcpy(rows + 5 * rb + scale_offset(fmt, N, 0), &inf, sizeof inf);
        const float none[G] = { 0.0f, 0.0f, 0.0f };
        check_rows(fmt, rows, codes, ROWS, N, G, p, ROWS, none);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_clamped_weights),
        cmocka_unit_test(test_ties_to_even),
        cmocka_unit_test(test_zero_factors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
