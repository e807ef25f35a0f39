/* bench_avx2.c: the read loops (bench_loops.h) with 32-byte loads, built
 * with the AVX2 flags; bench.c lists them only where they run. */
#include <immintrin.h>

/* v's 8 lanes added in double. */
static inline double lanes_sum(__m256 v)
{
    float l[8];
    _mm256_storeu_ps(l, v);
    double s = 0;
    for (int j = 0; j < 8; j++)
        s += l[j];
    return s;
}

#define LOOP_VEC __m256
#define LOOP_WIDTH 8
#define LOOP_ZERO() _mm256_setzero_ps()
#define LOOP_LOAD(p) _mm256_load_ps(p)
#define LOOP_ADD(a, b) _mm256_add_ps(a, b)
#define LOOP_SUM(v) lanes_sum(v)
#define LOOP_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#define LOOP_NAME "avx2"
#define LOOP_TABLE bench_loops_avx2
#include "kernels/bench_loops.h"
