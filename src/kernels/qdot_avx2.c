/* qdot_avx2.c: the integer dot of q8_0, q4_0, int4 and fp4 rows with a q8_0
 * activation (kernels.h, QDotFn) on AVX2, as llama.cpp computes it.
 *
 * A block is 32 codes times 32 codes of x. maddubs multiplies unsigned by
 * signed bytes and sums them in pairs, so q8_0's signed code w moves its
 * sign onto x: |w| * (x * sign(w)). The 4-bit formats are made unsigned by
 * an offset instead: u = w + 8 (q4_0's nibble as it stands, int4's with
 * its sign bit flipped), u = w + 12 for fp4 (its E2M1 values doubled, the
 * integers -12 .. 12, looked up by a byte shuffle), and the offset times x
 * is taken off again (offset_sums, once a block of x). The pairs are
 * summed to 8 int32 lanes, exactly, turned to floats and scaled into the
 * row's accumulators: by the block's scale times x's (q8_0, q4_0), or by
 * x's alone with the row's scale applied once at the end (int4, fp4).
 *
 * A matrix's rows are read once, four side by side from four parts of it
 * (qdot_rows): a decode step is bound by how fast the memory delivers them
 * and this turns bytes into sums. A group of G > 1 vectors (GQA heads
 * scoring keys) decodes each block once for all of them (qdot_group).
 * Where four results meet (four rows of a 4-bit format against one x, or
 * one row against four heads), their products are summed into one
 * register (sums4, heads4_sums), so that summing the pairs, converting
 * and scaling are done once for the four. */
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

/* One row against x. */
static inline __attribute__((always_inline)) float row_dot(const Kind k, const unsigned char *w, XBlocks x,
                                                           size_t nb, size_t n)
{
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        const __m256i xv = load32(x.codes + b * x.step);
        const __m256i e = offset_codes(k) ? offset_sums(k, xv) : _mm256_setzero_si256();
        const unsigned char *blk = block_at(k, w, b);
        acc = _mm256_fmadd_ps(block_scale(k, blk, _mm256_set1_ps(x.dx[b])),
                              _mm256_cvtepi32_ps(block_sums(k, blk, xv, e)), acc);
    }
    return row_scale(k, w, n) * hsum(acc);
}

/* Four rows against x side by side: each block of x loaded once. */
static inline __attribute__((always_inline)) void rows4_dot(const Kind k, float *const y[4],
                                                            const unsigned char *const w[4], XBlocks x, size_t nb,
                                                            size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t b = 0; b < nb; b++) {
        const __m256i xv = load32(x.codes + b * x.step);
        const __m256i e = offset_codes(k) ? offset_sums(k, xv) : _mm256_setzero_si256();
        const __m256 d = _mm256_set1_ps(x.dx[b]);
        const unsigned char *b0 = block_at(k, w[0], b), *b1 = block_at(k, w[1], b);
        const unsigned char *b2 = block_at(k, w[2], b), *b3 = block_at(k, w[3], b);
        a0 = _mm256_fmadd_ps(block_scale(k, b0, d), _mm256_cvtepi32_ps(block_sums(k, b0, xv, e)), a0);
        a1 = _mm256_fmadd_ps(block_scale(k, b1, d), _mm256_cvtepi32_ps(block_sums(k, b1, xv, e)), a1);
        a2 = _mm256_fmadd_ps(block_scale(k, b2, d), _mm256_cvtepi32_ps(block_sums(k, b2, xv, e)), a2);
        a3 = _mm256_fmadd_ps(block_scale(k, b3, d), _mm256_cvtepi32_ps(block_sums(k, b3, xv, e)), a3);
    }
    *y[0] = row_scale(k, w[0], n) * hsum(a0);
    *y[1] = row_scale(k, w[1], n) * hsum(a1);
    *y[2] = row_scale(k, w[2], n) * hsum(a2);
    *y[3] = row_scale(k, w[3], n) * hsum(a3);
}

/* q4_0's block b of four rows' scales, in sums4's lanes. */
static inline __m256 scales4(const unsigned char *const w[4], size_t b)
{
    const size_t at = b * sizeof(BlockQ4_0);
    __m128i h = _mm_cvtsi32_si128(half_bits(w[0] + at));
    h = _mm_insert_epi16(h, half_bits(w[1] + at), 1);
    h = _mm_insert_epi16(h, half_bits(w[2] + at), 2);
    h = _mm_insert_epi16(h, half_bits(w[3] + at), 3);
    const __m128 f = _mm_cvtph_ps(h);
    return _mm256_set_m128(f, f);
}

/* rows4_dot for the 4-bit formats: the four rows' maddubs results, less
 * the offset's, summed by sums4 (the differences' products are at most
 * 12 * 128 in magnitude), so conversion and scaling are done once for
 * the four. */
static inline __attribute__((always_inline)) void rows4_offset_dot(const Kind k, float *const y[4],
                                                                   const unsigned char *const w[4], XBlocks x,
                                                                   size_t nb, size_t n)
{
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        const __m256i xv = load32(x.codes + b * x.step);
        const __m256i mo = _mm256_maddubs_epi16(_mm256_set1_epi8((char)offset_of(k)), xv);
        __m256i m[4];
        CODEC_UNROLL
        for (size_t j = 0; j < 4; j++)
            m[j] = _mm256_sub_epi16(_mm256_maddubs_epi16(offset_codes_of(k, block_at(k, w[j], b)), xv), mo);
        __m256 d = _mm256_set1_ps(x.dx[b]);
        if (k == K_Q4_0)
            d = _mm256_mul_ps(d, scales4(w, b));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums4(m)), acc);
    }
    __m128 sum = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    if (k != K_Q4_0)
        sum = _mm_mul_ps(sum, _mm_setr_ps(row_scale(k, w[0], n), row_scale(k, w[1], n), row_scale(k, w[2], n),
                                          row_scale(k, w[3], n)));
    _mm_store_ss(y[0], sum);
    _mm_store_ss(y[1], _mm_shuffle_ps(sum, sum, 1));
    _mm_store_ss(y[2], _mm_shuffle_ps(sum, sum, 2));
    _mm_store_ss(y[3], _mm_shuffle_ps(sum, sum, 3));
}

/* Every row against one x: QDOT_STREAMS rows at a time, from that many
 * parts of the matrix; the rows left over one by one. */
static inline __attribute__((always_inline)) void qdot_rows(const Kind k, float *y, const unsigned char *rows,
                                                            size_t stride, size_t n_rows, XBlocks x, size_t nb,
                                                            size_t n)
{
    const size_t span = n_rows / QDOT_STREAMS;
    for (size_t i = 0; i < span; i++) {
        float *const out[4] = { y + i, y + span + i, y + 2 * span + i, y + 3 * span + i };
        const unsigned char *const w[4] = { rows + i * stride, rows + (span + i) * stride,
                                            rows + (2 * span + i) * stride, rows + (3 * span + i) * stride };
        if (offset_codes(k))
            rows4_offset_dot(k, out, w, x, nb, n);
        else
            rows4_dot(k, out, w, x, nb, n);
    }
    for (size_t r = QDOT_STREAMS * span; r < n_rows; r++)
        y[r] = row_dot(k, rows + r * stride, x, nb, n);
}

/* GN heads of a group (g0 .. g0 + GN - 1) over every row: each row's block
 * is loaded, unpacked and scaled once, then dotted with the GN vectors'
 * blocks, one accumulator each (GN independent chains). GN is a constant
 * (1 to 3, the heads group4_rows leaves): the accumulators then live in
 * registers, not on the stack. */
static inline __attribute__((always_inline)) void group_rows(const Kind k, const size_t GN, size_t g0, float *y,
                                                             size_t ld, const unsigned char *rows, size_t stride,
                                                             size_t n_rows, XBlocks x, const __m256i *offs,
                                                             size_t nb, size_t n)
{
    for (size_t r = 0; r < n_rows; r++) {
        const unsigned char *w = rows + r * stride;
        __m256 acc[4];
        CODEC_UNROLL
        for (size_t j = 0; j < GN; j++)
            acc[j] = _mm256_setzero_ps();
        for (size_t b = 0; b < nb; b++) {
            const unsigned char *blk = block_at(k, w, b);
            const __m256 dw = block_scale(k, blk, _mm256_set1_ps(1.0f));
            CODEC_UNROLL
            for (size_t j = 0; j < GN; j++) {
                const size_t gb = (g0 + j) * nb + b;
                const __m256i xv = load32(x.codes + gb * x.step);
                const __m256i e = offset_codes(k) ? offs[gb] : _mm256_setzero_si256();
                const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(x.dx[gb]));
                acc[j] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(block_sums(k, blk, xv, e)), acc[j]);
            }
        }
        const float s = row_scale(k, w, n);
        CODEC_UNROLL
        for (size_t j = 0; j < GN; j++)
            y[(g0 + j) * ld + r] = s * hsum(acc[j]);
    }
}

/* A block's dots with four vectors x (x0, x0 + step, ..) in sums4's
 * lanes; off (the 4-bit formats): their offset sums so laid out. The
 * 4-bit formats go through sums4, exact as their unsigned codes are at
 * most 24 and x's at most 128 in magnitude (8 * 24 * 128 < 2^15). q8_0's
 * products (up to 127 * 127) are too large for sums in 16 bits: its pairs
 * are summed first and the heads' sums added in 32 bits. */
static inline __m256i heads4_sums(const Kind k, const unsigned char *blk, const unsigned char *x0, size_t step,
                                  __m256i off)
{
    __m256i m[4];
    if (k == K_Q8_0) {
        const __m256i w = load32(blk + 2), aw = _mm256_sign_epi8(w, w);
        CODEC_UNROLL
        for (size_t j = 0; j < 4; j++)
            m[j] = pair_sums(aw, _mm256_sign_epi8(load32(x0 + j * step), w));
        return _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
    }
    const __m256i u = offset_codes_of(k, blk);
    CODEC_UNROLL
    for (size_t j = 0; j < 4; j++)
        m[j] = _mm256_maddubs_epi16(u, load32(x0 + j * step));
    return _mm256_sub_epi32(sums4(m), off);
}

/* offset_of(k) . x for four vectors, as heads4_sums lays it out. */
static inline __m256i heads4_offsets(const Kind k, const unsigned char *x0, size_t step)
{
    __m256i m[4];
    CODEC_UNROLL
    for (size_t j = 0; j < 4; j++)
        m[j] = _mm256_maddubs_epi16(_mm256_set1_epi8((char)offset_of(k)), load32(x0 + j * step));
    return sums4(m);
}

/* One row's dots with four heads, lane j head j. x0: the heads' block 0
 * (head j's block b at x0 + (j * nb + b) * step); off, dx: each block's
 * offset sums and x scales in heads4_sums' lanes. */
static inline __attribute__((always_inline)) __m128 heads4_row(const Kind k, const unsigned char *w,
                                                                const unsigned char *x0, size_t step,
                                                                const __m256i *off, const __m256 *dx, size_t nb,
                                                                size_t n)
{
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        const unsigned char *blk = block_at(k, w, b);
        const __m256i s = heads4_sums(k, blk, x0 + b * step, nb * step, off[b]);
        acc = _mm256_fmadd_ps(block_scale(k, blk, dx[b]), _mm256_cvtepi32_ps(s), acc);
    }
    const __m128 sum = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    return _mm_mul_ps(sum, _mm_set1_ps(row_scale(k, w, n)));
}

/* Four heads (g0 .. g0 + 3) of a group over every row, by
 * heads4_sums; rows four at a time, their results transposed into the
 * heads' rows of y. nb <= QDOT_VEC_BLOCKS / 4. */
static inline __attribute__((always_inline)) void group4_rows(const Kind k, size_t g0, float *y, size_t ld,
                                                              const unsigned char *rows, size_t stride,
                                                              size_t n_rows, XBlocks x, size_t nb, size_t n)
{
    const unsigned char *x0 = x.codes + g0 * nb * x.step;
    __m256i off[QDOT_VEC_BLOCKS / 4];
    __m256 dx[QDOT_VEC_BLOCKS / 4];
    for (size_t b = 0; b < nb; b++) {
        off[b] = offset_codes(k) ? heads4_offsets(k, x0 + b * x.step, nb * x.step) : _mm256_setzero_si256();
        const float *d = x.dx + g0 * nb + b;
        dx[b] = _mm256_setr_ps(d[0], d[nb], d[2 * nb], d[3 * nb], d[0], d[nb], d[2 * nb], d[3 * nb]);
    }
    size_t r = 0;
    for (; r + 4 <= n_rows; r += 4) {
        __m128 s0 = heads4_row(k, rows + r * stride, x0, x.step, off, dx, nb, n);
        __m128 s1 = heads4_row(k, rows + (r + 1) * stride, x0, x.step, off, dx, nb, n);
        __m128 s2 = heads4_row(k, rows + (r + 2) * stride, x0, x.step, off, dx, nb, n);
        __m128 s3 = heads4_row(k, rows + (r + 3) * stride, x0, x.step, off, dx, nb, n);
        _MM_TRANSPOSE4_PS(s0, s1, s2, s3); /* s_j: head j's four rows */
        _mm_storeu_ps(y + g0 * ld + r, s0);
        _mm_storeu_ps(y + (g0 + 1) * ld + r, s1);
        _mm_storeu_ps(y + (g0 + 2) * ld + r, s2);
        _mm_storeu_ps(y + (g0 + 3) * ld + r, s3);
    }
    for (; r < n_rows; r++) {
        float s[4];
        _mm_storeu_ps(s, heads4_row(k, rows + r * stride, x0, x.step, off, dx, nb, n));
        for (size_t j = 0; j < 4; j++)
            y[(g0 + j) * ld + r] = s[j];
    }
}

/* G > 1 (a GQA group scoring keys): the heads four at a time, then the
 * rest. x: the G vectors' blocks, [G][nb] (x.dx too); offs: [G][nb] their
 * offset_sums, 4-bit formats. */
static inline __attribute__((always_inline)) void qdot_group(const Kind k, float *y, size_t ld,
                                                             const unsigned char *rows, size_t stride,
                                                             size_t n_rows, XBlocks x, const __m256i *offs,
                                                             size_t G, size_t nb, size_t n)
{
    size_t g = 0;
    for (; g + 4 <= G; g += 4)
        if (nb <= QDOT_VEC_BLOCKS / 4)
            group4_rows(k, g, y, ld, rows, stride, n_rows, x, nb, n);
        else /* q8_0 rows too long for group4_rows' blocks on the stack */
            group_rows(k, 4, g, y, ld, rows, stride, n_rows, x, offs, nb, n);
    switch (G - g) { /* a constant count in each call */
    case 3: group_rows(k, 3, g, y, ld, rows, stride, n_rows, x, offs, nb, n); break;
    case 2: group_rows(k, 2, g, y, ld, rows, stride, n_rows, x, offs, nb, n); break;
    case 1: group_rows(k, 1, g, y, ld, rows, stride, n_rows, x, offs, nb, n); break;
    default: break;
    }
}

/* The format's loops; called with a constant Kind, one specialisation each. */
static inline __attribute__((always_inline)) void qdot_kind(const Kind k, float *y, size_t ld,
                                                            const unsigned char *rows, size_t stride,
                                                            size_t n_rows, XBlocks x, const __m256i *offs,
                                                            size_t G, size_t nb, size_t n)
{
    if (G > 1)
        qdot_group(k, y, ld, rows, stride, n_rows, x, offs, G, nb, n);
    else
        qdot_rows(k, y, rows, stride, n_rows, x, nb, n);
}

void qdot_avx2(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
               size_t G, size_t n)
{
    const size_t nb = n / QK, xb = format_block_bytes(FMT_Q8_0);
    const int per_row = fmt == FMT_INT4 || fmt == FMT_FP4, offset = fmt != FMT_Q8_0;
    const int vectors = per_row || (offset && G > 1); /* x blocks kept as vectors */
    if (!qdot_takes(fmt) || G * nb > (vectors ? QDOT_VEC_BLOCKS : QDOT_MAX_BLOCKS)) {
        qdot_ref(y, ld, fmt, rows, stride, n_rows, xq, G, n);
        return;
    }
    const Kind k = fmt == FMT_Q8_0 ? K_Q8_0 : fmt == FMT_Q4_0 ? K_Q4_0 : fmt == FMT_INT4 ? K_INT4 : K_FP4;
    const unsigned char *x = xq, *w = rows;
    float dx[QDOT_MAX_BLOCKS];      /* [G][nb] */
    __m256i order[QDOT_VEC_BLOCKS]; /* int4, fp4: each block's codes, the even elements, then the odd */
    __m256i offs[QDOT_VEC_BLOCKS];  /* a group's offset_sums, for the 4-bit formats */
    for (size_t b = 0; b < G * nb; b++) {
        dx[b] = half_at(x + b * xb);
        if (per_row)
            order[b] = even_then_odd(load32(x + b * xb + 2));
        if (offset && G > 1)
            offs[b] = offset_sums(k, per_row ? order[b] : load32(x + b * xb + 2));
    }
    const XBlocks xs = per_row ? (XBlocks){ (const unsigned char *)order, sizeof order[0], dx }
                               : (XBlocks){ x + 2, xb, dx };
    switch (k) { /* a constant Kind in each call: one specialisation each */
    case K_Q8_0: qdot_kind(K_Q8_0, y, ld, w, stride, n_rows, xs, offs, G, nb, n); break;
    case K_Q4_0: qdot_kind(K_Q4_0, y, ld, w, stride, n_rows, xs, offs, G, nb, n); break;
    case K_INT4: qdot_kind(K_INT4, y, ld, w, stride, n_rows, xs, offs, G, nb, n); break;
    case K_FP4: qdot_kind(K_FP4, y, ld, w, stride, n_rows, xs, offs, G, nb, n); break;
    }
}
