/* kivi_scales.c: KIVI's per-channel key scales (lesson 10). Fill in the
 * TODOs; check it with `kvscope lesson check 10 --file THIS_FILE`: the
 * checker runs a real kivi cache and compares your scales and minimums with
 * the ones it stored for each group of keys.
 *   fp16_from_f32(f)  kernels/codec.h: the fp16 bits of a float */
#include "kernels/codec.h"
#include "kivi_scales.h"

void kivi_channel_scales(const float *keys, size_t G, size_t hd, unsigned bits, uint16_t *scale, uint16_t *min)
{
    for (size_t i = 0; i < hd; i++) {
        /* TODO: the smallest and largest value of channel i over the G keys
         * (key r's channel i is keys[r * hd + i]) */
        float lo = keys[i], hi = keys[i];
        (void)G;

        /* TODO: the scale that spreads lo .. hi over the 2^bits codes */
        float s = (hi - lo) / (float)bits;
        scale[i] = fp16_from_f32(s);
        min[i] = fp16_from_f32(lo);
    }
}
