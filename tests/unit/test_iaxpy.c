/* test_iaxpy.c: 4-bit value rows added with integer weights (IAxpyFn) on
 * every ISA equal the exact sums of the weights times the codes, the codes
 * taken from the codec's own decoding (value / scale), whatever the heads,
 * rows, row length, and however the rows are cut into calls. */
#include "testutil.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

enum { QK = 32, MAXN = 352, MAXG = 5, MAXROWS = 1024 };

static const Format formats[] = { FMT_Q4_0, FMT_INT4, FMT_FP4 };

/* The scale that multiplies value i's integer code: q4_0 its block's; int4
 * the row's; fp4 half the row's (its codes are the E2M1 values doubled). */
static float code_scale(Format fmt, const unsigned char *row, size_t n, size_t i)
{
    uint16_t h;
    if (fmt == FMT_Q4_0)
        memcpy(&h, row + (i / QK) * format_block_bytes(fmt), sizeof h);
    else
        memcpy(&h, row + n / 2, sizeof h);
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

static void check(Format fmt, size_t n_rows, size_t n, size_t G, int16_t w_lo, int16_t w_hi)
{
    const size_t rb = format_row_bytes(fmt, n), wpr = iaxpy_weights_per_row(fmt, n), ldw = n_rows * wpr + 3;
    unsigned char *rows = malloc(n_rows * rb);
    int *codes = malloc(n_rows * n * sizeof *codes);
    int16_t *wq = malloc(G * ldw * sizeof *wq);
    int32_t *start = malloc(G * n * sizeof *start), *got = malloc(G * n * sizeof *got);
    int64_t *want = malloc(G * n * sizeof *want);
    assert_true(rows && codes && wq && start && got && want);
    make_rows(fmt, rows, codes, n_rows, n, (unsigned)(n_rows + G));
    for (size_t k = 0; k < G * ldw; k++) /* spread over [w_lo, w_hi], both ends included */
        wq[k] = (int16_t)(w_lo + (int32_t)((k * 7919u) % ((uint32_t)(w_hi - w_lo) + 1u)));
    for (size_t g = 0; g < G; g++)
        for (size_t i = 0; i < n; i++) {
            start[g * n + i] = (int32_t)((g * 131 + i * 17) % 1001) - 500;
            int64_t sum = start[g * n + i];
            for (size_t r = 0; r < n_rows; r++)
                sum += (int64_t)wq[g * ldw + r * wpr + (wpr > 1 ? i / QK : 0)] * codes[r * n + i];
            want[g * n + i] = sum;
        }
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8);
    const size_t cuts[] = { 0, 1, 2, 7 }; /* the rows in one call, or cut after these many */
    for (size_t t = 0; t < n_tables; t++)
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            const size_t cut = cuts[c] < n_rows ? cuts[c] : 0;
            memcpy(got, start, G * n * sizeof *got);
            if (cut)
                tables[t]->ivals.axpy(got, wq, ldw, fmt, rows, rb, cut, G, n);
            tables[t]->ivals.axpy(got, wq + cut * wpr, ldw, fmt, rows + cut * rb, rb, n_rows - cut, G, n);
            for (size_t k = 0; k < G * n; k++)
                if (got[k] != want[k])
                    fail_msg("%s iaxpy %s rows %zu (cut at %zu) n %zu G %zu: head %zu value %zu is %ld, not %lld",
                             tables[t]->isa, format_name(fmt), n_rows, cut, n, G, k / n, k % n, (long)got[k],
                             (long long)want[k]);
        }
    free(rows), free(codes), free(wq), free(start), free(got), free(want);
}

static void test_shapes(void **state)
{
    (void)state;
    const size_t row_counts[] = { 1, 2, 37 }, lengths[] = { 32, 96, 128, 352 }, groups[] = { 1, 2, 3, 5 };
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
        for (size_t a = 0; a < 3; a++)
            for (size_t b = 0; b < 4; b++)
                for (size_t c = 0; c < 4; c++)
                    check(formats[f], row_counts[a], lengths[b], groups[c], -32768, 32767);
}

/* A whole tile of the largest weights, of either sign: the sums the
 * contract allows, with room to spare, come out exact. */
static void test_largest_weights(void **state)
{
    (void)state;
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        check(formats[f], MAXROWS, 128, 1, 32767, 32767);
        check(formats[f], MAXROWS, 128, 2, -32768, -32768);
    }
}

/* The weights before rounding and their largest magnitude, and the
 * rounding, agree bit for bit on every ISA with the reference, which takes
 * the scales from the codes' own decoder (qdot_ref's). */
static void test_scale_and_round(void **state)
{
    (void)state;
    enum { ROWS = 37, G = 3, LD = ROWS + 5 };
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8), lengths[] = { 32, 128, 352 };
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
        for (size_t l = 0; l < 3; l++) {
            const Format fmt = formats[f];
            const size_t n = lengths[l], rb = format_row_bytes(fmt, n), ldu = ROWS * (n / QK) + 1;
            unsigned char *rows = malloc(ROWS * rb);
            int *codes = malloc(ROWS * n * sizeof *codes);
            float p[G * LD], want[G * ldu], got[G * ldu], want_max[G], got_max[G];
            assert_true(rows && codes);
            make_rows(fmt, rows, codes, ROWS, n, 3);
            for (size_t i = 0; i < G * LD; i++)
                p[i] = expf(-0.05f * (float)i) * (i % 3 ? 1.0f : -1.0f);
            memset(want, 0, sizeof want);
            for (size_t g = 0; g < G; g++)
                want_max[g] = g == 1 ? 1e9f : 0.0f; /* raised, not reset */
            iscale_ref(want, ldu, want_max, p, LD, G, fmt, rows, rb, ROWS, n);
            const size_t count = ROWS * iaxpy_weights_per_row(fmt, n);
            for (size_t t = 0; t < n_tables; t++) {
                memset(got, 0, sizeof got);
                for (size_t g = 0; g < G; g++)
                    got_max[g] = g == 1 ? 1e9f : 0.0f;
                tables[t]->ivals.scale(got, ldu, got_max, p, LD, G, fmt, rows, rb, ROWS, n);
                for (size_t g = 0; g < G; g++) {
                    assert_memory_equal(got + g * ldu, want + g * ldu, count * sizeof(float));
                    assert_true(got_max[g] == want_max[g] && want_max[g] > 0.0f && (g != 1 || want_max[g] == 1e9f));
                    int16_t wq[G * ldu], wr[G * ldu];
                    const float k = 32767.0f / want_max[g];
                    iround_ref(wr, want + g * ldu, k, count);
                    tables[t]->ivals.round(wq, want + g * ldu, k, count);
                    assert_memory_equal(wq, wr, count * sizeof *wq);
                    for (size_t i = 0; i < count; i++)
                        assert_true(fabsf((float)wr[i] - want[g * ldu + i] * k) <= 0.5f);
                }
            }
            free(rows), free(codes);
        }
    int16_t w[4];
    const float ties[4] = { 0.5f, 1.5f, -2.5f, 32766.5f };
    for (size_t t = 0; t < n_tables; t++) { /* ties to even */
        tables[t]->ivals.round(w, ties, 1.0f, 4);
        assert_true(w[0] == 0 && w[1] == 2 && w[2] == -2 && w[3] == 32766);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_largest_weights),
        cmocka_unit_test(test_scale_and_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
