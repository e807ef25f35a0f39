/* codec_isa.h: the per-ISA codec tables, and what the codec files share.
 *
 * codec_ref (codec.h) is the specification; each table here has the same
 * operations, vectorized for one instruction set, in its own file built
 * with that ISA's flags (codec_avx2.c, codec_avx512.c, codec_neon.c; their
 * shared loop skeletons: codec_tiles.h). Only run a table on a CPU that has
 * its features:
 *
 *   codec_avx2     AVX2 + FMA + F16C
 *   codec_avx512   AVX-512 F, BW, VL and DQ (plus the AVX2 set)
 *   codec_neon     aarch64 Advanced SIMD (always present there)
 *
 * The SIMD tables decode in registers and agree with codec_ref exactly on
 * dequantize and within the summation bounds of test_codec.c on dot and
 * axpy. Their quantize is the reference one (a row is quantized once per
 * token; it is not the hot path), except f16, which uses the hardware's
 * conversion, and on x86 q8_0, which rounds every --int-dot activation
 * (codec_quantize_q8_0_avx2): both give the reference's bytes. */
#ifndef KVSCOPE_KERNELS_CODEC_ISA_H
#define KVSCOPE_KERNELS_CODEC_ISA_H

#include <math.h>

#include <stddef.h>
#include <stdint.h>

#include "kernels/codec.h"

#if defined(__x86_64__)
extern const FormatOps codec_avx2[FMT_COUNT];
extern const FormatOps codec_avx512[FMT_COUNT];
/* codec_avx512's q4_0, int4 and fp4 tile forms for rows of exactly
 * NIBBLE_ROW_VALUES values (nibble_rows_avx512.c); the same contracts as
 * dot_rows and axpy_rows. */
#define NIBBLE_ROW_VALUES 128
void q4_0_dot_rows_128_avx512(float *out, size_t ld, const float *q, size_t G, const void *rows, size_t stride,
                              size_t n_rows);
void q4_0_axpy_rows_128_avx512(float *acc, const float *w, size_t ld, size_t G, const void *rows, size_t stride,
                               size_t n_rows);
void int4_dot_rows_128_avx512(float *out, size_t ld, const float *q, size_t G, const void *rows, size_t stride,
                              size_t n_rows);
void int4_axpy_rows_128_avx512(float *acc, const float *w, size_t ld, size_t G, const void *rows, size_t stride,
                               size_t n_rows);
void fp4_dot_rows_128_avx512(float *out, size_t ld, const float *q, size_t G, const void *rows, size_t stride,
                             size_t n_rows);
void fp4_axpy_rows_128_avx512(float *acc, const float *w, size_t ld, size_t G, const void *rows, size_t stride,
                              size_t n_rows);
#endif
#if defined(__aarch64__)
extern const FormatOps codec_neon[FMT_COUNT];
#endif

/* How many chains the f32 and f16 dots sum a row's 16-value chunks in: the
 * AVX-512 codec's choice (codec_tiles_dot.h), which the reference and AVX2
 * codecs follow so that a score has the same bits on every ISA. Two
 * (chunk c into chain c % 2: dot_block_q) for rows of 128 values where
 * dot_tile keeps q in registers, groups of G > 1 heads but 4 (those it
 * reads in streams); else four (dot_block, dot_block_streams: chunk c into
 * chain c % 4 while whole groups of four chunks last, the rest into chain
 * 0). In a chain, value i goes to lane i % 16 by one fused multiply-add;
 * the chains are added lane by lane in turn, then the lanes in lanes16.h's
 * tree. */
static inline size_t codec_dot_chains(size_t n, size_t G)
{
    return n == 128 && G > 1 && G != 4 ? 2 : 4;
}

/* The SIMD codecs unroll their blocks of accumulators fully, so that the
 * accumulators live in registers (codec_avx2.c). Under AddressSanitizer
 * (`make sanitize`), where speed does not matter and clang takes minutes
 * over the unrolled code, the loops stay loops: the same arithmetic. */
#if defined(__SANITIZE_ADDRESS__)
#define CODEC_UNROLL
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CODEC_UNROLL
#endif
#endif
#ifndef CODEC_UNROLL
#define CODEC_UNROLL _Pragma("GCC unroll 16")
#endif

/* --- block layouts (format.h tells the story) ---------------------------- */

#define QK8_0 32 /* values per q8_0 block */
#define QK4_0 32 /* values per q4_0 block */
#define FP16_MAX 65504.0f /* largest finite fp16: quantizer scales clamp to it */

/* llama.cpp's block_q8_0: value j = qs[j] * d. */
typedef struct {
    uint16_t d;        /* fp16 scale, absmax / 127 */
    int8_t qs[QK8_0];
} BlockQ8_0;
_Static_assert(sizeof(BlockQ8_0) == 34, "q8_0 block: 2-byte scale + 32 int8");

/* llama.cpp's block_q4_0: byte j = element j (low nibble) | element j+16
 * (high nibble) << 4; value = (nibble - 8) * d. */
typedef struct {
    uint16_t d;            /* fp16 scale, max / -8 */
    uint8_t qs[QK4_0 / 2];
} BlockQ4_0;
_Static_assert(sizeof(BlockQ4_0) == 18, "q4_0 block: 2-byte scale + 16 bytes of nibbles");

/* int4 and fp4 rows: ceil(n/8) uint32 words, then the fp16 row scale. */
static inline size_t codec_row_words(size_t n)
{
    return (n + 7) / 8;
}

/* E2M1 magnitudes by 3-bit index (fp4's nibble without its sign bit), as a
 * list for initializers and set intrinsics. */
#define FP4_MAGNITUDES 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f

/* A quantizer's 1/d, or 0 where that is not finite: d == 0 (a block of
 * zeros), or a d so small (absmax below about 1e-36) that 1/d overflows;
 * fp16(d) is 0 then anyway, so the codes do not matter, only that they stay
 * defined. The reference's and the SIMD quantizers' alike (same bytes). */
static inline float codec_inverse(float d)
{
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    return isfinite(id) ? id : 0.0f;
}

/* The reference quantizers, which the SIMD tables name where they fall back
 * to them. Same contract as FormatOps.quantize. */
void codec_quantize_f32_ref(void *dst, const float *src, size_t n);
void codec_quantize_q8_0_ref(void *dst, const float *src, size_t n);
/* q8_0 by AVX2 (codec_avx2.c), the reference's bytes; the AVX-512 table's too */
void codec_quantize_q8_0_avx2(void *dst, const float *src, size_t n);
/* an activation's q8_0, ties to even, by AVX2 (codec_avx2.c): codec_quantize_q8_0_even's bytes */
void codec_quantize_q8_0_even_avx2(void *dst, const float *src, size_t n);
void codec_quantize_q4_0_ref(void *dst, const float *src, size_t n);
void codec_quantize_int4_ref(void *dst, const float *src, size_t n);
void codec_quantize_fp4_ref(void *dst, const float *src, size_t n);
void codec_quantize_u4_ref(void *dst, const float *src, size_t n);
void codec_quantize_u2_ref(void *dst, const float *src, size_t n);

#endif
