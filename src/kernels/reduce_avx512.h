/* reduce_avx512.h: sixteen horizontal sums at once, and the store of a
 * block of sums head by head (private to the AVX-512 codec files, built
 * with their flags). */
#ifndef KVSCOPE_KERNELS_REDUCE_AVX512_H
#define KVSCOPE_KERNELS_REDUCE_AVX512_H

#include <immintrin.h>

#include "kernels/codec_isa.h" /* CODEC_UNROLL */

/* Lane k of the result = the sum of a[k]'s lanes, k < 16: a transposed
 * reduction, 15 adds for 16 sums (where one reduce_add each costs 4). */
static inline __attribute__((always_inline)) __m512 reduce16(const __m512 *a)
{
    __m512 x[16], t[8], u[4];
    CODEC_UNROLL
    for (int s = 0; s < 16; s++) /* slot 4j + m takes a[4m + j]: the shuffles below transpose it back */
        x[s] = a[(s % 4) * 4 + s / 4];
    CODEC_UNROLL
    for (int k = 0; k < 8; k++) /* 128-bit quarters: [a0+a2, a1+a3, b0+b2, b1+b3] */
        t[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0x44),
                             _mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0xee));
    CODEC_UNROLL
    for (int k = 0; k < 4; k++) /* quarter m: four lanes of source 4k + m */
        u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * k], t[2 * k + 1], 0x88),
                             _mm512_shuffle_f32x4(t[2 * k], t[2 * k + 1], 0xdd));
    const __m512 w0 = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x44), _mm512_shuffle_ps(u[0], u[1], 0xee));
    const __m512 w1 = _mm512_add_ps(_mm512_shuffle_ps(u[2], u[3], 0x44), _mm512_shuffle_ps(u[2], u[3], 0xee));
    return _mm512_add_ps(_mm512_shuffle_ps(w0, w1, 0x88), _mm512_shuffle_ps(w0, w1, 0xdd));
}

/* y[g * ld + r] = lane g * RB + r of s (RB = 16 / GB rows a head), g < GB,
 * r < nr: each head's RB sums in one store where the block is whole. */
static inline __attribute__((always_inline)) void store_heads(const size_t GB, float *y, size_t ld, __m512 s,
                                                              size_t nr)
{
    const size_t RB = 16 / GB;
    if (nr < RB) {
        float t[16];
        _mm512_storeu_ps(t, s);
        for (size_t g = 0; g < GB; g++)
            for (size_t r = 0; r < nr; r++)
                y[g * ld + r] = t[g * RB + r];
    } else if (GB == 1) {
        _mm512_storeu_ps(y, s);
    } else if (GB == 2) {
        _mm256_storeu_ps(y, _mm512_castps512_ps256(s));
        _mm256_storeu_ps(y + ld, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    } else {
        _mm_storeu_ps(y, _mm512_extractf32x4_ps(s, 0));
        _mm_storeu_ps(y + ld, _mm512_extractf32x4_ps(s, 1));
        _mm_storeu_ps(y + 2 * ld, _mm512_extractf32x4_ps(s, 2));
        _mm_storeu_ps(y + 3 * ld, _mm512_extractf32x4_ps(s, 3));
    }
}

#endif
