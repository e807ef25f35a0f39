/* kernels_isa.h: the SIMD kernels each ISA file provides (private to
 * kernels/; dispatch.c puts them in tables). Declared for every
 * architecture, defined only where the file is built. */
#ifndef KVSCOPE_KERNELS_KERNELS_ISA_H
#define KVSCOPE_KERNELS_KERNELS_ISA_H

#include "kernels/kernels.h"

/* RoPE's cosines and sines for one position, each repeated for both
 * elements of its pair: cos2[2i] = cos2[2i+1] = cos(pos * theta^(-2i/d)).
 * Computed once per call and shared by every head (rope_ref.c). The SIMD
 * ropes take head_dim <= ROPE_MAX_DIM and hand larger ones to rope_ref. */
#define ROPE_MAX_DIM 1024
void rope_tables(float *cos2, float *sin2, size_t head_dim, size_t pos, double theta);

void matmul_avx2(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                 Counters *ctr);
float exp_sum_avx2(float *x, size_t n, float max);
void swiglu_avx2(float *out, const float *gate, const float *up, size_t n, Counters *ctr);
void rmsnorm_avx2(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr);
void rope_avx2(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr);

/* gemm_tiles.h built for each (gemm_avx2.c, gemm_avx512.c) */
void gemm_nt_avx2(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);
void gemm_nn_avx2(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);
void gemm_tn_avx2(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);
void gemm_nt_avx512(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);
void gemm_nn_avx512(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);
void gemm_tn_avx512(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);

void qdot_avx2(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
               size_t G, size_t n, const RowsAhead *ahead);
void iaxpy_avx2(int32_t *acc, float *dmax, const float *p, size_t ld, const float *to_int, Format fmt,
                const void *rows, size_t stride, size_t n_rows, size_t G, size_t n);

void matmul_avx512(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                   Counters *ctr);
float exp_sum_avx512(float *x, size_t n, float max);
void swiglu_avx512(float *out, const float *gate, const float *up, size_t n, Counters *ctr);
void rmsnorm_avx512(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr);
void rope_avx512(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr);
/* iaxpy_avx2.c built for AVX-512 with VNNI (iaxpy_vnni.c) */
void iaxpy_vnni(int32_t *acc, float *dmax, const float *p, size_t ld, const float *to_int, Format fmt,
                const void *rows, size_t stride, size_t n_rows, size_t G, size_t n);
/* a group's heads (G > 1) with rows of 128 by vpdpbusd, the rest qdot_avx2's (qdot_vnni.c) */
void qdot_vnni(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
               size_t G, size_t n, const RowsAhead *ahead);

void matmul_neon(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                 Counters *ctr);
float exp_sum_neon(float *x, size_t n, float max);
void swiglu_neon(float *out, const float *gate, const float *up, size_t n, Counters *ctr);
void rmsnorm_neon(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr);
void rope_neon(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr);

#endif
