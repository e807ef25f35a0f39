/* test_qdot_isa.c: the integer dots (QDotFn) give the same bits on every
 * kernel table this CPU runs: each table's qdot against qdot_ref, bit for
 * bit, on seeded random rows and vectors (every format, odd block counts,
 * rows left over from the four streams, one head and GQA groups), and
 * qdot_ref against the order kernels.h states, summed here from the bytes.
 * And the activation's rounding to q8_0 (round_q8_0) the same bytes on
 * every table. */
#include "testutil.h"
#include "isa_random.h"

#include <math.h>
#include <string.h>

#include "kernels/codec.h"
#include "kernels/kernels.h"

enum { NMAX = 2080, GMAX = 9, ROWSMAX = 41 };

/* A finite f16 of either sign, magnitude about 2^-12 .. 2^3: random scales. */
static uint16_t rnd_half(void)
{
    const uint16_t sign = (uint16_t)((rnd() & 1u) << 15), exponent = (uint16_t)(3 + rnd() % 15);
    return (uint16_t)(sign | exponent << 10 | (rnd() & 0x3FFu));
}

/* n_rows random rows of fmt (codes as random bytes, random finite scales;
 * every tenth block of q8_0 / q4_0 all zero codes). */
static void random_rows(Format fmt, unsigned char *rows, size_t n_rows, size_t n)
{
    const size_t rb = format_row_bytes(fmt, n), bb = format_block_bytes(fmt);
    for (size_t r = 0; r < n_rows; r++) {
        unsigned char *row = rows + r * rb;
        for (size_t i = 0; i < rb; i++)
            row[i] = (unsigned char)rnd();
        if (fmt == FMT_INT4 || fmt == FMT_FP4) {
            const uint16_t h = rnd_half();
            memcpy(row + n / 2, &h, sizeof h);
            continue;
        }
        for (size_t b = 0; b < n / 32; b++) {
            const uint16_t h = rnd_half();
            memcpy(row + b * bb, &h, sizeof h);
            if (fmt == FMT_Q8_0)
                for (size_t j = 0; j < 32; j++) /* q8_0's codes stop at -127, as its quantizer makes them */
                    if (row[b * bb + 2 + j] == 0x80)
                        row[b * bb + 2 + j] = 0x81;
            if (rnd() % 10 == 0)
                memset(row + b * bb + 2, fmt == FMT_Q8_0 ? 0 : 0x88, bb - 2);
        }
    }
}

/* G vectors as q8_0 rows: codes -127 .. 127, positive scales (a quantizer's). */
static void random_x(unsigned char *xq, size_t G, size_t n)
{
    for (size_t b = 0; b < G * n / 32; b++) {
        unsigned char *blk = xq + b * 34;
        const uint16_t h = (uint16_t)(rnd_half() & 0x7FFFu);
        memcpy(blk, &h, sizeof h);
        for (size_t j = 0; j < 32; j++)
            blk[2 + j] = (unsigned char)(int8_t)((int)(rnd() % 255) - 127);
    }
}

static float half(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return fp16_to_f32(h);
}

/* Code j of block b of a stored row, and the block's scale d_w, read from
 * the bytes as the formats' headers lay them out (codec.h, block.h). */
static int code_at(Format fmt, const unsigned char *row, size_t n, size_t b, size_t j, float *dw)
{
    static const int fp4_twice[8] = { 0, 1, 2, 3, 4, 6, 8, 12 };
    if (fmt == FMT_Q8_0) {
        *dw = half(row + b * 34);
        return (int8_t)row[b * 34 + 2 + j];
    }
    if (fmt == FMT_Q4_0) {
        *dw = half(row + b * 18);
        const unsigned char byte = row[b * 18 + 2 + j % 16];
        return (j < 16 ? byte & 0x0F : byte >> 4) - 8;
    }
    const size_t i = b * 32 + j;
    const unsigned c = (row[i / 2] >> (4 * (i % 2))) & 0x0Fu;
    *dw = half(row + n / 2) * (fmt == FMT_FP4 ? 0.5f : 1.0f);
    return fmt == FMT_INT4 ? (int)(c ^ 8u) - 8 : (c & 8u ? -1 : 1) * fp4_twice[c & 7u];
}

/* The order kernels.h states: block b's integer sum times d_w * d_x fused
 * into lane b % 8, the lanes added in adjacent pairs. */
static float stated_order(Format fmt, const unsigned char *row, const unsigned char *x, size_t n)
{
    float lane[8] = { 0 };
    for (size_t b = 0; b < n / 32; b++) {
        float dw = 0.0f;
        int32_t isum = 0;
        for (size_t j = 0; j < 32; j++)
            isum += code_at(fmt, row, n, b, j, &dw) * (int8_t)x[b * 34 + 2 + j];
        const float s = dw * half(x + b * 34);
        lane[b % 8] = fmaf(s, (float)isum, lane[b % 8]);
    }
    const float a = lane[0] + lane[1], c = lane[2] + lane[3], e = lane[4] + lane[5], f = lane[6] + lane[7];
    const float ac = a + c, ef = e + f;
    return ac + ef;
}

static void test_tables_agree_bitwise(void **state)
{
    (void)state;
    static const Format formats[] = { FMT_Q8_0, FMT_Q4_0, FMT_INT4, FMT_FP4 };
    /* 1 .. 65 blocks; from 512 values, multiples of 128 (odd and even groups of four blocks) take the
     * VNNI table's matvec at G = 1 (qmatvec_vnni.c) */
    static const size_t lengths[] = { 32, 64, 96, 128, 160, 224, 256, 288, 416, 512, 1152, 2048, 2080 };
    static const size_t groups[] = { 1, 2, 3, 4, 5, 8, 9 };
    static const size_t row_counts[] = { 1, 3, 4, 17, 41 };
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8);
    const size_t ld = ROWSMAX + 3;
    unsigned char *rows = malloc(ROWSMAX * format_row_bytes(FMT_Q8_0, NMAX));
    unsigned char *xq = malloc(GMAX * format_row_bytes(FMT_Q8_0, NMAX));
    float *want = malloc(GMAX * ld * sizeof *want), *got = malloc(GMAX * ld * sizeof *got);
    assert_true(rows && xq && want && got);
    size_t compared = 0;
    rng_state = 20261129;
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++) {
                const Format fmt = formats[f];
                const size_t n = lengths[li], n_rows = row_counts[ri], rb = format_row_bytes(fmt, n);
                random_rows(fmt, rows, n_rows, n);
                random_x(xq, GMAX, n);
                for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
                    const size_t G = groups[gi];
                    qdot_ref(want, ld, fmt, rows, rb, n_rows, xq, G, n, NULL);
                    for (size_t g = 0; g < G; g++)
                        for (size_t r = 0; r < n_rows; r++) {
                            const float s = stated_order(fmt, rows + r * rb, xq + g * (n / 32) * 34, n);
                            if (!same_bits(want[g * ld + r], s))
                                fail_msg("qdot_ref %s n=%zu G=%zu head %zu row %zu: %.9g, the stated order %.9g",
                                         format_name(fmt), n, G, g, r, want[g * ld + r], s);
                        }
                    for (size_t t = 0; t < n_tables; t++) {
                        tables[t]->qdot(got, ld, fmt, rows, rb, n_rows, xq, G, n, NULL);
                        for (size_t g = 0; g < G; g++)
                            for (size_t r = 0; r < n_rows; r++, compared++)
                                if (!same_bits(got[g * ld + r], want[g * ld + r]))
                                    fail_msg("%s qdot %s n=%zu rows=%zu G=%zu head %zu row %zu: %.9g, ref %.9g",
                                             tables[t]->isa, format_name(fmt), n, n_rows, G, g, r,
                                             got[g * ld + r], want[g * ld + r]);
                    }
                }
            }
    printf("  %zu results of %zu tables equal to qdot_ref bit for bit\n", compared, n_tables);
    free(rows);
    free(xq);
    free(want);
    free(got);
}

/* Each table's round_q8_0 (an activation's q8_0, ties to even) writes the
 * bytes of codec_quantize_q8_0_even: blocks of random values, of exact
 * ties (absmax 127 and 63.5, so x * 127 / absmax lands on k + 0.5), of
 * zeros, of denormals (127 / absmax overflows), with a NaN, past fp16's
 * range, and a last block short of 32. */
static void test_round_q8_0_bitwise(void **state)
{
    (void)state;
    enum { KINDS = 9, N = KINDS * 32 + 13 };
    float x[N];
    unsigned char want[N / 32 * 34 + 34], got[sizeof want];
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8);
    rng_state = 7;
    size_t compared = 0;
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < N; i++) {
            const size_t kind = i / 32 % KINDS;
            const float r = (float)(int)(rnd() % 255) - 127.0f; /* an integer in -127 .. 127 */
            switch (kind) {
            case 0: x[i] = ((float)rnd() / 4294967296.0f - 0.5f) * 8.0f; break;
            case 1: x[i] = i % 32 == 5 ? -127.0f : fminf(fmaxf(r, -126.0f), 126.0f) + 0.5f; break; /* ties */
            case 2: x[i] = i % 32 == 0 ? 63.5f : (fminf(fmaxf(r, -126.0f), 126.0f) + 0.5f) / 2.0f; break;
            case 3: x[i] = 0.0f; break;
            case 4: x[i] = (float)(rnd() % 7) * 1e-45f; break;
            case 5: x[i] = i % 32 == 9 ? NAN : r; break;
            case 6: x[i] = r * 1e9f; break;
            case 7: x[i] = -r * 1e-3f; break;
            default: x[i] = ((float)rnd() / 4294967296.0f - 0.5f) * 1e-20f; break;
            }
        }
        for (size_t n = 32; n <= N; n += n < N - 13 ? 32 : 13) {
            codec_quantize_q8_0_even(want, x, n);
            for (size_t t = 0; t < n_tables; t++, compared++) {
                memset(got, 0xAB, sizeof got);
                tables[t]->round_q8_0(got, x, n);
                if (memcmp(got, want, format_row_bytes(FMT_Q8_0, n)) != 0)
                    fail_msg("%s round_q8_0, n=%zu, round %d: bytes differ from codec_quantize_q8_0_even",
                             tables[t]->isa, n, round);
            }
        }
    }
    printf("  %zu roundings of %zu tables equal to codec_quantize_q8_0_even byte for byte\n", compared, n_tables);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_agree_bitwise),
        cmocka_unit_test(test_round_q8_0_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
