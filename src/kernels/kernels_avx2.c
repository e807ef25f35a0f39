/* kernels_avx2.c: matmul, exp, SwiGLU, RMSNorm and RoPE for AVX2 + FMA (8 floats a lane).
 * Same contracts as the reference kernels in kernels.h; built with -mavx2
 * -mfma -mf16c and only called when the CPU has them. */
#include <immintrin.h>
#include <math.h>

#include "kernels/kernels_isa.h"
#include "kernels/lanes16.h"

/* The lanes' sum as _mm512_reduce_add_ps adds them (lanes16.h): i and i + 4,
 * then i and i + 2, then the last two. */
static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 16 lanes held as lo (lanes 0-7) and hi (8-15), summed in lanes16.h's
 * tree: lane i and i + 8 first. */
static inline float hsum16(__m256 lo, __m256 hi)
{
    return hsum8(_mm256_add_ps(lo, hi));
}

/* Lanes 0 .. m-1 (0 <= m <= 8) of a mask. */
static inline __m256i lanes8(size_t m)
{
    static const int32_t table[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
    return _mm256_loadu_si256((const __m256i *)(const void *)(table + 8 - m));
}

/* exp(x) for x in [-87.3, 88.3]: x = n ln2 + r, |r| <= ln2/2; exp(r) by a
 * degree-6 polynomial (Cephes' expf coefficients); 2^n built in the exponent
 * bits. About 2 ulp; inputs below the range give exp(-87.3), not 0. */
static inline __m256 exp8(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* y[k] = W row k . xr for k < R (R a constant: 6, 4 or 1), each chunk of xr
 * loaded once for the R rows. Each dot in lanes16_dot's order, as
 * matmul_avx512 sums it: 16 lanes as two registers a row (lo 0-7, hi
 * 8-15), one fused multiply-add a term; the last chunk's lanes past `in`
 * are masked loads of 0 and add 0 * 0, as AVX-512's masked step does. */
static inline __attribute__((always_inline)) void dot_w_rows(const size_t R, float *y, const float *xr,
                                                             const float *w, size_t in, size_t main_len,
                                                             __m256i m_lo, __m256i m_hi)
{
    __m256 lo[6], hi[6];
#pragma GCC unroll 6
    for (size_t k = 0; k < R; k++)
        lo[k] = hi[k] = _mm256_setzero_ps();
    for (size_t i = 0; i < main_len; i += LANES) {
        const __m256 xl = _mm256_loadu_ps(xr + i), xh = _mm256_loadu_ps(xr + i + 8);
#pragma GCC unroll 6
        for (size_t k = 0; k < R; k++) {
            lo[k] = _mm256_fmadd_ps(_mm256_loadu_ps(w + k * in + i), xl, lo[k]);
            hi[k] = _mm256_fmadd_ps(_mm256_loadu_ps(w + k * in + i + 8), xh, hi[k]);
        }
    }
    if (main_len < in) { /* hi's lanes are read only where the tail reaches them */
        const int hi_read = in - main_len > 8;
        const __m256 zero = _mm256_setzero_ps();
        const __m256 xl = _mm256_maskload_ps(xr + main_len, m_lo);
        const __m256 xh = hi_read ? _mm256_maskload_ps(xr + main_len + 8, m_hi) : zero;
#pragma GCC unroll 6
        for (size_t k = 0; k < R; k++) {
            const float *wk = w + k * in + main_len;
            lo[k] = _mm256_fmadd_ps(_mm256_maskload_ps(wk, m_lo), xl, lo[k]);
            hi[k] = _mm256_fmadd_ps(hi_read ? _mm256_maskload_ps(wk + 8, m_hi) : zero, xh, hi[k]);
        }
    }
#pragma GCC unroll 6
    for (size_t k = 0; k < R; k++)
        y[k] = hsum16(lo[k], hi[k]);
}

/* Six W rows at a time (twelve accumulators and x's two chunks: 14 of the
 * 16 registers), then four, then one by one. Six ran the prefill's
 * products 5-15% faster than four, and the 4096 x 4096 matvec no slower
 * (three interleaved runs of each on the AVX-512 Xeon, load 7). */
void matmul_avx2(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                 Counters *ctr)
{
    const size_t main_len = in / LANES * LANES, left = in - main_len;
    const __m256i m_lo = lanes8(left < 8 ? left : 8), m_hi = lanes8(left > 8 ? left - 8 : 0);
    size_t o = 0;
    for (; o + 6 <= out; o += 6)
        for (size_t r = 0; r < n; r++)
            dot_w_rows(6, y + r * out + o, x + r * in, w + o * in, in, main_len, m_lo, m_hi);
    for (; o + 4 <= out; o += 4)
        for (size_t r = 0; r < n; r++)
            dot_w_rows(4, y + r * out + o, x + r * in, w + o * in, in, main_len, m_lo, m_hi);
    for (; o < out; o++)
        for (size_t r = 0; r < n; r++)
            dot_w_rows(1, y + r * out + o, x + r * in, w + o * in, in, main_len, m_lo, m_hi);
    if (flops)
        *flops += 2 * (uint64_t)n * out * in;
    if (ctr)
        ctr->weight_bytes_read += (uint64_t)out * in * sizeof(float);
}

/* lanes16.h's order: 16 lanes as two registers, the tail masked into the
 * same lanes (a masked lane adds 0). */
float exp_sum_avx2(float *x, size_t n, float max)
{
    const __m256 m = _mm256_set1_ps(max);
    __m256 acc[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (size_t h = 0; h < 2; h++) {
            const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8 * h), m));
            _mm256_storeu_ps(x + i + 8 * h, e);
            acc[h] = _mm256_add_ps(acc[h], e);
        }
    for (size_t h = 0; h < 2 && i + 8 * h < n; h++) {
        const size_t left = n - i - 8 * h;
        const __m256i k = lanes8(left < 8 ? left : 8);
        const __m256 e = exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i + 8 * h, k), m));
        _mm256_maskstore_ps(x + i + 8 * h, k, e);
        acc[h] = _mm256_add_ps(acc[h], _mm256_and_ps(e, _mm256_castsi256_ps(k)));
    }
    return hsum16(acc[0], acc[1]);
}

void swiglu_avx2(float *out, const float *gate, const float *up, size_t n, Counters *ctr)
{
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_loadu_ps(gate + i);
        __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, g))));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) /* exp8's lane, step for step */
        out[i] = gate[i] / (1.0f + exp_lanes(0.0f - gate[i])) * up[i];
    if (ctr)
        ctr->flops_ffn += 5 * (uint64_t)n;
}

void rmsnorm_avx2(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr)
{
    for (size_t r = 0; r < n; r++) {
        const float *xr = x + r * d;
        float *yr = out + r * d;
        /* lanes16.h's order: two registers for the 16 lanes, the tail
         * masked into the same lanes (a masked lane adds 0 * 0) */
        __m256 acc[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
        size_t i = 0;
        for (; i + LANES <= d; i += LANES)
            for (size_t h = 0; h < 2; h++) {
                const __m256 v = _mm256_loadu_ps(xr + i + 8 * h);
                acc[h] = _mm256_fmadd_ps(v, v, acc[h]);
            }
        for (size_t h = 0; h < 2 && i + 8 * h < d; h++) {
            const size_t left = d - i - 8 * h;
            const __m256 v = _mm256_maskload_ps(xr + i + 8 * h, lanes8(left < 8 ? left : 8));
            acc[h] = _mm256_fmadd_ps(v, v, acc[h]);
        }
        const float ss = hsum16(acc[0], acc[1]);
        const float inv_rms = 1.0f / sqrtf(ss / (float)d + eps);
        const __m256 k = _mm256_set1_ps(inv_rms);
        for (i = 0; i + 8 <= d; i += 8)
            _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), k), _mm256_loadu_ps(w + i)));
        for (; i < d; i++)
            yr[i] = xr[i] * inv_rms * w[i];
    }
    if (ctr) {
        ctr->flops_other += 4 * (uint64_t)n * d; /* square-add, scale, weight */
        ctr->weight_bytes_read += d * sizeof(float);
    }
}

/* Four pairs a vector: (a, b) -> (a c - b s, a s + b c) is v * c -+ swap(v) * s,
 * which fmaddsub does in one instruction (subtract in even lanes, add in odd). */
void rope_avx2(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr)
{
    if (head_dim > ROPE_MAX_DIM || head_dim % 8) {
        rope_ref(vec, n_heads, head_dim, pos, theta, ctr);
        return;
    }
    float cos2[ROPE_MAX_DIM], sin2[ROPE_MAX_DIM];
    rope_tables(cos2, sin2, head_dim, pos, theta);
    for (size_t h = 0; h < n_heads; h++) {
        float *v = vec + h * head_dim;
        for (size_t i = 0; i < head_dim; i += 8) {
            __m256 x = _mm256_loadu_ps(v + i);
            __m256 swapped = _mm256_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1));
            __m256 rot = _mm256_mul_ps(swapped, _mm256_loadu_ps(sin2 + i));
            _mm256_storeu_ps(v + i, _mm256_fmaddsub_ps(x, _mm256_loadu_ps(cos2 + i), rot));
        }
    }
    if (ctr)
        ctr->flops_other += 3 * (uint64_t)n_heads * head_dim; /* 6 per pair */
}
