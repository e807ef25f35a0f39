/* kernels_isa.h: the SIMD kernels each ISA file provides (private to
 * kernels/; dispatch.c puts them in tables). Declared for every
 * architecture, defined only where the file is built. */
#ifndef KVSCOPE_KERNELS_KERNELS_ISA_H
#define KVSCOPE_KERNELS_KERNELS_ISA_H

#include "kernels/kernels.h"

void matmul_avx2(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                 Counters *ctr);
float exp_sum_avx2(float *x, size_t n, float max);
void swiglu_avx2(float *out, const float *gate, const float *up, size_t n, Counters *ctr);

void matmul_avx512(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                   Counters *ctr);
float exp_sum_avx512(float *x, size_t n, float max);
void swiglu_avx512(float *out, const float *gate, const float *up, size_t n, Counters *ctr);

void matmul_neon(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                 Counters *ctr);
float exp_sum_neon(float *x, size_t n, float max);
void swiglu_neon(float *out, const float *gate, const float *up, size_t n, Counters *ctr);

#endif
