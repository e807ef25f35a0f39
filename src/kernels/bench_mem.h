/* bench_mem.h: what the bench files share (private to kernels/bench*.c):
 * aligned buffers and seeded test values. */
#ifndef KVSCOPE_KERNELS_BENCH_MEM_H
#define KVSCOPE_KERNELS_BENCH_MEM_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/bench.h"
#include "util/lines.h"

/* The read loops, one table per ISA file (bench_loops.h), each ended by
 * { NULL, NULL }. Call the SIMD ones only where the CPU runs that ISA. */
extern const BenchLoop bench_loops_ref[];
extern const BenchLoop bench_loops_avx2[];
extern const BenchLoop bench_loops_avx512[];

/* bytes (> 0), 64-byte aligned, uninitialized; NULL with e set on failure. */
static inline void *bench_alloc(size_t bytes, const char *what, Err *e)
{
    void *p = lines_alloc(bytes);
    if (!p)
        err_set(e, ERR_RUNTIME, "bench: cannot allocate %zu bytes for %s", bytes, what);
    return p;
}

/* splitmix64: a small seeded generator, the same values on every machine. */
static inline uint64_t bench_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static inline double bench_uniform(uint64_t *state)
{
    return ((double)(bench_rand(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* x[0..n) ~ N(0, 1) (Box-Muller). */
static inline void bench_gaussian(float *x, size_t n, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) {
        double u = bench_uniform(state), v = bench_uniform(state);
        x[i] = (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
    }
}

/* max |x - ref| / max |ref| over n values (|x - ref| when ref is all 0). */
static inline double bench_rel_diff(const float *x, const float *ref, size_t n)
{
    double d = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double a = fabs((double)x[i] - ref[i]);
        d = a > d || a != a ? a : d; /* a NaN is the worst difference */
        scale = fmax(scale, fabs((double)ref[i]));
    }
    return scale > 0 ? d / scale : d;
}

#endif
