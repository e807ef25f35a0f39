/* qdot_blocks_avx2.h: a block's integer dot with a q8_0 activation on AVX2,
 * the pieces qdot_avx2.c (rows against one vector) and qdot_group_avx2.c
 * (a GQA group's heads) share; private to them, both built with AVX2. See
 * qdot_avx2.c for how a block's codes meet x's. */
#ifndef KVSCOPE_KERNELS_QDOT_BLOCKS_AVX2_H
#define KVSCOPE_KERNELS_QDOT_BLOCKS_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"
#include "kernels/kernels_isa.h"

#define QK 32
/* Blocks of x (all G vectors together) whose scales are kept as floats on
 * the stack; more go to the reference (no model here comes near: 4096
 * blocks = 131072 values, the longest row of a matrix). */
#define QDOT_MAX_BLOCKS 4096
/* Blocks of x kept as vectors on the stack (8 KiB: 64 heads of 128 values):
 * a group's offset sums, int4 and fp4's x in their nibble order, and four
 * heads' offset sums and scales (group4_rows). */
#define QDOT_VEC_BLOCKS 256
/* Rows read side by side, one from each of that many far-apart parts of
 * the matrix: that many sequential streams in flight (one stream from one
 * core reads well below the bandwidth). */
#define QDOT_STREAMS 4

/* The formats, as constants the loops below are specialised on. */
typedef enum { K_Q8_0, K_Q4_0, K_INT4, K_FP4 } Kind;

static inline int half_bits(const unsigned char *p)
{
    unsigned short h;
    memcpy(&h, p, sizeof h);
    return h;
}

static inline float half_at(const unsigned char *p)
{
    return _cvtsh_ss((unsigned short)half_bits(p));
}

/* The f16 at p times d in all 8 lanes: broadcast as a half, then converted
 * (cheaper than a scalar conversion and a broadcast). */
static inline __m256 half_times(const unsigned char *p, __m256 d)
{
    short h;
    memcpy(&h, p, sizeof h);
    return _mm256_mul_ps(_mm256_cvtph_ps(_mm_set1_epi16(h)), d);
}

/* 16 bytes as 32 unsigned nibbles, each byte's low nibbles in the lower
 * half and its high nibbles in the upper: the bytes in both halves (a
 * broadcast load), the upper half shifted down 4 (in-lane: no cross-lane
 * insert, which costs more), then the low 4 bits of each byte. q4_0's
 * order is then element order; int4's and fp4's (element 2k low, 2k + 1
 * high) is the even elements, then the odd (x is reordered to match). */
static inline __m256i nibbles(const unsigned char *qs)
{
    const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    const __m256i both = _mm256_srlv_epi64(raw, _mm256_set_epi64x(4, 4, 0, 0));
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

static inline __m256i load32(const unsigned char *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

/* A block of 32 codes reordered to match int4's and fp4's nibbles: the
 * even elements, then the odd. Each 16-byte half is sorted so in-lane (a
 * byte shuffle), then its 8-byte quarters are put in order (evens of both
 * halves, odds of both). */
static inline __m256i even_then_odd(__m256i x)
{
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10,
                                           12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    return _mm256_permute4x64_epi64(_mm256_shuffle_epi8(x, split), _MM_SHUFFLE(3, 1, 2, 0));
}

/* u . x over a block as 8 lanes of exact int32 partial sums: maddubs
 * (unsigned u times signed x, in pairs), then the pairs summed. */
static inline __m256i pair_sums(__m256i u, __m256i x)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
}

/* Four maddubs results (of 16 bytes pairs each lane) summed in one
 * register: lane j < 4 the sum of m[j]'s lower 16 products, lane 4 + j of
 * its upper 16. Two horizontal adds in 16 bits, so exact while 8 products
 * stay below 2^15, then one pair sum. */
static inline __m256i sums4(const __m256i m[4])
{
    const __m256i h = _mm256_hadd_epi16(_mm256_hadd_epi16(m[0], m[1]), _mm256_hadd_epi16(m[2], m[3]));
    return _mm256_madd_epi16(h, _mm256_set1_epi16(1));
}

/* The 4-bit formats' offset: what their unsigned codes add to each code. */
static inline int offset_of(const Kind k)
{
    return k == K_FP4 ? 12 : 8;
}

/* The pair sums of offset times x, which the offset codes add. */
static inline __m256i offset_sums(const Kind k, __m256i x)
{
    return pair_sums(_mm256_set1_epi8((char)offset_of(k)), x);
}

/* Where block b of a row starts, and the scale that goes with its sums:
 * the block's times dx (q8_0, q4_0), dx alone (int4, fp4: the row's scale
 * comes at the end, row_scale). */
static inline const unsigned char *block_at(const Kind k, const unsigned char *row, size_t b)
{
    return k == K_Q8_0 ? row + b * sizeof(BlockQ8_0) : k == K_Q4_0 ? row + b * sizeof(BlockQ4_0) : row + b * (QK / 2);
}

static inline __m256 block_scale(const Kind k, const unsigned char *blk, __m256 dx)
{
    return k == K_Q8_0 || k == K_Q4_0 ? half_times(blk, dx) : dx;
}

static inline float row_scale(const Kind k, const unsigned char *row, size_t n)
{
    return k == K_INT4 ? half_at(row + n / 2) : k == K_FP4 ? 0.5f * half_at(row + n / 2) : 1.0f;
}

/* A 4-bit block's codes, unsigned: their value + offset_of(k). fp4: 12 +
 * the nibble's E2M1 value doubled, from a table (bit 3 the sign). */
static inline __m256i offset_codes_of(const Kind k, const unsigned char *blk)
{
    __m256i u = nibbles(k == K_Q4_0 ? blk + 2 : blk);
    if (k == K_INT4) /* a two's complement nibble c is u = c ^ 8 = c + 8 */
        u = _mm256_xor_si256(u, _mm256_set1_epi8(8));
    if (k == K_FP4) {
        const __m256i fp4 = _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, 12, 13, 14,
                                             15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
        u = _mm256_shuffle_epi8(fp4, u);
    }
    return u;
}

/* w . x of one block as exact int32 lanes; off: offset_sums(k, x), used
 * by the 4-bit formats. */
static inline __m256i block_sums(const Kind k, const unsigned char *blk, __m256i x, __m256i off)
{
    if (k == K_Q8_0) {
        const __m256i w = load32(blk + 2);
        return pair_sums(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    }
    return _mm256_sub_epi32(pair_sums(offset_codes_of(k, blk), x), off);
}

static inline int offset_codes(const Kind k)
{
    return k != K_Q8_0;
}

static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* x as the loops read it: block b's 32 codes at codes + b * step, its
 * scale dx[b]. */
typedef struct {
    const unsigned char *codes;
    size_t step;
    const float *dx;
} XBlocks;

/* G > 1 (qdot_group_avx2.c): the G vectors' blocks x [G][nb] (x.dx too)
 * against every row, y[g * ld + r]; offs: [G][nb] their offset_sums, for
 * the 4-bit formats, of the heads after the last four only; ahead: rows to
 * prefetch meanwhile, or NULL. */
void qdot_group_avx2(Kind k, float *y, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows,
                     XBlocks x, const __m256i *offs, size_t G, size_t nb, size_t n, const RowsAhead *ahead);

#endif
