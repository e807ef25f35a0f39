/* bench_avx512.c: the plain reads that measure bandwidth, 64-byte loads
 * (built with the AVX-512 flags; bench.c calls them only where they run).
 * Each returns the sum of p[0..n), n a multiple of 256, p 64-byte aligned;
 * their accumulators are independent, so that only memory limits them. */
#include <immintrin.h>

#include "kernels/bench_mem.h"

/* Software prefetch distance: far enough ahead to cover DRAM latency. */
#define PF_FLOATS 1024

static double finish(__m512 a)
{
    return _mm512_reduce_add_ps(a);
}

/* 64 floats an iteration into 4 accumulators. */
static double sum_x1(const float *p, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    }
    return finish(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* 128 floats an iteration into 8 accumulators; with prefetch, each line
 * PF_FLOATS ahead is asked for first. */
static inline double sum_x2(const float *p, size_t n, int prefetch)
{
    __m512 a[8];
    for (int j = 0; j < 8; j++)
        a[j] = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 128) {
        if (prefetch)
            for (int j = 0; j < 8; j++)
                _mm_prefetch((const char *)(p + i + PF_FLOATS + 16 * j), _MM_HINT_T0);
        for (int j = 0; j < 8; j++)
            a[j] = _mm512_add_ps(a[j], _mm512_load_ps(p + i + 16 * j));
    }
    for (int j = 1; j < 8; j++)
        a[0] = _mm512_add_ps(a[0], a[j]);
    return finish(a[0]);
}

static double sum_x2_plain(const float *p, size_t n)
{
    return sum_x2(p, n, 0);
}

static double sum_x2_prefetch(const float *p, size_t n)
{
    return sum_x2(p, n, 1);
}

/* Two streams at once, the halves of the array, 64 floats of each an
 * iteration into 4 accumulators each: two pages open, two prefetchers. */
static double sum_streams(const float *p, size_t n)
{
    const float *q = p + n / 2;
    __m512 a[8];
    for (int j = 0; j < 8; j++)
        a[j] = _mm512_setzero_ps();
    for (size_t i = 0; i < n / 2; i += 64)
        for (int j = 0; j < 4; j++) {
            a[j] = _mm512_add_ps(a[j], _mm512_load_ps(p + i + 16 * j));
            a[4 + j] = _mm512_add_ps(a[4 + j], _mm512_load_ps(q + i + 16 * j));
        }
    for (int j = 1; j < 8; j++)
        a[0] = _mm512_add_ps(a[0], a[j]);
    return finish(a[0]);
}

const BenchLoop bench_loops_avx512[BENCH_N_LOOPS] = {
    { "avx512, 4 accumulators", sum_x1 },
    { "avx512, 8 accumulators", sum_x2_plain },
    { "avx512, 8 accumulators, prefetch", sum_x2_prefetch },
    { "avx512, 2 streams", sum_streams },
};
