/* kivi_scales.h: KIVI's per-channel key scales (lesson 10).
 *
 * A group of G keys, each head_dim values, is quantized channel by channel:
 * channel i of the group (key[r][i] for r = 0 .. G-1) gets its own minimum
 * and scale = (max - min) / (2^bits - 1), both stored as fp16, and each
 * value the code round((x - min) / scale). A per-token format instead gives
 * each key (each row) one scale for all its channels. */
#ifndef KVSCOPE_EXERCISE_KIVI_SCALES_H
#define KVSCOPE_EXERCISE_KIVI_SCALES_H

#include <stddef.h>
#include <stdint.h>

/* keys [G][hd] -> scale [hd] and min [hd], as fp16 bits (fp16_from_f32). */
void kivi_channel_scales(const float *keys, size_t G, size_t hd, unsigned bits, uint16_t *scale, uint16_t *min);

#endif
