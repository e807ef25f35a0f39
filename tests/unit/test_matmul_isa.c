/* test_matmul_isa.c: the f32 matmul (a prefill's products, and every step's
 * for a matrix kept in f32) gives the same bits on every kernel table this
 * CPU runs: each table against the reference, bit for bit, on seeded
 * random inputs of odd shapes (lengths below, at and past a multiple of 8
 * and 16, rows and tokens not multiples of the kernels' blocks). And the
 * reference against the order lanes16.h states, summed here from the
 * statement: 16 lanes, term i fused into lane i % 16, the last chunk
 * padded with zeros, the lanes added as a tree. */
#include "testutil.h"
#include "isa_random.h"

#include <string.h>

#include "kernels/kernels.h"

/* w . x as the statement reads: chunks of 16 terms (the last padded with
 * zero terms), term j of a chunk fused into lane j; then lane i and i + 8,
 * i and i + 4, i and i + 2, and the last two. */
static float stated_dot(const float *w, const float *x, size_t in)
{
    float lane[16] = { 0 };
    for (size_t c = 0; c < in; c += 16)
        for (size_t j = 0; j < 16; j++) {
            const int real = c + j < in;
            lane[j] = fmaf(real ? w[c + j] : 0.0f, real ? x[c + j] : 0.0f, lane[j]);
        }
    float t8[8];
    for (int i = 0; i < 8; i++)
        t8[i] = lane[i] + lane[i + 8];
    const float t0 = t8[0] + t8[4], t1 = t8[1] + t8[5], t2 = t8[2] + t8[6], t3 = t8[3] + t8[7];
    return (t0 + t2) + (t1 + t3);
}

static const size_t ins[] = { 1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 33, 48, 64, 100, 127, 128, 129, 172, 257, 1090 };
static const size_t outs[] = { 1, 3, 4, 5, 7, 8, 9, 12, 13, 17, 70 };
static const size_t tokens[] = { 1, 2, 5, 9 };
#define COUNT(a) (sizeof a / sizeof a[0])
enum { INMAX = 1090, OUTMAX = 70, NMAX = 9 };

static void test_matmul_bitwise(void **state)
{
    (void)state;
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8);
    assert_string_equal(tables[0]->isa, "ref");
    float *x = malloc(NMAX * INMAX * sizeof *x), *w = malloc(OUTMAX * INMAX * sizeof *w);
    float *want = malloc(NMAX * OUTMAX * sizeof *want), *got = malloc(NMAX * OUTMAX * sizeof *got);
    assert_true(x && w && want && got);
    size_t compared = 0, stated = 0;
    rng_state = 4820261129u;
    for (size_t ii = 0; ii < COUNT(ins); ii++)
        for (size_t oi = 0; oi < COUNT(outs); oi++)
            for (size_t ti = 0; ti < COUNT(tokens); ti++) {
                const size_t in = ins[ii], out = outs[oi], n = tokens[ti];
                /* magnitudes that differ by 40x, so another order rounds otherwise */
                for (size_t i = 0; i < n * in; i++)
                    x[i] = rnd_in(-3.0f, 3.0f) * (i % 5 == 0 ? 40.0f : 1.0f);
                for (size_t i = 0; i < out * in; i++)
                    w[i] = rnd_in(-1.0f, 1.0f) * (i % 7 == 2 ? 40.0f : 1.0f);
                uint64_t f_ref = 0;
                Counters c_ref = { 0 };
                tables[0]->matmul(want, x, w, n, in, out, &f_ref, &c_ref);
                for (size_t r = 0; r < n; r++)
                    for (size_t o = 0; o < out; o++, stated++) {
                        const float s = stated_dot(w + o * in, x + r * in, in);
                        if (!same_bits(want[r * out + o], s))
                            fail_msg("matmul_ref n=%zu in=%zu out=%zu y[%zu][%zu]: %.9g, the stated order %.9g", n,
                                     in, out, r, o, want[r * out + o], s);
                    }
                for (size_t t = 1; t < n_tables; t++, compared++) {
                    uint64_t f = 0;
                    Counters c = { 0 };
                    memset(got, 0xff, n * out * sizeof *got); /* NaNs: an output left unwritten shows */
                    tables[t]->matmul(got, x, w, n, in, out, &f, &c);
                    for (size_t i = 0; i < n * out; i++)
                        if (!same_bits(got[i], want[i]))
                            fail_msg("matmul %s n=%zu in=%zu out=%zu y[%zu][%zu]: %.9g, ref %.9g", tables[t]->isa, n,
                                     in, out, i / out, i % out, got[i], want[i]);
                    assert_int_equal(f, f_ref);
                    assert_int_equal(c.weight_bytes_read, c_ref.weight_bytes_read);
                }
            }
    printf("  %zu outputs of matmul_ref in the stated order; %zu matmul calls of %zu tables equal to it bit for bit "
           "(tables this CPU runs:",
           stated, compared, n_tables);
    for (size_t t = 0; t < n_tables; t++)
        printf(" %s", tables[t]->isa);
    printf("; the others skipped)\n");
    free(x);
    free(w);
    free(want);
    free(got);
}

/* Signed zeros: 18 products that each round to -0 leave lanes 2-15 at -0
 * after the first chunk; the second chunk's padding adds +0 to them (a
 * masked lane's 0 * 0), so the sum is +0, where adding nothing would
 * leave every lane -0 and the sum -0. Every table agrees. */
static void test_matmul_signed_zero(void **state)
{
    (void)state;
    enum { IN = 18 };
    float w[IN], x[IN];
    for (size_t i = 0; i < IN; i++)
        w[i] = -1e-30f, x[i] = 1e-30f;
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8);
    assert_true(same_bits(stated_dot(w, x, IN), 0.0f));
    for (size_t t = 0; t < n_tables; t++) {
        float y = 1.0f;
        tables[t]->matmul(&y, x, w, 1, IN, 1, NULL, NULL);
        if (!same_bits(y, 0.0f))
            fail_msg("matmul %s: %g (sign bit %d), want +0", tables[t]->isa, y, signbit(y) != 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_bitwise),
        cmocka_unit_test(test_matmul_signed_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
