/* qdot_group_avx2.c: the integer dot of a GQA group's G > 1 query heads,
 * rounded to q8_0, with key rows of q8_0, q4_0, int4 or fp4 (QDotFn's
 * group form, qdot_avx2.c), AVX2: each row's block is unpacked once for
 * the group, and four heads' results share one register (heads4_sums). */
#include "kernels/qdot_blocks_avx2.h"

/* GN heads of a group (g0 .. g0 + GN - 1) over every row: each row's block
 * is loaded, unpacked and scaled once, then dotted with the GN vectors'
 * blocks, one accumulator each (GN independent chains). GN is a constant
 * (1 to 3, the heads group4_rows leaves): the accumulators then live in
 * registers, not on the stack. */
static inline __attribute__((always_inline)) void group_rows(const Kind k, const size_t GN, size_t g0, float *y,
                                                             size_t ld, const unsigned char *rows, size_t stride,
                                                             size_t n_rows, XBlocks x, const __m256i *offs,
                                                             size_t nb, size_t n, const RowsAhead *ahead)
{
    for (size_t r = 0; r < n_rows; r++) {
        rows_ahead_prefetch(ahead, r, 1);
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

/* Unsigned codes u times four vectors x (x0, x0 + step, ..), in sums4's
 * lanes. */
static inline __m256i codes_times4(__m256i u, const unsigned char *x0, size_t step)
{
    __m256i m[4];
    CODEC_UNROLL
    for (size_t j = 0; j < 4; j++)
        m[j] = _mm256_maddubs_epi16(u, load32(x0 + j * step));
    return sums4(m);
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
    if (k == K_Q8_0) {
        const __m256i w = load32(blk + 2), aw = _mm256_sign_epi8(w, w);
        __m256i m[4];
        CODEC_UNROLL
        for (size_t j = 0; j < 4; j++)
            m[j] = pair_sums(aw, _mm256_sign_epi8(load32(x0 + j * step), w));
        return _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
    }
    return _mm256_sub_epi32(codes_times4(offset_codes_of(k, blk), x0, step), off);
}

/* offset_of(k) . x for four vectors, as heads4_sums lays it out. */
static inline __m256i heads4_offsets(const Kind k, const unsigned char *x0, size_t step)
{
    return codes_times4(_mm256_set1_epi8((char)offset_of(k)), x0, step);
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

/* Rows r .. r + 3 against four heads (g0 .. g0 + 3): their results
 * transposed into the heads' rows of y. */
static inline __attribute__((always_inline)) void heads4_block(const Kind k, size_t g0, float *y, size_t ld,
                                                               const unsigned char *rows, size_t stride, size_t r,
                                                               const unsigned char *x0, size_t step,
                                                               const __m256i *off, const __m256 *dx, size_t nb,
                                                               size_t n, const RowsAhead *ahead)
{
    rows_ahead_prefetch(ahead, r, 4);
    __m128 s0 = heads4_row(k, rows + r * stride, x0, step, off, dx, nb, n);
    __m128 s1 = heads4_row(k, rows + (r + 1) * stride, x0, step, off, dx, nb, n);
    __m128 s2 = heads4_row(k, rows + (r + 2) * stride, x0, step, off, dx, nb, n);
    __m128 s3 = heads4_row(k, rows + (r + 3) * stride, x0, step, off, dx, nb, n);
    _MM_TRANSPOSE4_PS(s0, s1, s2, s3); /* s_j: head j's four rows */
    _mm_storeu_ps(y + g0 * ld + r, s0);
    _mm_storeu_ps(y + (g0 + 1) * ld + r, s1);
    _mm_storeu_ps(y + (g0 + 2) * ld + r, s2);
    _mm_storeu_ps(y + (g0 + 3) * ld + r, s3);
}

/* Four heads (g0 .. g0 + 3) of a group over every row, by heads4_sums:
 * rows four at a time, from QDOT_STREAMS parts of them in turn, then the
 * rows past the parts. nb <= QDOT_VEC_BLOCKS / 4. */
static inline __attribute__((always_inline)) void group4_rows(const Kind k, size_t g0, float *y, size_t ld,
                                                              const unsigned char *rows, size_t stride,
                                                              size_t n_rows, XBlocks x, size_t nb, size_t n,
                                                              const RowsAhead *ahead)
{
    const unsigned char *x0 = x.codes + g0 * nb * x.step;
    __m256i off[QDOT_VEC_BLOCKS / 4];
    __m256 dx[QDOT_VEC_BLOCKS / 4];
    for (size_t b = 0; b < nb; b++) {
        off[b] = offset_codes(k) ? heads4_offsets(k, x0 + b * x.step, nb * x.step) : _mm256_setzero_si256();
        const float *d = x.dx + g0 * nb + b;
        dx[b] = _mm256_setr_ps(d[0], d[nb], d[2 * nb], d[3 * nb], d[0], d[nb], d[2 * nb], d[3 * nb]);
    }
    const size_t span = n_rows / (QDOT_STREAMS * 4) * 4; /* a part's rows */
    for (size_t i = 0; i < span; i += 4)
        for (size_t s = 0; s < QDOT_STREAMS; s++)
            heads4_block(k, g0, y, ld, rows, stride, s * span + i, x0, x.step, off, dx, nb, n, ahead);
    size_t r = QDOT_STREAMS * span;
    for (; r + 4 <= n_rows; r += 4)
        heads4_block(k, g0, y, ld, rows, stride, r, x0, x.step, off, dx, nb, n, ahead);
    rows_ahead_prefetch(ahead, r, n_rows - r);
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
                                                             size_t G, size_t nb, size_t n, const RowsAhead *ahead)
{
    size_t g = 0;
    for (; g + 4 <= G; g += 4, ahead = NULL) /* the first block of heads prefetches the rows ahead */
        if (nb <= QDOT_VEC_BLOCKS / 4)
            group4_rows(k, g, y, ld, rows, stride, n_rows, x, nb, n, ahead);
        else /* q8_0 rows too long for group4_rows' blocks on the stack */
            group_rows(k, 4, g, y, ld, rows, stride, n_rows, x, offs, nb, n, ahead);
    switch (G - g) { /* a constant count in each call */
    case 3: group_rows(k, 3, g, y, ld, rows, stride, n_rows, x, offs, nb, n, ahead); break;
    case 2: group_rows(k, 2, g, y, ld, rows, stride, n_rows, x, offs, nb, n, ahead); break;
    case 1: group_rows(k, 1, g, y, ld, rows, stride, n_rows, x, offs, nb, n, ahead); break;
    default: break;
    }
}

void qdot_group_avx2(Kind k, float *y, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows,
                     XBlocks x, const __m256i *offs, size_t G, size_t nb, size_t n, const RowsAhead *ahead)
{
    switch (k) { /* a constant Kind in each call: one specialisation each */
    case K_Q8_0: qdot_group(K_Q8_0, y, ld, rows, stride, n_rows, x, offs, G, nb, n, ahead); break;
    case K_Q4_0: qdot_group(K_Q4_0, y, ld, rows, stride, n_rows, x, offs, G, nb, n, ahead); break;
    case K_INT4: qdot_group(K_INT4, y, ld, rows, stride, n_rows, x, offs, G, nb, n, ahead); break;
    case K_FP4: qdot_group(K_FP4, y, ld, rows, stride, n_rows, x, offs, G, nb, n, ahead); break;
    }
}
