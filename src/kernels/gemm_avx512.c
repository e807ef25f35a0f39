/* gemm_avx512.c: the training's matrix products (gemm_tiles.h) for
 * AVX-512F, 16 floats a vector, tails by masks; built with the AVX-512
 * flags, called only where the CPU has them. */
#include <immintrin.h>

#include "kernels/kernels_isa.h"

typedef __m512 V;
typedef __mmask16 VM;
#define VW 16
#define NT_R 4 /* 16 accumulators of the 32 registers */
#define NT_C 4
#define NN_R 4
#define NN_C 4
#define GEMM_NAME(x) x##_avx512

static inline V v_zero(void) { return _mm512_setzero_ps(); }
static inline V v_set1(float x) { return _mm512_set1_ps(x); }
static inline V v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void v_store(float *p, V v) { _mm512_storeu_ps(p, v); }
static inline V v_load_m(const float *p, VM m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void v_store_m(float *p, V v, VM m) { _mm512_mask_storeu_ps(p, m, v); }
static inline V v_fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V v_add(V a, V b) { return _mm512_add_ps(a, b); }
static inline VM v_mask(size_t left) { return left >= 16 ? (VM)0xffff : (VM)((1u << left) - 1u); }
static inline float v_hsum(V v) { return _mm512_reduce_add_ps(v); }

#include "kernels/gemm_tiles.h"
