/* q8_block.c: quantize one q8_0 block and one q4_0 block, and encode one fp4
 * value (lesson 9).
 * Fill in the TODOs; check
 * it with `kvscope lesson check 9 --file THIS_FILE`: its bytes are compared
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

/* A q4_0 block holds 32 values as one fp16 scale d and 32 codes of 4 bits
 * (0 to 15, two to a byte), and stands for the values (code - 8) * d. The
 * codes reach one step further down (-8) than up (+7), so llama.cpp gives
 * the value of largest magnitude the code at the far end: d = max / -8,
 * where max is that value with its sign. A code is then the value over d
 * plus 8, rounded: (int)(x * id + 8.5f), at most 15. */
void q4_0_block(BlockQ4_0 *out, const float x[QK4_0])
{
    /* TODO: max, the value of largest |x[j]|, with its sign */
    float max = 0.0f;
    (void)x;

    /* TODO: d = max / -8 and its inverse (0 for a block of zeros) */
    float d = max;
    float id = 0.0f;

    /* TODO: store d as fp16; pack value j's code in the low nibble of
     * qs[j] and value j + 16's in the high nibble */
    out->d = 0;
    for (int j = 0; j < QK4_0 / 2; j++)
        out->qs[j] = (uint8_t)(d * id);
}

/* fp4 (E2M1) stores a sign and one of eight magnitudes, times the row's
 * scale s. The Marlin design writes the code as round(value / scale): that gives a
 * whole number, 5 among them, and E2M1 has no 5 (its index 5 stands for 3).
 * Find instead the magnitude nearest |x / s|; halfway between two (5 lies
 * between 4 and 6), take the one with the even index. */
static const float e2m1[8] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f };

unsigned fp4_code(float x, float s)
{
    /* TODO: a = |x / s|, computed as a float */
    float a = 0.0f;
    (void)x;
    (void)s;

    /* TODO: the index of the magnitude nearest a (ties: the even index),
     * not the Marlin design's (unsigned)roundf(a) */
    unsigned idx = 0;
    (void)a;
    (void)e2m1;

    /* TODO: the sign bit (8) for x < 0 */
    return idx;
}
