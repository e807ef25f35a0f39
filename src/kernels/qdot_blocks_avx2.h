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

/* The 4-bit formats' offset: what their unsigned codes add to each code. */
static inline int offset_of(const Kind k)
{
    return k == K_FP4 ? 12 : 8;
}

/* Where block b of a row starts; the row's scale (int4, fp4: fp4's halved,
 * its codes being the values doubled; 1 for the formats with block scales). */
static inline const unsigned char *block_at(const Kind k, const unsigned char *row, size_t b)
{
    return k == K_Q8_0 ? row + b * sizeof(BlockQ8_0) : k == K_Q4_0 ? row + b * sizeof(BlockQ4_0) : row + b * (QK / 2);
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

/* Lane i = the sum of v[i]'s 8 lanes, i < QDOT_LANES (exact: integers).
 * With cnt <= 4 only v[0 .. 3] are read and the upper lanes are 0. */
static inline __m256i sums8(const __m256i v[QDOT_LANES], size_t cnt)
{
    const __m256i k0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    if (cnt <= 4) /* k0: lanes 0..3 the lower halves' sums, 4..7 the upper's */
        return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(k0), _mm256_extracti128_si256(k0, 1)));
    const __m256i k1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(k0, k1, 0x20), _mm256_permute2x128_si256(k0, k1, 0x31));
}

/* x as the loops read it: vector g's block b has its 32 codes at codes +
 * (g * nb + b) * step, its scale at dx[g * nb8 + b] and (4-bit formats)
 * offset_of(k) times the sum of its codes at off[g * nb8 + b]; both zero
 * for b from nb up to nb8, nb rounded up to QDOT_LANES. */
typedef struct {
    const unsigned char *codes;
    size_t step;
    const float *dx;
    const int32_t *off;
    size_t nb, nb8;
} XBlocks;

/* The weights' scales d_w of blocks b0 .. b0 + cnt - 1 of a row, in their
 * lanes, 0 past cnt: the blocks' own (q8_0, q4_0) or the row's (int4, fp4:
 * row_scale). */
static inline __m256 chunk_dw(const Kind k, const unsigned char *row, size_t b0, size_t cnt, size_t n)
{
    if (k == K_INT4 || k == K_FP4)
        return _mm256_set1_ps(row_scale(k, row, n));
    int16_t h[QDOT_LANES] = { 0 };
    for (size_t i = 0; i < cnt; i++)
        h[i] = (int16_t)half_bits(block_at(k, row, b0 + i));
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}

/* Blocks b0 .. b0 + cnt - 1 (cnt <= QDOT_LANES) of a row against vector g
 * of x, into acc as qdot_ref.c orders it: block b0 + i's integer sum times
 * d_w * d_x, fused into lane i (b0 is a multiple of QDOT_LANES). u: the
 * blocks' unsigned codes (4-bit formats) or their raw codes (q8_0), from
 * chunk_codes; dw: chunk_dw's. */
static inline __m256 chunk_fma(const Kind k, const __m256i u[QDOT_LANES], __m256 dw, XBlocks x, size_t g,
                               size_t b0, size_t cnt, __m256 acc)
{
    __m256i v[QDOT_LANES];
    const unsigned char *xc = x.codes + (g * x.nb + b0) * x.step;
    for (size_t i = 0; i < QDOT_LANES; i++) {
        if (i >= cnt) {
            v[i] = _mm256_setzero_si256();
            continue;
        }
        const __m256i xv = load32(xc + i * x.step);
        v[i] = k == K_Q8_0 ? pair_sums(_mm256_sign_epi8(u[i], u[i]), _mm256_sign_epi8(xv, u[i]))
                           : pair_sums(u[i], xv);
    }
    __m256i isum = sums8(v, cnt);
    if (k != K_Q8_0)
        isum = _mm256_sub_epi32(isum, _mm256_loadu_si256((const __m256i *)(x.off + g * x.nb8 + b0)));
    const __m256 s = _mm256_mul_ps(dw, _mm256_loadu_ps(x.dx + g * x.nb8 + b0));
    return _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(isum), acc);
}

/* A row's blocks b0 .. b0 + cnt - 1 as chunk_fma takes them. */
static inline void chunk_codes(const Kind k, const unsigned char *row, size_t b0, size_t cnt,
                               __m256i u[QDOT_LANES])
{
    for (size_t i = 0; i < cnt; i++) {
        const unsigned char *blk = block_at(k, row, b0 + i);
        u[i] = k == K_Q8_0 ? load32(blk + 2) : offset_codes_of(k, blk);
    }
}

/* The lanes added in adjacent pairs, ((l0 + l1) + (l2 + l3)) + ((l4 + l5)
 * + (l6 + l7)), as qdot_ref.c does. */
static inline float lanes_sum(__m256 acc)
{
    const __m256 t = _mm256_hadd_ps(acc, acc); /* l0+l1, l2+l3, .. | l4+l5, l6+l7, .. */
    const __m256 u = _mm256_hadd_ps(t, t);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1)));
}

/* G > 1 (qdot_group_avx2.c): the G vectors x against every row, y[g * ld
 * + r]; ahead: rows to prefetch meanwhile, or NULL. */
void qdot_group_avx2(Kind k, float *y, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows,
                     XBlocks x, size_t G, size_t n, const RowsAhead *ahead);

#endif
