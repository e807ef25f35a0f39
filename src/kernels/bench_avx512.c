/* bench_avx512.c: the read loops (bench_loops.h) with 64-byte loads, built
 * with the AVX-512 flags; bench.c lists them only where they run. */
#include <immintrin.h>

#define LOOP_VEC __m512
#define LOOP_WIDTH 16
#define LOOP_ZERO() _mm512_setzero_ps()
#define LOOP_LOAD(p) _mm512_load_ps(p)
#define LOOP_ADD(a, b) _mm512_add_ps(a, b)
#define LOOP_SUM(v) ((double)_mm512_reduce_add_ps(v)) /* small integers: exact in float */
#define LOOP_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#define LOOP_NAME "avx512"
#define LOOP_TABLE bench_loops_avx512
#include "kernels/bench_loops.h"
