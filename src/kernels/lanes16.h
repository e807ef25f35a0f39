/* lanes16.h: the one float summation order every ISA's kernels follow, in
 * scalar form (the reference kernels use it; the SIMD ones do the same
 * in registers).
 *
 * Why one order: float addition is not associative, so an ISA that adds
 * the same products in another order gives other bits, and bits per byte
 * moves in its last digits from one --isa to the next. The order is the
 * one the AVX-512 kernels take, so the default path there keeps its bits:
 *
 *   - a sum of n terms runs in 16 lanes, term i into lane i % 16 (one
 *     fused multiply-add a term where the SIMD kernel fuses);
 *   - the 16 lanes are then added as a tree: lane i and i + 8, then i and
 *     i + 4, then i and i + 2, then the last two (GCC's
 *     _mm512_reduce_add_ps; AVX2 holds lanes 0-7 and 8-15 in two
 *     registers and adds them first).
 *
 * lanes16_dot is that order for one dot product (the f32 matmul's).
 * exp_lanes is the SIMD exp (exp8, exp16) for one lane, step for step,
 * so that it returns the same bits. Private to src/kernels/. */
#ifndef KVSCOPE_KERNELS_LANES16_H
#define KVSCOPE_KERNELS_LANES16_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LANES 16

/* The sum of a[0..16) in the tree above. */
static inline float lanes16_reduce(const float *a)
{
    float t8[8], t4[4];
    for (int i = 0; i < 8; i++)
        t8[i] = a[i] + a[i + 8];
    for (int i = 0; i < 4; i++)
        t4[i] = t8[i] + t8[i + 4];
    return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

/* a . b over n terms in that order: term i fused into lane i % 16; the
 * lanes of the last chunk that lie past n add 0 * 0, as a masked load
 * hands them zeros (it turns a -0 lane into +0); then the tree. The f32
 * matmul's dot (matmul_ref; the SIMD matmuls do it in registers). */
static inline float lanes16_dot(const float *a, const float *b, size_t n)
{
    float lane[LANES] = { 0 };
    size_t i = 0;
    for (; i < n; i++)
        lane[i % LANES] = fmaf(a[i], b[i], lane[i % LANES]);
    for (; i % LANES; i++)
        lane[i % LANES] = fmaf(0.0f, 0.0f, lane[i % LANES]);
    return lanes16_reduce(lane);
}

/* exp(x) for x in [-87.3, 88.3] as exp16 computes it (kernels_avx512.c):
 * x = n ln2 + r, a degree-6 polynomial in r, 2^n made in the exponent
 * bits. The clamps are max_ps then min_ps, which return their second
 * operand when the first is NaN: NaN comes out as exp(-87.3). */
static inline float exp_lanes(float x)
{
    x = x > -87.3f ? x : -87.3f;
    x = x < 88.3f ? x : 88.3f;
    const float n = rintf(x * 1.44269504f); /* to nearest, ties even: roundscale's mode */
    float r = fmaf(-n, 0.693359375f, x);    /* fnmadd: -(n c) + x, one rounding */
    r = fmaf(-n, -2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p, r * r, r + 1.0f);
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23; /* n in [-126, 127]: a normal 2^n */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

#endif
