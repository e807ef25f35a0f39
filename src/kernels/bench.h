/* bench.h: timing the kernels against this machine's memory (`kvscope bench`).
 *
 * Three measurements, all on the calling thread:
 *   1. read bandwidth: a buffer far larger than the last-level cache, summed
 *      by every plain read loop the CPU runs, the fastest setting the figure
 *      (and, to compare, by the f32 dot kernel);
 *   2. decode attention over one KV head, per format and form, cold (each
 *      step reads the next of many identical copies of K/V, so it comes
 *      from memory) or warm (the same copy every step);
 *   3. a matrix-vector product by the kernels (or any BenchMatvecFn: the
 *      app adds GSL's CBLAS and OpenBLAS, app/bench_blas.h), cold the same way.
 * Each function here times one repetition; the caller spreads repetitions
 * over its run and takes their median (bench_summarize). Every result is
 * checked against a reference, so a broken kernel cannot look fast.
 * Nothing here prints: the caller reports.
 *
 * Buffers are 64-byte aligned. A function that allocates fails with
 * ERR_RUNTIME when memory runs out; its _free is safe after a failure and
 * on a zeroed struct. */
#ifndef KVSCOPE_KERNELS_BENCH_H
#define KVSCOPE_KERNELS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* Largest |x - ref| over max |ref| accepted before a result is called
 * wrong: float summation differs by ~1e-6 here; a broken kernel by far more. */
#define BENCH_TOLERANCE 1e-3

/* Median of v[0..n); sorts v in place. 0 when n is 0. */
double bench_median(double *v, size_t n);

/* One timed repetition of a measurement, or (bench_summarize) all of them. */
typedef struct {
    double seconds;       /* time of one operation (one step, one matvec, one full read); summarized: median */
    double seconds_min;   /* summarized: the fastest repetition's (else = seconds) */
    double seconds_max;   /* summarized: the slowest repetition's */
    uint64_t bytes;       /* bytes one operation reads from its data (attention: Counters.kv_bytes_read) */
    uint64_t view_bytes;  /* attention, materialize form: Counters.view_bytes, the f32 view written and read */
    size_t ops_per_rep;   /* operations timed in the repetition */
    double max_rel_diff;  /* max |out - ref| / max |ref|; summarized: the worst (NaN stays NaN) */
    double f32_seconds;   /* cold attention: the f32 step's time, its steps taken in turn with these
                             (bench_attend_cold); summarized: median; 0 where not measured */
} BenchResult;

/* The most repetitions bench_summarize takes the median of. */
#define BENCH_MAX_REPS 100

/* rounds[0..n) (n <= BENCH_MAX_REPS) -> *out: the median time (and f32_seconds), the fastest
 * and slowest, the worst difference; bytes from rounds[0]. Repetitions are meant to be
 * spread over a run (one per round), so that a slow spell of a shared
 * machine touches every figure alike instead of a few. */
void bench_summarize(BenchResult *out, const BenchResult *rounds, size_t n);

/* --- 1. read bandwidth ---------------------------------------------------- */

typedef struct {
    float *buf;  /* [n]: small integers, sums exact up to 2^31 values (bench_read_init) */
    size_t n;    /* a whole number of 16 KiB chunks */
    float *ones; /* [4096]: the other operand, 16 KiB that stay in L1 */
} BenchRead;

/* A buffer of `bytes` (rounded down to 16 KiB chunks, at least one; at
 * most 8 GiB, where the sums stop being exact), every page touched. Free with bench_read_free (also after a failure). */
int bench_read_init(BenchRead *b, size_t bytes, Err *e);
void bench_read_free(BenchRead *b);

/* A plain read loop: the sum of p[0..n), n a multiple of 256, p 64-byte
 * aligned, every float read once. The loops differ in how they keep memory
 * busy (vector width, streams, software prefetch); the bandwidth is the
 * best of them. */
typedef struct {
    const char *name; /* "avx2 8-acc 2-stream prefetch" */
    double (*sum)(const float *p, size_t n);
} BenchLoop;

/* The most read loops bench_read_loops gives. */
#define BENCH_MAX_LOOPS 24

/* The reference every read loop must equal: p[0..n) summed in order, in double. */
double bench_sum_ref(const float *p, size_t n);

/* The read loops k's CPU runs up to k's ISA: the portable scalar ones, then
 * AVX2's (k avx2 or avx512), then AVX-512's (k avx512); NEON and ref have
 * the scalar ones. Copies them into out[BENCH_MAX_LOOPS]; returns how many. */
size_t bench_read_loops(const Kernels *k, BenchLoop *out);

/* Read the whole buffer once and sum it: with loop l, or with l NULL
 * through k->codec[FMT_F32].dot, 16 KiB at a time against a vector that
 * stays in L1 (how close the dot kernel comes to the loops).
 * r->max_rel_diff checks the sum against the known total. */
void bench_read(const Kernels *k, const BenchLoop *l, const BenchRead *b, BenchResult *r);

/* Every read loop of bench_read_loops(k) reps times (at most
 * BENCH_MAX_REPS): their medians into out[] and their names into names[]
 * (BENCH_MAX_LOOPS each); returns how many were measured. */
size_t bench_read_each(const Kernels *k, const BenchRead *b, size_t reps, BenchResult *out, const char **names);

/* The index of the fastest of r[0..n) (the smallest median time). */
size_t bench_fastest(const BenchResult *r, size_t n);

/* --- 2. decode attention ---------------------------------------------------- */

/* One format's K and V rows for one context: seeded pseudo-random values
 * (about N(0, 1)) quantized with the reference codec, in one copy. */
typedef struct {
    Format fmt;
    size_t context, head_dim;
    size_t row_bytes;      /* format_row_bytes(fmt, head_dim) */
    size_t copy_bytes;     /* context K rows, then (64-byte aligned) context V rows */
    unsigned char *master; /* [copy_bytes] */
} BenchKv;

int bench_kv_init(BenchKv *kv, Format fmt, size_t context, size_t head_dim, uint64_t seed, Err *e);
void bench_kv_free(BenchKv *kv);
/* kv's rows as one block at positions 0 .. context-1, stored at base (the
 * master or a copy of it). */
KvBlock bench_kv_block(const BenchKv *kv, const void *base);

/* Memory for copies of one BenchKv at a time. A cold step reads the copy
 * after the last one read, so with copies totalling many times the
 * last-level cache each step's rows come from memory. */
typedef struct {
    unsigned char *mem;  /* [cap] */
    size_t cap;
    size_t target;       /* bytes the copies should total */
    KvBlock *blocks;     /* [n_copies] */
    size_t blocks_cap;
    size_t n_copies;     /* >= 2 */
    size_t next;         /* the copy the next cold step reads */
} BenchPool;

/* Bytes the copies of a copy_bytes-sized BenchKv take: enough copies to
 * total `target`, and at least 2. */
size_t bench_pool_bytes(size_t copy_bytes, size_t target);
/* cap: the largest bench_pool_bytes the pool will be filled with. */
int bench_pool_init(BenchPool *p, size_t cap, size_t target, Err *e);
void bench_pool_free(BenchPool *p);
/* Copy kv's master into the pool as many times as bench_pool_bytes says;
 * the first cold step then reads copy 0, written longest ago. */
int bench_pool_fill(BenchPool *p, const BenchKv *kv, Err *e);

/* Scratch every form needs, sized for the largest context and group. */
typedef struct {
    float *scores; /* [max_group][max_context] */
    float *view;   /* [2][max_context][head_dim]: the materialized f32 view */
    KvBlock view_block;
} BenchScratch;

int bench_scratch_init(BenchScratch *s, size_t max_context, size_t max_group, size_t head_dim, Err *e);
void bench_scratch_free(BenchScratch *s);

/* One decode step's queries for a GQA group (group query heads sharing the
 * KV head) and the reference output: the ref kernels' naive form over kv's
 * master, a query at position context-1 seeing every row. */
typedef struct {
    size_t group, head_dim;
    float *q;   /* [group][head_dim] */
    float *out; /* [group][head_dim] */
    float *ref; /* [group][head_dim] */
    void *q8;   /* int_dot: scratch for the queries rounded to q8_0 (AttnArgs.q8); NULL: the f32 query */
    void *iv;   /* int_dot: scratch for flash's integer value sums (AttnArgs.iv) */
    float *ref_f32; /* int_dot: the reference with the f32 query, for materialize, which scores its
                       decoded f32 view so (attend_naive) */
} BenchQuery;

/* int_dot: q8_0, q4_0, int4 and fp4 keys are scored by integer dots against the query
 * rounded to q8_0, in the timed steps and in the reference alike; flash adds
 * q4_0, int4 and fp4 values with 16-bit integer weights, the reference
 * (naive) with f32 weights. */
int bench_query_init(BenchQuery *bq, const BenchKv *kv, size_t group, int int_dot, BenchScratch *s, uint64_t seed,
                     Err *e);
void bench_query_free(BenchQuery *bq);

/* Time one decode step with kernels k in form algo over the pool (filled
 * with the BenchKv bq was made for). Cold: one pass over every copy; warm:
 * the copy read last, read once more untimed, then repeated until
 * min_seconds have passed. r->bytes and r->view_bytes are the Counters the
 * kernel filled for one step; r->max_rel_diff compares with bq->ref. */
void bench_attend(const Kernels *k, BenchPool *p, BenchQuery *bq, BenchScratch *s, AttendAlgo algo, int cold,
                  double min_seconds, BenchResult *r);

/* Time the cold steps of several queries (up to BENCH_MAX_QUERIES) in
 * turn: query j makes one pass of its pool, pools[j] (filled with the
 * BenchKv bq[j] was made for; queries may share one), each step the
 * pool's next copy, and the queries' steps are spread evenly among each
 * other's, step by step, so that a smaller pool's queries step less often.
 * r[j] is bq[j]'s, as bench_attend's. A shared machine's load changes
 * within a second, so two passes timed one after the other differ by it;
 * taken in turn, the queries' times come from the same stretch, and their
 * ratios (G4/G1, a format's time over f32's) compare steps under one load. */
#define BENCH_MAX_QUERIES 8
void bench_attend_cold(const Kernels *k, BenchPool *const *pools, BenchQuery *const *bq, size_t n_queries,
                       BenchScratch *s, AttendAlgo algo, BenchResult *r);

/* --- 3. matrix-vector product --------------------------------------------- */

/* y = W x for W [rows][cols] row-major, in n_copies identical copies of W
 * (cold: each product reads the next), with the exact answer in double. */
typedef struct {
    size_t rows, cols;
    size_t n_copies; /* >= 2 */
    float *pool;     /* [n_copies][rows][cols] */
    float *x;        /* [cols] */
    float *y;        /* [rows] */
    double *ref;     /* [rows]: W x summed in double */
    size_t next;
} BenchMatrix;

int bench_matrix_init(BenchMatrix *m, size_t rows, size_t cols, size_t pool_bytes, uint64_t seed, Err *e);
void bench_matrix_free(BenchMatrix *m);

/* One implementation of y[rows] = W[rows][cols] x; ctx is its own. */
typedef void (*BenchMatvecFn)(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols);

/* ctx: a const Kernels *; its matmul with n = 1. */
void bench_matvec_kernels(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols);
/* Time fn cold: one pass over every copy of W. r->bytes is the bytes of W;
 * r->max_rel_diff compares y with m->ref. */
void bench_matvec(BenchMatvecFn fn, const void *ctx, BenchMatrix *m, BenchResult *r);

#endif
