/* kernels_avx512.c: matmul, exp, SwiGLU, RMSNorm and RoPE for AVX-512F (16 floats a lane).
 * Same contracts as the reference kernels in kernels.h; built with the
 * AVX-512 flags and only called when the CPU has them. Tails use masks. */
#include <immintrin.h>
#include <math.h>

#include "kernels/kernels_isa.h"

/* exp as in kernels_avx2.c's exp8, sixteen at a time (exp_lanes in
 * lanes16.h is its one-lane twin). */
static inline __m512 exp16(__m512 x)
{
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

/* The lanes' sum in lanes16.h's tree (i and i + 8, i + 4, i + 2, then the
 * last two), spelled out: GCC's _mm512_reduce_add_ps adds so, and this
 * way every compiler does. */
static inline float hsum16(__m512 v)
{
    const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v),
                                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline __mmask16 tail_mask(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* y[k] = W row k . xr for k < R (R a constant: 8, 4 or 1), each chunk of
 * xr loaded once for the R rows; the main loop is unmasked and a single
 * masked step takes the tail. Each dot in lanes16_dot's order (lanes16.h):
 * term i fused into lane i % 16, the masked lanes adding 0 * 0, the tree. */
static inline __attribute__((always_inline)) void dot_w_rows(const size_t R, float *y, const float *xr,
                                                             const float *w, size_t in, size_t main_len,
                                                             __mmask16 tail)
{
    __m512 a[8];
#pragma GCC unroll 8
    for (size_t k = 0; k < R; k++)
        a[k] = _mm512_setzero_ps();
    for (size_t i = 0; i < main_len; i += 16) {
        const __m512 xv = _mm512_loadu_ps(xr + i);
#pragma GCC unroll 8
        for (size_t k = 0; k < R; k++)
            a[k] = _mm512_fmadd_ps(_mm512_loadu_ps(w + k * in + i), xv, a[k]);
    }
    if (tail) {
        const __m512 xv = _mm512_maskz_loadu_ps(tail, xr + main_len);
#pragma GCC unroll 8
        for (size_t k = 0; k < R; k++)
            a[k] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w + k * in + main_len), xv, a[k]);
    }
#pragma GCC unroll 8
    for (size_t k = 0; k < R; k++)
        y[k] = hsum16(a[k]);
}

/* W rows in blocks of 8, then 4, then one by one. Eight rows streamed at
 * once keep more reads in flight than four: the 4096 x 4096 matvec, cold,
 * ran 3-5% faster (6 alternating runs; prefetching ahead instead was 15-25%
 * slower). */
void matmul_avx512(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                   Counters *ctr)
{
    const size_t main_len = in & ~(size_t)15;
    const __mmask16 tail = tail_mask(in - main_len);
    size_t o = 0;
    for (; o + 8 <= out; o += 8)
        for (size_t r = 0; r < n; r++)
            dot_w_rows(8, y + r * out + o, x + r * in, w + o * in, in, main_len, tail);
    for (; o + 4 <= out; o += 4)
        for (size_t r = 0; r < n; r++)
            dot_w_rows(4, y + r * out + o, x + r * in, w + o * in, in, main_len, tail);
    for (; o < out; o++)
        for (size_t r = 0; r < n; r++)
            dot_w_rows(1, y + r * out + o, x + r * in, w + o * in, in, main_len, tail);
    if (flops)
        *flops += 2 * (uint64_t)n * out * in;
    if (ctr)
        ctr->weight_bytes_read += (uint64_t)out * in * sizeof(float);
}

float exp_sum_avx512(float *x, size_t n, float max)
{
    __m512 m = _mm512_set1_ps(max), acc = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m));
        _mm512_mask_storeu_ps(x + i, k, e);
        acc = _mm512_mask_add_ps(acc, k, acc, e);
    }
    return hsum16(acc);
}

void swiglu_avx512(float *out, const float *gate, const float *up, size_t n, Counters *ctr)
{
    const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        __m512 g = _mm512_maskz_loadu_ps(k, gate + i);
        __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, exp16(_mm512_sub_ps(zero, g))));
        _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(k, up + i)));
    }
    if (ctr)
        ctr->flops_ffn += 5 * (uint64_t)n;
}

void rmsnorm_avx512(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr)
{
    for (size_t r = 0; r < n; r++) {
        const float *xr = x + r * d;
        float *yr = out + r * d;
        __m512 acc = _mm512_setzero_ps();
        for (size_t i = 0; i < d; i += 16) {
            __m512 v = _mm512_maskz_loadu_ps(tail_mask(d - i), xr + i);
            acc = _mm512_fmadd_ps(v, v, acc);
        }
        const float inv_rms = 1.0f / sqrtf(hsum16(acc) / (float)d + eps);
        const __m512 k = _mm512_set1_ps(inv_rms);
        for (size_t i = 0; i < d; i += 16) {
            __mmask16 m = tail_mask(d - i);
            __m512 y = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), k), _mm512_maskz_loadu_ps(m, w + i));
            _mm512_mask_storeu_ps(yr + i, m, y);
        }
    }
    if (ctr) {
        ctr->flops_other += 4 * (uint64_t)n * d; /* square-add, scale, weight */
        ctr->weight_bytes_read += d * sizeof(float);
    }
}

/* Eight pairs a vector, as rope_avx2 does four. */
void rope_avx512(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr)
{
    if (head_dim > ROPE_MAX_DIM || head_dim % 2) {
        rope_ref(vec, n_heads, head_dim, pos, theta, ctr);
        return;
    }
    float cos2[ROPE_MAX_DIM], sin2[ROPE_MAX_DIM];
    rope_tables(cos2, sin2, head_dim, pos, theta);
    for (size_t h = 0; h < n_heads; h++) {
        float *v = vec + h * head_dim;
        for (size_t i = 0; i < head_dim; i += 16) {
            __mmask16 m = tail_mask(head_dim - i);
            __m512 x = _mm512_maskz_loadu_ps(m, v + i);
            __m512 swapped = _mm512_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1));
            __m512 rot = _mm512_mul_ps(swapped, _mm512_maskz_loadu_ps(m, sin2 + i));
            _mm512_mask_storeu_ps(v + i, m, _mm512_fmaddsub_ps(x, _mm512_maskz_loadu_ps(m, cos2 + i), rot));
        }
    }
    if (ctr)
        ctr->flops_other += 3 * (uint64_t)n_heads * head_dim; /* 6 per pair */
}
