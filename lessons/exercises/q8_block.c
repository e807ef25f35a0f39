/* q8_block.c: quantize one q8_0 block (lesson 7). Fill in the TODOs; check
 * it with `kvscope lesson check 7 --file THIS_FILE`: its bytes are compared
 * with kvscope's reference codec on several blocks.
 *
 * A q8_0 block holds 32 values as one fp16 scale d and 32 signed bytes q,
 * and stands for the values q[j] * d. What you need:
 *   fabsf, roundf     <math.h> (roundf rounds halves away from zero)
 *   fp16_from_f32(f)  kernels/codec.h: the fp16 bits of a float, rounded
 *                     to nearest even */
#include <math.h>

#include "kernels/codec.h"
#include "q8_block.h"

void q8_0_block(BlockQ8_0 *out, const float x[QK8_0])
{
    /* TODO: amax, the largest |x[j]| of the block */
    float amax = 0.0f;
    (void)x;

    /* TODO: the scale that maps amax to 127, and its inverse (beware the
     * block of zeros: its scale is 0, and 1/0 is not a number to multiply by) */
    float d = amax;
    float id = 1.0f;

    /* TODO: store d as fp16, and each value as the nearest step of d,
     * computed with the float d and id (not the fp16 one) */
    out->d = 0;
    for (int j = 0; j < QK8_0; j++)
        out->qs[j] = (int8_t)(d * id);
}
