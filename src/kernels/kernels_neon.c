/* kernels_neon.c: matmul, exp, SwiGLU, RMSNorm and RoPE for AArch64 NEON (4 floats a lane).
 * Same contracts as the reference kernels in kernels.h. Built only on
 * aarch64; the tests run it under qemu when the cross tools are present. */
#include <arm_neon.h>
#include <math.h>

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

void matmul_neon(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                 Counters *ctr)
{
    size_t o = 0;
    for (; o + 4 <= out; o += 4) {
        const float *w0 = w + o * in, *w1 = w0 + in, *w2 = w1 + in, *w3 = w2 + in;
        for (size_t r = 0; r < n; r++) {
            const float *xr = x + r * in;
            float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
            size_t i = 0;
            for (; i + 4 <= in; i += 4) {
                float32x4_t xv = vld1q_f32(xr + i);
                a0 = vfmaq_f32(a0, vld1q_f32(w0 + i), xv);
                a1 = vfmaq_f32(a1, vld1q_f32(w1 + i), xv);
                a2 = vfmaq_f32(a2, vld1q_f32(w2 + i), xv);
                a3 = vfmaq_f32(a3, vld1q_f32(w3 + i), xv);
            }
            float s0 = vaddvq_f32(a0), s1 = vaddvq_f32(a1), s2 = vaddvq_f32(a2), s3 = vaddvq_f32(a3);
            for (; i < in; i++) {
                s0 += w0[i] * xr[i];
                s1 += w1[i] * xr[i];
                s2 += w2[i] * xr[i];
                s3 += w3[i] * xr[i];
            }
            float *yr = y + r * out + o;
            yr[0] = s0, yr[1] = s1, yr[2] = s2, yr[3] = s3;
        }
    }
    for (; o < out; o++) {
        const float *wr = w + o * in;
        for (size_t r = 0; r < n; r++) {
            const float *xr = x + r * in;
            float32x4_t a = vdupq_n_f32(0);
            size_t i = 0;
            for (; i + 4 <= in; i += 4)
                a = vfmaq_f32(a, vld1q_f32(wr + i), vld1q_f32(xr + i));
            float s = vaddvq_f32(a);
            for (; i < in; i++)
                s += wr[i] * xr[i];
            y[r * out + o] = s;
        }
    }
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
