/* bench_loops.h: the read loops that measure bandwidth, written once and
 * included by each ISA's file (bench_ref.c, bench_avx2.c, bench_avx512.c),
 * which first defines:
 *   LOOP_VEC, LOOP_WIDTH  the vector type and the floats in one
 *   LOOP_ZERO(), LOOP_LOAD(p), LOOP_ADD(a, b)  (p aligned to the vector)
 *   LOOP_SUM(v)           v's lanes added, as a double
 *   LOOP_PREFETCH(p)      optional: a software prefetch of p's line; without
 *                         it the table has no prefetch loops
 *   LOOP_NAME, LOOP_TABLE "avx2" and the table's name (bench_mem.h)
 * The loops differ only in how they keep memory busy: 1, 2, 4 or 8
 * streams, with or without prefetch. Each sums p[0..n) (n a multiple of 256,
 * p 64-byte aligned), every float once. */
#include "kernels/bench_mem.h"
#include "util/human.h"

#define LOOP_ACC 8                         /* independent accumulators: only memory limits the loop */
#define LOOP_STEP (LOOP_ACC * LOOP_WIDTH)  /* floats one stream adds a step */
#define LOOP_BLOCK 16384                   /* floats (64 KiB) each stream reads before the streams move on */
#define LOOP_AHEAD 1024                    /* prefetch distance in floats: 4 KiB ahead of each stream */

/* Add the LOOP_STEP floats at p + t * LOOP_BLOCK, for t < k, into a[]:
 * vector j of every stream before vector j + 1, so the k streams advance
 * together; prefetch first asks for each stream's lines LOOP_AHEAD on. */
static inline void loop_step(LOOP_VEC *a, const float *p, size_t k, int prefetch)
{
#ifdef LOOP_PREFETCH
    if (prefetch)
        for (size_t t = 0; t < k; t++)
            for (size_t o = 0; o < LOOP_STEP; o += 16)
                LOOP_PREFETCH(p + t * LOOP_BLOCK + LOOP_AHEAD + o);
#else
    (void)prefetch;
#endif
    for (int j = 0; j < LOOP_ACC; j++)
        for (size_t t = 0; t < k; t++)
            a[j] = LOOP_ADD(a[j], LOOP_LOAD(p + t * LOOP_BLOCK + j * LOOP_WIDTH));
}

/* a[]'s total, a[] zeroed: emptied every group, the float partial sums stay
 * small, so the sum is exact for the buffer's small integers at any size. */
static inline double loop_flush(LOOP_VEC *a)
{
    double s = 0;
    for (int j = 0; j < LOOP_ACC; j++) {
        s += LOOP_SUM(a[j]);
        a[j] = LOOP_ZERO();
    }
    return s;
}

/* k streams side by side: each group of k blocks is read a step of every
 * block at a time, so the hardware follows k sequential streams (as a
 * matvec reading several rows, or attention its K and V); what is left
 * after the last whole group, as one stream. */
static inline double loop_sum(const float *p, size_t n, size_t k, int prefetch)
{
    LOOP_VEC a[LOOP_ACC];
    for (int j = 0; j < LOOP_ACC; j++)
        a[j] = LOOP_ZERO();
    const size_t group = k * LOOP_BLOCK;
    double s = 0;
    size_t g = 0;
    for (; g + group <= n; g += group) {
        for (size_t i = 0; i < LOOP_BLOCK; i += LOOP_STEP)
            loop_step(a, p + g + i, k, prefetch);
        s += loop_flush(a);
    }
    for (; g < n; g += LOOP_STEP)
        loop_step(a, p + g, 1, prefetch);
    return s + loop_flush(a);
}

static double loop_1(const float *p, size_t n) { return loop_sum(p, n, 1, 0); }
static double loop_2(const float *p, size_t n) { return loop_sum(p, n, 2, 0); }
static double loop_4(const float *p, size_t n) { return loop_sum(p, n, 4, 0); }
static double loop_8(const float *p, size_t n) { return loop_sum(p, n, 8, 0); }
#ifdef LOOP_PREFETCH
static double loop_1p(const float *p, size_t n) { return loop_sum(p, n, 1, 1); }
static double loop_2p(const float *p, size_t n) { return loop_sum(p, n, 2, 1); }
static double loop_4p(const float *p, size_t n) { return loop_sum(p, n, 4, 1); }
static double loop_8p(const float *p, size_t n) { return loop_sum(p, n, 8, 1); }
#endif

#define LOOP_LABEL(streams) LOOP_NAME " " STR_OF(LOOP_ACC) "-acc " streams

const BenchLoop LOOP_TABLE[] = {
    { LOOP_LABEL("1-stream"), loop_1 },
    { LOOP_LABEL("2-stream"), loop_2 },
    { LOOP_LABEL("4-stream"), loop_4 },
    { LOOP_LABEL("8-stream"), loop_8 },
#ifdef LOOP_PREFETCH
    { LOOP_LABEL("1-stream prefetch"), loop_1p },
    { LOOP_LABEL("2-stream prefetch"), loop_2p },
    { LOOP_LABEL("4-stream prefetch"), loop_4p },
    { LOOP_LABEL("8-stream prefetch"), loop_8p },
#endif
    { NULL, NULL },
};
