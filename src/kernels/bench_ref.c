/* bench_ref.c: the portable read loops (bench_loops.h, one float a load,
 * no prefetch: C11 has none), which every CPU runs, and the reference sum
 * every read loop must equal. */
#include <stddef.h>

#define LOOP_VEC float
#define LOOP_WIDTH 1
#define LOOP_ZERO() 0.0f
#define LOOP_LOAD(p) (*(p))
#define LOOP_ADD(a, b) ((a) + (b))
#define LOOP_SUM(v) ((double)(v))
#define LOOP_NAME "scalar"
#define LOOP_TABLE bench_loops_ref
#include "kernels/bench_loops.h"

double bench_sum_ref(const float *p, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += p[i];
    return s;
}
