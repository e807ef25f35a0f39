/* q8_block.c, solved: quantize one q8_0 block (lesson 7). */
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
