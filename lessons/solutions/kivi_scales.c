/* kivi_scales.c: KIVI's per-channel key scales (lesson 10): the reference
 * solution. */
#include "kernels/codec.h"
#include "kivi_scales.h"

void kivi_channel_scales(const float *keys, size_t G, size_t hd, unsigned bits, uint16_t *scale, uint16_t *min)
{
    for (size_t i = 0; i < hd; i++) {
        float lo = keys[i], hi = keys[i];
        for (size_t r = 1; r < G; r++) {
            const float x = keys[r * hd + i];
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
        scale[i] = fp16_from_f32((hi - lo) / (float)((1u << bits) - 1));
        min[i] = fp16_from_f32(lo);
    }
}
