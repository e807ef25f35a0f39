/* test_lanes16_isa.c: the float kernels that sum (rmsnorm, exp_sum) or
 * round through the SIMD exp (swiglu) or fmaddsub (rope), and the f32 and
 * f16 codecs' dot and axpy, give the same bits on every kernel table this
 * CPU runs: each table against the reference, bit for bit, on seeded random
 * inputs of lengths that are and are not multiples of 8 and 16. And the
 * reference against the order lanes16.h and codec_dot_chains state,
 * summed here from the statement; exp_lanes against libm's expf. */
#include "testutil.h"
#include "isa_random.h"

#include <string.h>

#include "kernels/codec_isa.h"
#include "kernels/kernels.h"
#include "kernels/lanes16.h"

enum { DMAX = 1100, HMAX = 3, GMAX = 8, ROWSMAX = 70 };

static void expect_same(const float *got, const float *want, size_t n, const char *isa, const char *what, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (!same_bits(got[i], want[i]))
            fail_msg("%s %s (length %zu) [%zu]: %.9g, ref %.9g", isa, what, len, i, got[i], want[i]);
}

/* The 16-lane tree as lanes16.h states it, written out. */
static float stated_tree(const float *a)
{
    float t8[8];
    for (int i = 0; i < 8; i++)
        t8[i] = a[i] + a[i + 8];
    const float t0 = t8[0] + t8[4], t1 = t8[1] + t8[5], t2 = t8[2] + t8[6], t3 = t8[3] + t8[7];
    return (t0 + t2) + (t1 + t3);
}

static const size_t lengths[] = { 1, 2, 5, 7, 8, 9, 15, 16, 17, 24, 31, 33, 48, 64, 70, 100, 127, 128, 129, 200, 257, 1090 };
#define N_LENGTHS (sizeof lengths / sizeof lengths[0])

static void test_float_kernels_bitwise(void **state)
{
    (void)state;
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8);
    const Kernels *ref = tables[0];
    assert_string_equal(ref->isa, "ref");
    static float x[HMAX * DMAX], w[DMAX], want[HMAX * DMAX], got[HMAX * DMAX], up[DMAX];
    size_t compared = 0;
    rng_state = 20261129;
    for (size_t li = 0; li < N_LENGTHS; li++) {
        const size_t d = lengths[li];
        for (size_t i = 0; i < HMAX * d; i++)
            x[i] = rnd_in(-3.0f, 3.0f) * (i % 5 == 0 ? 40.0f : 1.0f);
        for (size_t i = 0; i < d; i++) {
            w[i] = rnd_in(0.5f, 1.5f);
            up[i] = rnd_in(-2.0f, 2.0f);
        }
        /* rmsnorm, and its sum of squares in the stated order */
        ref->rmsnorm(want, x, w, HMAX, d, 1e-5f, NULL);
        for (size_t r = 0; r < HMAX; r++) {
            float lane[16] = { 0 };
            for (size_t i = 0; i < d; i++)
                lane[i % 16] = fmaf(x[r * d + i], x[r * d + i], lane[i % 16]);
            const float inv = 1.0f / sqrtf(stated_tree(lane) / (float)d + 1e-5f);
            for (size_t i = 0; i < d; i++)
                if (!same_bits(want[r * d + i], x[r * d + i] * inv * w[i]))
                    fail_msg("rmsnorm_ref (length %zu) row %zu [%zu]: not the stated order", d, r, i);
        }
        for (size_t t = 1; t < n_tables; t++, compared++) {
            tables[t]->rmsnorm(got, x, w, HMAX, d, 1e-5f, NULL);
            expect_same(got, want, HMAX * d, tables[t]->isa, "rmsnorm", d);
        }
        /* exp_sum: scores below the max, some past exp's clamp, and the max itself */
        float s[DMAX];
        for (size_t i = 0; i < d; i++)
            s[i] = i % 11 == 3 ? -150.0f : rnd_in(-40.0f, 1.0f);
        const float max = 1.0f;
        memcpy(want, s, d * sizeof *s);
        const float sum_ref = ref->exp_sum(want, d, max);
        float lane[16] = { 0 };
        for (size_t i = 0; i < d; i++) {
            if (!same_bits(want[i], exp_lanes(s[i] - max)))
                fail_msg("exp_sum_ref (length %zu) [%zu]: not exp_lanes", d, i);
            lane[i % 16] += want[i];
        }
        if (!same_bits(sum_ref, stated_tree(lane)))
            fail_msg("exp_sum_ref (length %zu): %.9g, the stated order %.9g", d, sum_ref, stated_tree(lane));
        for (size_t t = 1; t < n_tables; t++, compared++) {
            memcpy(got, s, d * sizeof *s);
            const float sum = tables[t]->exp_sum(got, d, max);
            expect_same(got, want, d, tables[t]->isa, "exp_sum values", d);
            expect_same(&sum, &sum_ref, 1, tables[t]->isa, "exp_sum", d);
        }
        /* swiglu, gates past exp's range and both zeros included */
        for (size_t i = 0; i < d; i++)
            s[i] = i % 13 == 1 ? 120.0f : i % 13 == 2 ? -120.0f : i % 13 == 4 ? -0.0f : i % 13 == 5 ? 0.0f : rnd_in(-12.0f, 12.0f);
        ref->swiglu(want, s, up, d, NULL);
        for (size_t t = 1; t < n_tables; t++, compared++) {
            tables[t]->swiglu(got, s, up, d, NULL);
            expect_same(got, want, d, tables[t]->isa, "swiglu", d);
        }
        /* rope on head sizes of the even lengths, at three positions */
        if (d % 2 == 0) {
            static const size_t positions[] = { 0, 7, 5000 };
            for (size_t p = 0; p < 3; p++) {
                memcpy(want, x, HMAX * d * sizeof *x);
                ref->rope(want, HMAX, d, positions[p], 10000.0, NULL);
                for (size_t t = 1; t < n_tables; t++, compared++) {
                    memcpy(got, x, HMAX * d * sizeof *x);
                    tables[t]->rope(got, HMAX, d, positions[p], 10000.0, NULL);
                    expect_same(got, want, HMAX * d, tables[t]->isa, "rope", d);
                }
            }
        }
    }
    printf("  %zu kernel calls of %zu tables equal to the reference bit for bit (tables this CPU runs:", compared,
           n_tables);
    for (size_t t = 0; t < n_tables; t++)
        printf(" %s", tables[t]->isa);
    printf("; the others skipped)\n");
}

/* exp_lanes is an exp: within 4 ulp of libm's (double-checked) over the
 * range, and exp(-87.3) below it and for NaN (as max_ps then min_ps give). */
static void test_exp_lanes(void **state)
{
    (void)state;
    double worst = 0.0;
    for (float v = -87.0f; v < 88.0f; v += 0.0137f) {
        const double want = exp((double)v), got = exp_lanes(v);
        const double ulp = (double)nextafterf((float)want, INFINITY) - (double)(float)want;
        const double err = fabs(got - want) / ulp;
        if (err > worst)
            worst = err;
    }
    printf("  exp_lanes: largest error %.2f ulp over [-87, 88]\n", worst);
    assert_true(worst <= 4.0);
    assert_true(same_bits(exp_lanes(-1000.0f), exp_lanes(-87.3f)));
    assert_true(same_bits(exp_lanes(NAN), exp_lanes(-87.3f)));
    assert_true(same_bits(exp_lanes(0.0f), 1.0f));
}

/* q . row in the order codec_dot_chains states: 16 lanes, `chains` chains
 * (chunk c in chain c % chains while whole groups last, else chain 0),
 * the chains added in turn, then the tree. */
static float stated_dot(const float *q, const float *v, size_t n, size_t G)
{
    const size_t chains = n == 128 && G > 1 && G != 4 ? 2 : 4;
    float acc[4][16] = { { 0 } };
    const size_t grouped = n / (16 * chains) * chains;
    for (size_t i = 0; i < n; i++) {
        const size_t c = i / 16;
        float *a = acc[c < grouped ? c % chains : 0];
        a[i % 16] = fmaf(q[i], v[i], a[i % 16]);
    }
    for (size_t k = 1; k < chains; k++)
        for (size_t l = 0; l < 16; l++)
            acc[0][l] += acc[k][l];
    return stated_tree(acc[0]);
}

static void test_codec_cheap_bitwise(void **state)
{
    (void)state;
    static const Format formats[] = { FMT_F32, FMT_F16 };
    static const size_t groups[] = { 1, 2, 3, 4, 5, 8 };
    static const size_t row_counts[] = { 1, 5, 17, 40, 70 };
    /* past 256, a weight matrix's rows: AVX-512 reads four streams' rows side by side (dot_block_streams4) */
    static const size_t codec_lengths[] = { 1, 7, 8, 15, 16, 17, 33, 64, 70, 100, 127, 128, 129, 200, 256, 300, 1090 };
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8);
    const size_t nmax = 1090, ld = ROWSMAX + 3;
    unsigned char *rows = malloc(ROWSMAX * format_row_bytes(FMT_F32, nmax));
    float *src = malloc(ROWSMAX * nmax * sizeof *src), *dec = malloc(ROWSMAX * nmax * sizeof *dec);
    float *q = malloc(GMAX * nmax * sizeof *q), *wt = malloc(GMAX * ld * sizeof *wt);
    float *want = malloc(GMAX * ld * sizeof *want), *got = malloc(GMAX * ld * sizeof *got);
    float *acc0 = malloc(GMAX * nmax * sizeof *acc0), *acc_want = malloc(GMAX * nmax * sizeof *acc_want),
          *acc_got = malloc(GMAX * nmax * sizeof *acc_got);
    assert_true(rows && src && dec && q && wt && want && got && acc0 && acc_want && acc_got);
    size_t compared = 0;
    rng_state = 48;
    for (size_t f = 0; f < 2; f++)
        for (size_t li = 0; li < sizeof codec_lengths / sizeof codec_lengths[0]; li++)
            for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++) {
                const Format fmt = formats[f];
                const size_t n = codec_lengths[li], n_rows = row_counts[ri], rb = format_row_bytes(fmt, n);
                const FormatOps *ops = &codec_ref[fmt];
                for (size_t r = 0; r < n_rows; r++) {
                    for (size_t i = 0; i < n; i++)
                        src[r * n + i] = rnd_in(-4.0f, 4.0f);
                    ops->quantize(rows + r * rb, src + r * n, n);
                    ops->dequantize(dec + r * n, rows + r * rb, n);
                }
                for (size_t i = 0; i < GMAX * n; i++) {
                    q[i] = rnd_in(-2.0f, 2.0f);
                    acc0[i] = rnd_in(-1.0f, 1.0f);
                }
                for (size_t i = 0; i < GMAX * ld; i++)
                    wt[i] = rnd_in(0.0f, 0.1f);
                for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
                    const size_t G = groups[gi];
                    ops->dot_rows(want, ld, q, G, rows, rb, n_rows, n, NULL);
                    for (size_t g = 0; g < G; g++)
                        for (size_t r = 0; r < n_rows; r++) {
                            const float s = stated_dot(q + g * n, dec + r * n, n, G);
                            if (!same_bits(want[g * ld + r], s))
                                fail_msg("codec_ref %s dot n=%zu G=%zu head %zu row %zu: %.9g, the stated order %.9g",
                                         format_name(fmt), n, G, g, r, want[g * ld + r], s);
                        }
                    memcpy(acc_want, acc0, G * n * sizeof *acc0);
                    ops->axpy_rows(acc_want, wt, ld, G, rows, rb, n_rows, n);
                    for (size_t t = 1; t < n_tables; t++) {
                        const FormatOps *o = &tables[t]->codec[fmt];
                        const char *isa = tables[t]->isa;
                        o->dot_rows(got, ld, q, G, rows, rb, n_rows, n, NULL);
                        for (size_t g = 0; g < G; g++, compared++)
                            expect_same(got + g * ld, want + g * ld, n_rows, isa, format_name(fmt), n);
                        const size_t r = n_rows - 1; /* the per-row form on the last row */
                        o->dot(got, q, G, rows + r * rb, n);
                        for (size_t g = 0; g < G; g++, compared++)
                            expect_same(got + g, want + g * ld + r, 1, isa, "dot (one row)", n);
                        memcpy(acc_got, acc0, G * n * sizeof *acc0);
                        o->axpy_rows(acc_got, wt, ld, G, rows, rb, n_rows, n);
                        expect_same(acc_got, acc_want, G * n, isa, "axpy_rows", n);
                        compared++;
                    }
                    /* the reference's axpy: w * v fused into the sum, row after row */
                    for (size_t g = 0; g < G; g++)
                        for (size_t i = 0; i < n; i++) {
                            float a = acc0[g * n + i];
                            for (size_t r = 0; r < n_rows; r++)
                                a = fmaf(wt[g * ld + r], dec[r * n + i], a);
                            if (!same_bits(a, acc_want[g * n + i]))
                                fail_msg("codec_ref %s axpy n=%zu G=%zu [%zu]: not fused row after row",
                                         format_name(fmt), n, G, g * n + i);
                        }
                }
            }
    printf("  %zu f32 / f16 codec results of %zu tables equal to codec_ref bit for bit\n", compared, n_tables);
    free(rows);
    free(src);
    free(dec);
    free(q);
    free(wt);
    free(want);
    free(got);
    free(acc0);
    free(acc_want);
    free(acc_got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_kernels_bitwise),
        cmocka_unit_test(test_exp_lanes),
        cmocka_unit_test(test_codec_cheap_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
