/* kernels_neon.c: matmul, exp, SwiGLU, RMSNorm and RoPE for AArch64 NEON (4 floats a lane).
 * Same contracts as the reference kernels in kernels.h. Built only on
 * aarch64; the tests run it under qemu when the cross tools are present. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels_isa.h"

/* exp as in kernels_avx2.c's exp8, four at a time. */
static inline float32x4_t exp4(float32x4_t x)
{
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.3f));
    float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

/* The sum of 16 lanes held as a[0] (lanes 0-3) .. a[3] (12-15) in
 * lanes16.h's tree: lane i and i + 8, then i and i + 4, i and i + 2, and
 * the last two (vaddvq_f32 adds in adjacent pairs, another order). */
static inline float hsum16(const float32x4_t *a)
{
    const float32x4_t s = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
    const float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));
    return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}

/* y[k] = W row k . xr for k < R (R a constant: 4 or 1), each chunk of xr
 * loaded once for the R rows. Each dot in lanes16_dot's order, as the x86
 * matmuls sum it: 16 lanes as four registers a row, one fused
 * multiply-add a term; the last chunk is copied into zeros, so its lanes
 * past `in` add 0 * 0 as AVX-512's masked step does. */
static inline __attribute__((always_inline)) void dot_w_rows(const size_t R, float *y, const float *xr,
                                                             const float *w, size_t in, size_t main_len)
{
    float32x4_t a[4][4];
    for (size_t k = 0; k < R; k++)
        for (size_t q = 0; q < 4; q++)
            a[k][q] = vdupq_n_f32(0.0f);
    for (size_t i = 0; i < main_len; i += 16) {
        float32x4_t xv[4];
        for (size_t q = 0; q < 4; q++)
            xv[q] = vld1q_f32(xr + i + 4 * q);
        for (size_t k = 0; k < R; k++)
            for (size_t q = 0; q < 4; q++)
                a[k][q] = vfmaq_f32(a[k][q], vld1q_f32(w + k * in + i + 4 * q), xv[q]);
    }
    if (main_len < in) {
        const size_t left = in - main_len;
        float xt[16] = { 0 }, wt[16] = { 0 };
        memcpy(xt, xr + main_len, left * sizeof *xt);
        for (size_t k = 0; k < R; k++) {
            memcpy(wt, w + k * in + main_len, left * sizeof *wt);
            for (size_t q = 0; q < 4; q++)
                a[k][q] = vfmaq_f32(a[k][q], vld1q_f32(wt + 4 * q), vld1q_f32(xt + 4 * q));
        }
    }
    for (size_t k = 0; k < R; k++)
        y[k] = hsum16(a[k]);
}

/* Four W rows at a time (16 accumulators of the 32 registers), then one
 * by one. */
void matmul_neon(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                 Counters *ctr)
{
    const size_t main_len = in / 16 * 16;
    size_t o = 0;
    for (; o + 4 <= out; o += 4)
        for (size_t r = 0; r < n; r++)
            dot_w_rows(4, y + r * out + o, x + r * in, w + o * in, in, main_len);
    for (; o < out; o++)
        for (size_t r = 0; r < n; r++)
            dot_w_rows(1, y + r * out + o, x + r * in, w + o * in, in, main_len);
    if (flops)
        *flops += 2 * (uint64_t)n * out * in;
    if (ctr)
        ctr->weight_bytes_read += (uint64_t)out * in * sizeof(float);
}

float exp_sum_neon(float *x, size_t n, float max)
{
    float32x4_t m = vdupq_n_f32(max), acc = vdupq_n_f32(0);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), m));
        vst1q_f32(x + i, e);
        acc = vaddq_f32(acc, e);
    }
    float sum = vaddvq_f32(acc);
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    return sum;
}

void swiglu_neon(float *out, const float *gate, const float *up, size_t n, Counters *ctr)
{
    const float32x4_t one = vdupq_n_f32(1.0f);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t g = vld1q_f32(gate + i);
        float32x4_t silu = vdivq_f32(g, vaddq_f32(one, exp4(vnegq_f32(g))));
        vst1q_f32(out + i, vmulq_f32(silu, vld1q_f32(up + i)));
    }
    for (; i < n; i++)
        out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
    if (ctr)
        ctr->flops_ffn += 5 * (uint64_t)n;
}

void rmsnorm_neon(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr)
{
    for (size_t r = 0; r < n; r++) {
        const float *xr = x + r * d;
        float *yr = out + r * d;
        float32x4_t acc = vdupq_n_f32(0);
        size_t i = 0;
        for (; i + 4 <= d; i += 4) {
            float32x4_t v = vld1q_f32(xr + i);
            acc = vfmaq_f32(acc, v, v);
        }
        float ss = vaddvq_f32(acc);
        for (; i < d; i++)
            ss += xr[i] * xr[i];
        const float inv_rms = 1.0f / sqrtf(ss / (float)d + eps);
        for (i = 0; i + 4 <= d; i += 4)
            vst1q_f32(yr + i, vmulq_f32(vmulq_n_f32(vld1q_f32(xr + i), inv_rms), vld1q_f32(w + i)));
        for (; i < d; i++)
            yr[i] = xr[i] * inv_rms * w[i];
    }
    if (ctr) {
        ctr->flops_other += 4 * (uint64_t)n * d; /* square-add, scale, weight */
        ctr->weight_bytes_read += d * sizeof(float);
    }
}

/* Two pairs a vector: v * c + swap(v) * (s with its even lanes negated). */
void rope_neon(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr)
{
    if (head_dim > ROPE_MAX_DIM || head_dim % 4) {
        rope_ref(vec, n_heads, head_dim, pos, theta, ctr);
        return;
    }
    float cos2[ROPE_MAX_DIM], sin2[ROPE_MAX_DIM];
    rope_tables(cos2, sin2, head_dim, pos, theta);
    static const float sign[4] = { -1.0f, 1.0f, -1.0f, 1.0f };
    const float32x4_t sg = vld1q_f32(sign);
    for (size_t h = 0; h < n_heads; h++) {
        float *v = vec + h * head_dim;
        for (size_t i = 0; i < head_dim; i += 4) {
            float32x4_t x = vld1q_f32(v + i);
            float32x4_t rot = vmulq_f32(vrev64q_f32(x), vmulq_f32(vld1q_f32(sin2 + i), sg));
            vst1q_f32(v + i, vfmaq_f32(rot, x, vld1q_f32(cos2 + i)));
        }
    }
    if (ctr)
        ctr->flops_other += 3 * (uint64_t)n_heads * head_dim; /* 6 per pair */
}
