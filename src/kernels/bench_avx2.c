/* bench_avx2.c: the plain read that measures bandwidth, 32-byte loads
 * (built with the AVX2 flags; bench.c calls it only where they run). */
#include <immintrin.h>

#include "kernels/bench_mem.h"

/* The sum of p[0..n), n a multiple of 64, p 64-byte aligned: eight
 * independent accumulators, so that only memory limits the loop. */
double bench_sum_avx2(const float *p, size_t n)
{
    __m256 a[8];
    for (int j = 0; j < 8; j++)
        a[j] = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i += 64)
        for (int j = 0; j < 8; j++)
            a[j] = _mm256_add_ps(a[j], _mm256_load_ps(p + i + 8 * j));
    for (int j = 1; j < 8; j++)
        a[0] = _mm256_add_ps(a[0], a[j]);
    float lanes[8];
    _mm256_storeu_ps(lanes, a[0]);
    double s = 0;
    for (int j = 0; j < 8; j++)
        s += lanes[j];
    return s;
}
