/* gemm_avx2.c: the training's matrix products (gemm_tiles.h) for AVX2 + FMA,
 * 8 floats a vector; built with the AVX2 flags, called only where the CPU
 * has them. */
#include <immintrin.h>

#include "kernels/kernels_isa.h"

typedef __m256 V;
typedef __m256i VM;
#define VW 8
#define NT_R 2 /* 8 accumulators, 2 + 1 loads: 11 of the 16 registers */
#define NT_C 4
#define NN_R 4 /* 8 accumulators, 2 loads and a broadcast */
#define NN_C 2
#define GEMM_NAME(x) x##_avx2

static inline V v_zero(void) { return _mm256_setzero_ps(); }
static inline V v_set1(float x) { return _mm256_set1_ps(x); }
static inline V v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void v_store(float *p, V v) { _mm256_storeu_ps(p, v); }
static inline V v_load_m(const float *p, VM m) { return _mm256_maskload_ps(p, m); }
static inline void v_store_m(float *p, V v, VM m) { _mm256_maskstore_ps(p, m, v); }
static inline V v_fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
static inline V v_add(V a, V b) { return _mm256_add_ps(a, b); }
static inline VM v_mask(size_t left)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline float v_hsum(V v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#include "kernels/gemm_tiles.h"
