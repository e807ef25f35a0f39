/* bench_blas.h: the BLAS matvecs `kvscope bench` compares its own with:
 * GSL's CBLAS (linked) and OpenBLAS (opened at run time, so optional). In
 * the app layer so that the kernels library needs neither. */
#ifndef KVSCOPE_KERNELS_BENCH_BLAS_H
#define KVSCOPE_KERNELS_BENCH_BLAS_H

#include <stddef.h>

#include "kernels/bench.h"

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


#endif
