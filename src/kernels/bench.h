/* bench.h: timing the kernels against this machine's memory (`kvscope bench`).
 *
 * Three measurements, all on the calling thread:
 *   1. read bandwidth: a buffer far larger than the last-level cache, read
 *      with the f32 dot of a kernel table (a SIMD read on the SIMD tables);
 *   2. decode attention over one KV head, per format and form, cold (each
 *      step reads the next of many identical copies of K/V, so it comes
 *      from memory) or warm (the same copy every step);
 *   3. a matrix-vector product by the kernels, GSL's CBLAS and OpenBLAS
 *      (loaded at run time when installed), cold the same way.
 * Every figure is the median of BenchTiming.reps repetitions, and every
 * result is checked against a reference, so a broken kernel cannot look
 * fast. Nothing here prints: the caller reports.
 *
 * Buffers are 64-byte aligned; functions that allocate fail with
 * ERR_RUNTIME when memory runs out and leave nothing allocated. */
#ifndef KVSCOPE_KERNELS_BENCH_H
#define KVSCOPE_KERNELS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* Largest |x - ref| over max |ref| accepted before a result is called
 * wrong: float summation differs by ~1e-6 here; a broken kernel by far more. */
#define BENCH_TOLERANCE 1e-3

/* Seconds on a monotonic clock. */
double bench_now(void);

/* Median of v[0..n); sorts v in place. 0 when n is 0. */
double bench_median(double *v, size_t n);

/* The last-level cache's size in bytes, and in *source where it was read
 * ("sysfs" or "sysconf"); 0 and "unknown" when neither says. sysfs is asked
 * first: under some hypervisors sysconf reports the whole host's cache. */
size_t bench_llc_bytes(const char **source);

typedef struct {
    size_t reps;            /* timed repetitions; every figure is their median (>= 1) */
    double min_rep_seconds; /* warm runs repeat a step until one repetition lasts this long */
} BenchTiming;

typedef struct {
    double seconds;       /* median time of one operation (one step, one matvec, one full read) */
    uint64_t bytes;       /* bytes one operation reads from its data (attention: kv_bytes_read) */
    uint64_t view_bytes;  /* attention, materialize form: f32 view bytes written and read back */
    size_t ops_per_rep;   /* operations timed in each repetition */
    double max_rel_diff;  /* against the reference; -1 when there was nothing to check */
} BenchResult;

/* --- 1. read bandwidth ---------------------------------------------------- */

/* Read `bytes` (rounded down to whole 16 KiB chunks, at least one) of a
 * float array with k->codec[FMT_F32].dot against a 16 KiB vector that stays
 * in L1, t->reps times; r->seconds is the median time of one full read. The
 * sum is checked against the known total. */
int bench_read(const Kernels *k, size_t bytes, const BenchTiming *t, BenchResult *r, Err *e);

/* --- 2. decode attention ---------------------------------------------------- */

/* One format's K and V rows for one context, in n_copies identical copies.
 * A cold step reads the copy after the last one read, so with a pool many
 * times the last-level cache each step's rows come from memory. */
typedef struct {
    Format fmt;
    size_t context, head_dim;
    size_t row_bytes;    /* format_row_bytes(fmt, head_dim) */
    size_t copy_bytes;   /* one copy: context K rows, then context V rows (64-byte aligned) */
    size_t n_copies;     /* >= 2 */
    unsigned char *pool; /* [n_copies][copy_bytes] */
    KvBlock *blocks;     /* [n_copies]: copy c as one block at positions 0 .. context-1 */
    size_t next;         /* the copy the next cold step reads */
} BenchKv;

/* Fill kv: seeded pseudo-random K/V values (about N(0, 1)) quantized with
 * the reference codec, copied until the copies total at least pool_bytes
 * (and at least 2 copies). Free with bench_kv_free (also after a failure). */
int bench_kv_init(BenchKv *kv, Format fmt, size_t context, size_t head_dim, size_t pool_bytes, uint64_t seed,
                  Err *e);
void bench_kv_free(BenchKv *kv);

/* One decode step's queries for a GQA group (group query heads sharing the
 * KV head), the scratch every form needs, and the reference output: the
 * ref kernels' naive form on the same rows. */
typedef struct {
    size_t group;
    float *q;      /* [group][head_dim] */
    float *out;    /* [group][head_dim] */
    float *ref;    /* [group][head_dim] */
    float *scores; /* [group][context] */
    float *view;   /* [2][context][head_dim]: the materialized f32 view */
    KvBlock view_block;
} BenchQuery;

int bench_query_init(BenchQuery *bq, const BenchKv *kv, size_t group, uint64_t seed, Err *e);
void bench_query_free(BenchQuery *bq);

/* Time one decode step (a query at position context-1 seeing every row)
 * with kernels k in form algo. Cold: a repetition is one pass over every
 * copy; warm: one copy, already read once, repeated for t->min_rep_seconds.
 * r->bytes and r->view_bytes are the Counters the kernel filled for one
 * step; r->max_rel_diff compares the last output with bq->ref. */
int bench_attend(const Kernels *k, BenchKv *kv, BenchQuery *bq, AttendAlgo algo, int cold, const BenchTiming *t,
                 BenchResult *r, Err *e);

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
/* ctx unused: GSL's CBLAS cblas_sgemv (libgslcblas). */
void bench_matvec_gsl(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols);

/* OpenBLAS, opened at run time so that it stays optional. */
typedef struct {
    void *handle;
    void (*sgemv)(int order, int trans, int m, int n, float alpha, const float *a, int lda, const float *x,
                  int incx, float beta, float *y, int incy);
    char config[128]; /* version, core and threads, e.g. "0.3.21 Zen, 1 thread" */
} BenchOpenblas;

/* dlopen libopenblas.so.0 and find cblas_sgemv; set one thread. Returns 0,
 * or -1 with the loader's reason in why (OpenBLAS is then not usable). */
int bench_openblas_open(BenchOpenblas *ob, char *why, size_t cap);
void bench_openblas_close(BenchOpenblas *ob);
/* ctx: a const BenchOpenblas * that opened. */
void bench_matvec_openblas(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols);

/* Time fn cold: a repetition is one pass over every copy of W. r->bytes is
 * the bytes of W; r->max_rel_diff compares y with m->ref. */
int bench_matvec(BenchMatvecFn fn, const void *ctx, BenchMatrix *m, const BenchTiming *t, BenchResult *r, Err *e);

#endif
