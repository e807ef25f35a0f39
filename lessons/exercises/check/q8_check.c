/* q8_check.c: checks lessons/exercises/q8_block.c (lesson 7).
 *
 * The learner's q8_0_block must write the same 34 bytes as kvscope's
 * reference codec (codec_ref[FMT_Q8_0].quantize, llama.cpp's
 * quantize_row_q8_0_ref) on every test block: Gaussian values at several
 * scales, a block with one outlier, a negative maximum, exact halves, tiny
 * values, and a block of zeros. */
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

int main(void)
{
    enum { N_BLOCKS = 12 };
    static const char *const names[N_BLOCKS] = { "gaussian x1", "gaussian x0.01", "gaussian x100", "gaussian x3",
                                                 "one outlier", "negative max", "exact halves", "tiny values",
                                                 "zeros",       "ramp",         "gaussian x7", "all equal" };
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
            default: x[b][j] = 2.5f; break;
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
            int shown = 0;
            for (int j = 0; j < QK8_0 && shown < 3; j++)
                if (want.qs[j] != got.qs[j]) {
                    printf("  qs[%d] for x = %g: expected %d, got %d\n", j, x[b][j], want.qs[j], got.qs[j]);
                    shown++;
                }
        }
    }
    return verdict(&t, "blocks");
}
