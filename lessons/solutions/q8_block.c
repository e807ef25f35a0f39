/* q8_block.c, solved: quantize one q8_0 block and one q4_0 block, and
 * encode one fp4 value (lesson 9). */
#include <math.h>

#include "kernels/codec.h"
#include "q8_block.h"

void q8_0_block(BlockQ8_0 *out, const float x[QK8_0])
{
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; j++)
        if (fabsf(x[j]) > amax)
            amax = fabsf(x[j]);

    const float d = amax / 127.0f;            /* the largest value becomes +-127 */
    const float id = d != 0.0f ? 1.0f / d : 0.0f; /* a block of zeros: every code 0 */

    out->d = fp16_from_f32(d);
    for (int j = 0; j < QK8_0; j++)
        out->qs[j] = (int8_t)roundf(x[j] * id); /* |x * id| <= 127: no clamp needed */
}

void q4_0_block(BlockQ4_0 *out, const float x[QK4_0])
{
    float amax = 0.0f, max = 0.0f; /* max: the value of largest |x|, signed */
    for (int j = 0; j < QK4_0; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }

    const float d = max / -8.0f;               /* max becomes code 0, that is -8 steps */
    const float id = d != 0.0f ? 1.0f / d : 0.0f;

    out->d = fp16_from_f32(d);
    for (int j = 0; j < QK4_0 / 2; j++) {
        int lo = (int)(x[j] * id + 8.5f), hi = (int)(x[j + QK4_0 / 2] * id + 8.5f); /* >= 0: truncation floors */
        lo = lo > 15 ? 15 : lo;
        hi = hi > 15 ? 15 : hi;
        out->qs[j] = (uint8_t)(lo | hi << 4);
    }
}

static const float e2m1[8] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f };

unsigned fp4_code(float x, float s)
{
    const float a = fabsf(x / s);
    unsigned idx = 0;
    for (unsigned i = 1; i < 8; i++) {
        const float mid = 0.5f * (e2m1[i - 1] + e2m1[i]); /* exact: halves and quarters */
        /* past the midpoint: the upper one; on it, the even index of the two */
        if (a > mid || (a == mid && i % 2 == 0))
            idx = i;
    }
    return (x < 0.0f ? 8u : 0u) | idx;
}
