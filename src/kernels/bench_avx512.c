/* bench_avx512.c: the plain read that measures bandwidth, 64-byte loads
 * (built with the AVX-512 flags; bench.c calls it only where they run). */
#include <immintrin.h>

#include "kernels/bench_mem.h"

/* The sum of p[0..n), n a multiple of 64, p 64-byte aligned: four
 * independent accumulators, so that only memory limits the loop. */
double bench_sum_avx512(const float *p, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}
