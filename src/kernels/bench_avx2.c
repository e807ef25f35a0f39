/* bench_avx2.c: the plain reads that measure bandwidth, 32-byte loads
 * (built with the AVX2 flags; bench.c calls them only where they run).
 * Each returns the sum of p[0..n), n a multiple of 256, p 64-byte aligned;
 * their accumulators are independent, so that only memory limits them. */
#include <immintrin.h>

#include "kernels/bench_mem.h"

/* Software prefetch distance: far enough ahead to cover DRAM latency. */
#define PF_FLOATS 1024

static double finish(__m256 *a, int n_acc)
{
    for (int j = 1; j < n_acc; j++)
        a[0] = _mm256_add_ps(a[0], a[j]);
    float lanes[8];
    _mm256_storeu_ps(lanes, a[0]);
    double s = 0;
    for (int j = 0; j < 8; j++)
        s += lanes[j];
    return s;
}

/* 64 floats an iteration into 8 accumulators; with prefetch, each line
 * PF_FLOATS ahead is asked for first. */
static inline double sum_x1(const float *p, size_t n, int prefetch)
{
    __m256 a[8];
    for (int j = 0; j < 8; j++)
        a[j] = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i += 64) {
        if (prefetch)
            for (int j = 0; j < 4; j++)
                _mm_prefetch((const char *)(p + i + PF_FLOATS + 16 * j), _MM_HINT_T0);
        for (int j = 0; j < 8; j++)
            a[j] = _mm256_add_ps(a[j], _mm256_load_ps(p + i + 8 * j));
    }
    return finish(a, 8);
}

static double sum_x1_plain(const float *p, size_t n)
{
    return sum_x1(p, n, 0);
}

static double sum_x1_prefetch(const float *p, size_t n)
{
    return sum_x1(p, n, 1);
}

/* 128 floats an iteration, two loads added first, into 8 accumulators. */
static double sum_x2(const float *p, size_t n)
{
    __m256 a[8];
    for (int j = 0; j < 8; j++)
        a[j] = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i += 128)
        for (int j = 0; j < 8; j++)
            a[j] = _mm256_add_ps(a[j], _mm256_add_ps(_mm256_load_ps(p + i + 8 * j),
                                                     _mm256_load_ps(p + i + 64 + 8 * j)));
    return finish(a, 8);
}

/* Two streams at once, the halves of the array, 32 floats of each an
 * iteration into 4 accumulators each: two pages open, two prefetchers. */
static double sum_streams(const float *p, size_t n)
{
    const float *q = p + n / 2;
    __m256 a[8];
    for (int j = 0; j < 8; j++)
        a[j] = _mm256_setzero_ps();
    for (size_t i = 0; i < n / 2; i += 32)
        for (int j = 0; j < 4; j++) {
            a[j] = _mm256_add_ps(a[j], _mm256_load_ps(p + i + 8 * j));
            a[4 + j] = _mm256_add_ps(a[4 + j], _mm256_load_ps(q + i + 8 * j));
        }
    return finish(a, 8);
}

const BenchLoop bench_loops_avx2[BENCH_N_LOOPS] = {
    { "avx2, 8 accumulators", sum_x1_plain },
    { "avx2, 8 accumulators, 2 loads each", sum_x2 },
    { "avx2, 8 accumulators, prefetch", sum_x1_prefetch },
    { "avx2, 2 streams", sum_streams },
};
