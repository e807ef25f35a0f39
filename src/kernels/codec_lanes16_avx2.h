/* codec_lanes16_avx2.h: the f32 and f16 dot forms of codec_avx2.c, summed
 * in the AVX-512 codec's order (codec_dot_chains, lanes16.h) so that a
 * score has the same bits on every ISA: each 16-value chunk is two
 * registers, lo (values 0-7 of it) and hi (8-15), in two, or four, chains
 * of accumulators; the chains added lane by lane in turn, then lo + hi and
 * the tree. Private to codec_avx2.c, included after codec_tiles.h (its
 * Row, ChunkFn, V helpers and CHEAP_DOTS_OWN). */
#ifndef KVSCOPE_KERNELS_CODEC_LANES16_AVX2_H
#define KVSCOPE_KERNELS_CODEC_LANES16_AVX2_H

#include "kernels/lanes16.h"

/* The lanes' sum of lo (lanes 0-7) and hi (8-15) in lanes16.h's tree. */
INLINE float hsum16(V lo, V hi)
{
    const V v = v_add(lo, hi);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* q[0..n) . decode(row) in `chains` chains (2 or 4). */
INLINE float dot_lanes16(ChunkFn chunk, const float *q, const Row *row, size_t n, size_t chains)
{
    V acc[4][2];
    UNROLL_16
    for (size_t k = 0; k < 4; k++)
        acc[k][0] = acc[k][1] = v_zero();
    const size_t whole = n / LANES, grouped = n / (chains * LANES) * chains;
    for (size_t c = 0; c < whole; c++) {
        const size_t k = c < grouped ? c % chains : 0, i = c * LANES;
        acc[k][0] = v_fma(v_load(q + i), chunk(row, i, W), acc[k][0]);
        acc[k][1] = v_fma(v_load(q + i + W), chunk(row, i + W, W), acc[k][1]);
    }
    if (whole * LANES < n) { /* the last chunk, partial, into chain 0; a missing lane adds 0 * 0 */
        const size_t i = whole * LANES, left = n - i;
        const size_t m = left < W ? left : W;
        acc[0][0] = v_fma(v_load_part(q + i, m), chunk(row, i, m), acc[0][0]);
        acc[0][1] = left > W ? v_fma(v_load_part(q + i + W, left - W), chunk(row, i + W, left - W), acc[0][1])
                             : v_add(acc[0][1], v_zero());
    }
    for (size_t k = 1; k < chains; k++) {
        acc[0][0] = v_add(acc[0][0], acc[k][0]);
        acc[0][1] = v_add(acc[0][1], acc[k][1]);
    }
    return hsum16(acc[0][0], acc[0][1]);
}

/* The tile form: every row's G scores; the rows ahead prefetched 8 rows at
 * a time, while these are scored. */
INLINE void dot_rows_lanes16(ChunkFn chunk, float *out, size_t ld, const float *q, size_t G, const void *rows,
                             size_t stride, size_t n_rows, size_t n, const RowsAhead *ahead)
{
    const size_t chains = codec_dot_chains(n, G);
    for (size_t r = 0; r < n_rows; r++) {
        if (r % 8 == 0)
            rows_ahead_prefetch(ahead, r, n_rows - r < 8 ? n_rows - r : 8);
        const Row row = row_of((const unsigned char *)rows + r * stride, n, 0);
        for (size_t g = 0; g < G; g++)
            out[g * ld + r] = dot_lanes16(chunk, q + g * n, &row, n, chains);
    }
}

/* Rows of 128 values, the common head size, with n a constant. */
#define LANES16_DOTS(fmt)                                                                                   \
    static void dot_rows_##fmt(float *out, size_t ld, const float *q, size_t G, const void *rows,           \
                               size_t stride, size_t n_rows, size_t n, const RowsAhead *ahead)              \
    {                                                                                                       \
        if (n == 128)                                                                                       \
            dot_rows_lanes16(chunk_##fmt, out, ld, q, G, rows, stride, n_rows, 128, ahead);                 \
        else                                                                                                \
            dot_rows_lanes16(chunk_##fmt, out, ld, q, G, rows, stride, n_rows, n, ahead);                   \
    }                                                                                                       \
    static void dot_##fmt(float *out, const float *q, size_t G, const void *row, size_t n)                  \
    {                                                                                                       \
        dot_rows_##fmt(out, 1, q, G, row, 0, 1, n, NULL);                                                   \
    }

LANES16_DOTS(f32)
LANES16_DOTS(f16)

#endif
