/* q8_block.h: one q8_0 block, one q4_0 block and one fp4 (E2M1) code
 * (lesson 9). */
#ifndef KVSCOPE_EXERCISE_Q8_BLOCK_H
#define KVSCOPE_EXERCISE_Q8_BLOCK_H

#include "kernels/codec_isa.h" /* BlockQ8_0 { uint16_t d; int8_t qs[32]; }, QK8_0 = 32,
                                  BlockQ4_0 { uint16_t d; uint8_t qs[16]; }, QK4_0 = 32 */

/* Quantize QK8_0 values into one q8_0 block, byte for byte as llama.cpp's
 * quantize_row_q8_0_ref (and kvscope's codec_ref[FMT_Q8_0]) do. */
void q8_0_block(BlockQ8_0 *out, const float x[QK8_0]);

/* Quantize QK4_0 values into one q4_0 block, byte for byte as llama.cpp's
 * quantize_row_q4_0_ref (and codec_ref[FMT_Q4_0]) do: value j's 4-bit code
 * in the low nibble of qs[j], value j + 16's in the high nibble. */
void q4_0_block(BlockQ4_0 *out, const float x[QK4_0]);

/* The 4-bit fp4 code of value x in a row whose decoder scale is s (s > 0,
 * the row's fp16 scale as the decoder reads it): bit 3 the sign (x < 0),
 * bits 0-2 the index into E2M1's magnitudes { 0, 0.5, 1, 1.5, 2, 3, 4, 6 }
 * of the one nearest |x / s|, a tie going to the even index, as kvscope's
 * codec_ref[FMT_FP4] encodes each value of a row. */
unsigned fp4_code(float x, float s);

#endif
