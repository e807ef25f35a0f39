/* q8_block.h: one q8_0 block (lesson 7). */
#ifndef KVSCOPE_EXERCISE_Q8_BLOCK_H
#define KVSCOPE_EXERCISE_Q8_BLOCK_H

#include "kernels/codec_isa.h" /* BlockQ8_0 { uint16_t d; int8_t qs[32]; }, QK8_0 = 32 */

/* Quantize QK8_0 values into one q8_0 block, byte for byte as llama.cpp's
 * quantize_row_q8_0_ref (and kvscope's codec_ref[FMT_Q8_0]) do. */
void q8_0_block(BlockQ8_0 *out, const float x[QK8_0]);

#endif
