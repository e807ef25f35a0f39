/* q8_check.c: checks lessons/exercises/q8_block.c (lesson 9).
 *
 * The learner's q8_0_block must write the same 34 bytes as kvscope's
 * reference codec (codec_ref[FMT_Q8_0].quantize, llama.cpp's
 * quantize_row_q8_0_ref) on every test block: Gaussian values at several
 * scales, a block with one outlier, a negative maximum, exact halves, tiny
 * values, a block of zeros, and values halfway between two codes (0.5, 2.5,
 * -4.5 steps of the scale), which round away from zero, not to even. Its q4_0_block must write the same 18
 * bytes as codec_ref[FMT_Q4_0] (llama.cpp's quantize_row_q4_0_ref) on the
 * same blocks; a scale of the wrong sign and swapped nibbles are named.
 *
 * Then its fp4_code must give, for every value of a dozen fp4 rows, the
 * nibble kvscope's reference codec (codec_ref[FMT_FP4].quantize) stored,
 * given the row's scale as stored: Gaussian rows, and a row of scale 1 whose
 * values sit on E2M1's magnitudes and on every midpoint between two (0.25,
 * 0.75, ..., 5), where the Marlin design's round(value / scale) goes wrong. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "kernels/codec.h"
#include "q8_block.h"

/* A small deterministic generator (xorshift), Box-Muller for Gaussians. */
static unsigned long long rng_state = 88172645463325252ull;
static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}
static float gauss(void)
{
    return (float)(sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform()));
}

/* Check fp4_code on every value of N_ROWS rows of ROW values; 1 when any differ. */
static int check_fp4(void)
{
    enum { N_ROWS = 12, ROW = 32 };
    static const float mag[8] = { FP4_MAGNITUDES };
    /* on the magnitudes, and on each midpoint between two (s = 6 / 6 = 1) */
    static const float ties[ROW] = { 6,    5,    4,    3.5f,  3,     2.5f,  2,     1.75f, 1.5f,  1.25f, 1,
                                     0.75f, 0.5f, 0.25f, 0,     -0.1f, -5,    -2.5f, -0.25f, -6,   5.5f,  4.5f,
                                     2.75f, 1.1f, 0.6f, 0.3f,  0.2f,  -3.5f, -1.75f, -0.75f, 2.25f, 0.9f };
    unsigned char row[4 * ROW / 8 + 2];
    float x[ROW];
    Tally t = { 0, 0 };
    int seed_rule = 0, tie_rule = 0;
    printf("reference: kvscope's fp4 codec on %d rows of %d values (%zu bytes each)\n", N_ROWS, ROW, sizeof row);
    for (int r = 0; r < N_ROWS; r++) {
        for (int j = 0; j < ROW; j++) {
            float g = gauss();
            x[j] = r == 0 ? ties[j] : r == 1 ? 0.37f * ties[j] : r % 3 == 0 ? 0.01f * g : r % 3 == 1 ? g : 50.0f * g;
        }
        codec_ref[FMT_FP4].quantize(row, x, ROW);
        unsigned short h;
        memcpy(&h, row + 4 * codec_row_words(ROW), sizeof h);
        const float s = fp16_to_f32(h);
        if (s == 0.0f)
            continue;
        for (int j = 0; j < ROW; j++) {
            uint32_t w;
            memcpy(&w, row + 4 * (j / 8), sizeof w);
            const unsigned want = (w >> (4 * (j % 8))) & 0xfu, got = fp4_code(x[j], s);
            if (!tally(&t, got == want))
                continue;
            printf("row %d, x = %g (x / s = %g with s = %g): expected code 0x%x (%s%g), got 0x%x", r, x[j],
                   x[j] / s, s, want, want & 8u ? "-" : "+", mag[want & 7u], got);
            if (got < 16)
                printf(" (%s%g)", got & 8u ? "-" : "+", mag[got & 7u]);
            printf("\n");
            const float ax = fabsf(x[j] / s);
            int tie = 0;
            for (unsigned i = 1; i < 8; i++)
                tie |= ax == 0.5f * (mag[i - 1] + mag[i]);
            const unsigned wi = want & 7u, gi = got & 7u;
            if (tie && got < 16 && (want & 8u) == (got & 8u) && (wi + 1 == gi || gi + 1 == wi)) {
                if (!tie_rule++)
                    printf("  |x / s| = %g lies halfway between %g and %g: a tie goes to the even index (%g, "
                           "index %u), not to the %s magnitude\n", ax, mag[(want < got ? want : got) & 7u],
                           mag[(want < got ? got : want) & 7u], mag[want & 7u], want & 7u,
                           (got & 7u) < (want & 7u) ? "lower" : "higher");
                continue;
            }
            float a = roundf(ax);
            if ((got & 7u) == (unsigned)a && a != mag[got & 7u] && !seed_rule++)
                printf("  that is the Marlin design's round(value / scale) = %g used as a code: E2M1's index %g stands "
                       "for %g; take the nearest of the eight magnitudes instead\n",
                       a, a, mag[got & 7u]);
        }
    }
    return verdict(&t, "fp4 codes");
}

int main(void)
{
    enum { N_BLOCKS = 13 };
    static const char *const names[N_BLOCKS] = { "gaussian x1", "gaussian x0.01", "gaussian x100", "gaussian x3",
                                                 "one outlier", "negative max", "exact halves", "tiny values",
                                                 "zeros",       "ramp",         "gaussian x7", "all equal",
                                                 "halves of the scale" };
    /* max 127 makes d = 1 exactly: these values are k + 1/2 steps of d, where rounding half away from zero
     * (roundf, llama.cpp's) and half to even (rintf, nearbyintf) part: 0.5 -> 1 or 0, 2.5 -> 3 or 2 */
    static const float halves[8] = { 127.0f, 0.5f, 2.5f, -4.5f, -0.5f, 6.5f, -1.5f, 10.5f };
    float x[N_BLOCKS][QK8_0];
    for (int b = 0; b < N_BLOCKS; b++)
        for (int j = 0; j < QK8_0; j++) {
            float g = gauss();
            switch (b) {
            case 0: x[b][j] = g; break;
            case 1: x[b][j] = 0.01f * g; break;
            case 2: x[b][j] = 100.0f * g; break;
            case 3: x[b][j] = 3.0f * g; break;
            case 4: x[b][j] = j == 9 ? 40.0f : 0.1f * g; break;
            case 5: x[b][j] = j == 3 ? -5.0f : 0.5f * g; break;
            case 6: x[b][j] = (j - 16) * 0.5f; break; /* d = 8/127: halves of d appear */
            case 7: x[b][j] = 1e-4f * g; break;
            case 8: x[b][j] = 0.0f; break;
            case 9: x[b][j] = (float)j / 31.0f - 0.5f; break;
            case 10: x[b][j] = 7.0f * g; break;
            case 11: x[b][j] = 2.5f; break;
            default: x[b][j] = halves[j % 8] * (j < 8 ? 1.0f : j % 2 ? -1.0f : 1.0f); break;
            }
        }

    printf("reference: kvscope's q8_0 codec on %d blocks of %d values (%zu bytes each)\n", N_BLOCKS, QK8_0,
           sizeof(BlockQ8_0));
    Tally t = { 0, 0 };
    for (int b = 0; b < N_BLOCKS; b++) {
        BlockQ8_0 want, got;
        memset(&got, 0xAB, sizeof got);
        codec_ref[FMT_Q8_0].quantize(&want, x[b], QK8_0);
        q8_0_block(&got, x[b]);
        int ok = memcmp(&want, &got, sizeof want) == 0;
        if (tally(&t, ok)) {
            printf("block '%s': the bytes differ\n", names[b]);
            if (want.d != got.d)
                printf("  scale d: expected 0x%04x (%g), got 0x%04x (%g)\n", want.d, fp16_to_f32(want.d), got.d,
                       fp16_to_f32(got.d));
            int shown = 0, to_even = want.d == got.d;
            const float d = fp16_to_f32(want.d), id = d != 0.0f ? 1.0f / d : 0.0f;
            for (int j = 0; j < QK8_0; j++)
                if (want.qs[j] != got.qs[j]) {
                    const float v = x[b][j] * id;
                    to_even &= v - floorf(v) == 0.5f && got.qs[j] == (int8_t)rintf(v);
                    if (shown++ < 3)
                        printf("  qs[%d] for x = %g (x / d = %g): expected %d, got %d\n", j, x[b][j], v,
                               want.qs[j], got.qs[j]);
                }
            if (shown && to_even)
                printf("  halfway values rounded to even (rintf, nearbyintf, or the FPU's default): llama.cpp's "
                       "reference rounds half away from zero (roundf), so 0.5 -> 1 and -4.5 -> -5\n");
        }
    }
    const int q8_failed = verdict(&t, "q8_0 blocks");

    printf("reference: kvscope's q4_0 codec on the same %d blocks (%zu bytes each)\n", N_BLOCKS, sizeof(BlockQ4_0));
    Tally t4 = { 0, 0 };
    for (int b = 0; b < N_BLOCKS; b++) {
        BlockQ4_0 want, got;
        memset(&got, 0xAB, sizeof got);
        codec_ref[FMT_Q4_0].quantize(&want, x[b], QK4_0);
        q4_0_block(&got, x[b]);
        if (!tally(&t4, memcmp(&want, &got, sizeof want) == 0))
            continue;
        printf("block '%s': the bytes differ\n", names[b]);
        if (want.d != got.d) {
            printf("  scale d: expected 0x%04x (%g), got 0x%04x (%g)\n", want.d, fp16_to_f32(want.d), got.d,
                   fp16_to_f32(got.d));
            if ((want.d ^ got.d) == 0x8000u)
                printf("  the sign of d: d = max / -8, where max is the value of largest magnitude, signed\n");
        }
        int shown = 0, swapped = 1;
        for (int j = 0; j < QK4_0 / 2; j++) {
            unsigned w = want.qs[j], g = got.qs[j];
            if (w != g && ((w & 15u) << 4 | w >> 4) != g)
                swapped = 0;
            if (w != g && shown < 3) {
                printf("  qs[%d] for x[%d] = %g and x[%d] = %g: expected 0x%02x, got 0x%02x\n", j, j, x[b][j],
                       j + QK4_0 / 2, x[b][j + QK4_0 / 2], w, g);
                shown++;
            }
        }
        if (shown && swapped)
            printf("  the nibbles are swapped: value j goes in the low nibble of qs[j], value j + 16 in the high\n");
    }
    const int q4_failed = verdict(&t4, "q4_0 blocks");
    const int fp4_failed = check_fp4();
    return q8_failed || q4_failed || fp4_failed ? 1 : 0;
}
