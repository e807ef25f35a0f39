/* codec_neon.c: the codecs for aarch64 Advanced SIMD, 8 floats at a time.
 *
 * NOT TESTED ON ARM HARDWARE. The development machine is x86-64: this file
 * was built with an aarch64 cross compiler and its results checked against
 * codec_ref under user-mode emulation (qemu-aarch64) only. Correct there is
 * not yet fast on a real core; measure before trusting its speed.
 *
 * The same design as codec_avx2.c (read that first): one loop skeleton per
 * operation, one chunk decoder per format, the row decoded once per chunk
 * in registers and used for all G heads. A chunk is 8 values, two
 * float32x4_t (one int4 / fp4 word, a quarter of a q8_0 / q4_0 block).
 * NEON has no masked loads, so tails go through small zeroed copies.
 *
 * Agrees with codec_ref: dequantize bit for bit, dot and axpy within float
 * rounding. quantize is the reference one except f16 (FCVTN, same bytes).
 * The dot accumulators are arrays indexed by head; the compiler keeps them
 * in registers when it unrolls (G = 1 .. 8 are separate cases). */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"

#define W 8           /* floats per chunk */
#define DOT_TILE 64   /* heads whose dot accumulators one pass holds */
#define INLINE static inline __attribute__((always_inline))
#define UNROLL_HEADS _Pragma("GCC unroll 8")

typedef struct {
    float32x4_t lo, hi; /* values 0-3, 4-7 of a chunk */
} F8;

typedef struct {
    const unsigned char *p; /* the row's bytes */
    float s;                /* int4, fp4: the row's scale */
} Row;

/* Values i .. i+W-1 of row r, those from m on zeroed (1 <= m <= W). */
typedef F8 (*ChunkFn)(const Row *r, size_t i, size_t m);

/* --- helpers ---------------------------------------------------------------- */

static const uint32_t mask_table[2 * W] = { ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0, 0, 0, 0, 0, 0, 0, 0 };

INLINE F8 keep(F8 v, size_t m)
{
    if (m == W)
        return v;
    const uint32_t *mk = mask_table + W - m;
    v.lo = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v.lo), vld1q_u32(mk)));
    v.hi = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v.hi), vld1q_u32(mk + 4)));
    return v;
}

/* W floats from x, those from m on zero (no read past x[m-1]). */
INLINE F8 load8(const float *x, size_t m)
{
    if (m == W)
        return (F8){ vld1q_f32(x), vld1q_f32(x + 4) };
    float t[W] = { 0 };
    memcpy(t, x, m * sizeof *t);
    return (F8){ vld1q_f32(t), vld1q_f32(t + 4) };
}

INLINE void store8(float *x, F8 v, size_t m)
{
    if (m == W) {
        vst1q_f32(x, v.lo);
        vst1q_f32(x + 4, v.hi);
        return;
    }
    float t[W];
    vst1q_f32(t, v.lo);
    vst1q_f32(t + 4, v.hi);
    memcpy(x, t, m * sizeof *t);
}

INLINE F8 fma8(F8 acc, F8 a, F8 b)
{
    return (F8){ vfmaq_f32(acc.lo, a.lo, b.lo), vfmaq_f32(acc.hi, a.hi, b.hi) };
}

INLINE F8 scale8(F8 v, float s)
{
    return (F8){ vmulq_n_f32(v.lo, s), vmulq_n_f32(v.hi, s) };
}

INLINE float load_fp16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

INLINE Row row_of(const void *row, size_t n, int per_row_scale)
{
    Row r = { row, 0.0f };
    if (per_row_scale)
        r.s = load_fp16(r.p + 4 * codec_row_words(n));
    return r;
}

INLINE F8 from_s16(int16x8_t q)
{
    return (F8){ vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), vcvtq_f32_s32(vmovl_high_s16(q)) };
}

/* The 8 nibbles of an int4 / fp4 word, in the low 4 bits of each lane
 * (lanes 0-3 in lo, 4-7 in hi). */
INLINE void nibbles(const Row *r, size_t i, uint32x4_t *lo, uint32x4_t *hi)
{
    uint32_t w;
    memcpy(&w, r->p + 4 * (i / 8), sizeof w);
    static const int32_t sh_lo[4] = { 0, -4, -8, -12 }, sh_hi[4] = { -16, -20, -24, -28 }; /* right shifts */
    const uint32x4_t v = vdupq_n_u32(w), f = vdupq_n_u32(0xf);
    *lo = vandq_u32(vshlq_u32(v, vld1q_s32(sh_lo)), f);
    *hi = vandq_u32(vshlq_u32(v, vld1q_s32(sh_hi)), f);
}

/* --- chunk decoders ------------------------------------------------------- */

static inline F8 chunk_f32(const Row *r, size_t i, size_t m)
{
    return load8((const float *)(const void *)r->p + i, m);
}

static inline F8 chunk_f16(const Row *r, size_t i, size_t m)
{
    uint16_t h[W] = { 0 };
    memcpy(h, r->p + 2 * i, 2 * m);
    const float16x8_t v = vreinterpretq_f16_u16(vld1q_u16(h));
    return (F8){ vcvt_f32_f16(vget_low_f16(v)), vcvt_high_f32_f16(v) };
}

static inline F8 chunk_q8_0(const Row *r, size_t i, size_t m)
{
    const unsigned char *blk = r->p + (i / QK8_0) * sizeof(BlockQ8_0);
    const int8x8_t b = vld1_s8((const int8_t *)(const void *)(blk + offsetof(BlockQ8_0, qs) + i % QK8_0));
    return keep(scale8(from_s16(vmovl_s8(b)), load_fp16(blk)), m);
}

static inline F8 chunk_q4_0(const Row *r, size_t i, size_t m)
{
    const unsigned char *blk = r->p + (i / QK4_0) * sizeof(BlockQ4_0);
    const size_t j = i % QK4_0; /* 0, 8: low nibbles of qs[j..]; 16, 24: high nibbles of qs[j-16..] */
    uint8x8_t b = vld1_u8(blk + offsetof(BlockQ4_0, qs) + j % 16);
    b = j < 16 ? vand_u8(b, vdup_n_u8(0xf)) : vshr_n_u8(b, 4);
    const int16x8_t q = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(b)), vdupq_n_s16(8));
    return keep(scale8(from_s16(q), load_fp16(blk)), m);
}

static inline F8 chunk_int4(const Row *r, size_t i, size_t m)
{
    uint32x4_t lo, hi;
    nibbles(r, i, &lo, &hi);
    /* sign-extend: nibble to the top, arithmetic shift back */
    const int32x4_t qlo = vshrq_n_s32(vshlq_n_s32(vreinterpretq_s32_u32(lo), 28), 28);
    const int32x4_t qhi = vshrq_n_s32(vshlq_n_s32(vreinterpretq_s32_u32(hi), 28), 28);
    return keep(scale8((F8){ vcvtq_f32_s32(qlo), vcvtq_f32_s32(qhi) }, r->s), m);
}

/* E2M1 nibbles to floats, by arithmetic on the bits: magnitude index k >= 2
 * is 2^(k/2 - 1) * (1 + (k&1)/2), whose float bits are (k << 22) + (126 <<
 * 23); k = 0, 1 are 0 and 0.5 (k * 0.5). The sign bit moves to bit 31. */
INLINE float32x4_t fp4_values(uint32x4_t nib)
{
    const uint32x4_t k = vandq_u32(nib, vdupq_n_u32(7));
    const uint32x4_t normal = vaddq_u32(vshlq_n_u32(k, 22), vdupq_n_u32(126u << 23));
    const uint32x4_t small = vreinterpretq_u32_f32(vmulq_n_f32(vcvtq_f32_u32(k), 0.5f));
    const uint32x4_t mag = vbslq_u32(vcgeq_u32(k, vdupq_n_u32(2)), normal, small);
    const uint32x4_t sign = vshlq_n_u32(vandq_u32(nib, vdupq_n_u32(8)), 28);
    return vreinterpretq_f32_u32(veorq_u32(mag, sign));
}

static inline F8 chunk_fp4(const Row *r, size_t i, size_t m)
{
    uint32x4_t lo, hi;
    nibbles(r, i, &lo, &hi);
    return keep(scale8((F8){ fp4_values(lo), fp4_values(hi) }, r->s), m);
}

/* --- the loop skeletons --------------------------------------------------- */

INLINE void dequantize_rows(ChunkFn chunk, float *dst, const Row *r, size_t n)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        store8(dst + i, chunk(r, i, W), W);
    if (i < n)
        store8(dst + i, chunk(r, i, n - i), n - i);
}

INLINE float hsum8(F8 v)
{
    return vaddvq_f32(vaddq_f32(v.lo, v.hi));
}

/* out[0] = q . decode(row): two accumulator pairs, two chunks a step. */
INLINE void dot_one(ChunkFn chunk, float *out, const float *q, const Row *r, size_t n)
{
    const F8 zero = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
    F8 a0 = zero, a1 = zero;
    size_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        a0 = fma8(a0, load8(q + i, W), chunk(r, i, W));
        a1 = fma8(a1, load8(q + i + W, W), chunk(r, i + W, W));
    }
    for (; i + W <= n; i += W)
        a0 = fma8(a0, load8(q + i, W), chunk(r, i, W));
    if (i < n)
        a0 = fma8(a0, load8(q + i, n - i), chunk(r, i, n - i));
    out[0] = hsum8((F8){ vaddq_f32(a0.lo, a1.lo), vaddq_f32(a0.hi, a1.hi) });
}

/* out[g] = q[g*n ..] . decode(row) for g < G <= DOT_TILE: one decode per chunk. */
INLINE void dot_heads(ChunkFn chunk, float *out, const float *q, size_t G, const Row *r, size_t n)
{
    F8 acc[DOT_TILE];
    UNROLL_HEADS
    for (size_t g = 0; g < G; g++)
        acc[g] = (F8){ vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
    size_t i = 0;
    for (; i + W <= n; i += W) {
        const F8 v = chunk(r, i, W);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++)
            acc[g] = fma8(acc[g], load8(q + g * n + i, W), v);
    }
    if (i < n) {
        const F8 v = chunk(r, i, n - i);
        for (size_t g = 0; g < G; g++)
            acc[g] = fma8(acc[g], load8(q + g * n + i, n - i), v);
    }
    UNROLL_HEADS
    for (size_t g = 0; g < G; g++)
        out[g] = hsum8(acc[g]);
}

INLINE void dot_rows(ChunkFn chunk, float *out, const float *q, size_t G, const Row *r, size_t n)
{
    switch (G) { /* a constant G per case: see UNROLL_HEADS */
    case 0: return;
    case 1: dot_one(chunk, out, q, r, n); return;
    case 2: dot_heads(chunk, out, q, 2, r, n); return;
    case 3: dot_heads(chunk, out, q, 3, r, n); return;
    case 4: dot_heads(chunk, out, q, 4, r, n); return;
    case 5: dot_heads(chunk, out, q, 5, r, n); return;
    case 6: dot_heads(chunk, out, q, 6, r, n); return;
    case 7: dot_heads(chunk, out, q, 7, r, n); return;
    case 8: dot_heads(chunk, out, q, 8, r, n); return;
    default:
        for (size_t g0 = 0; g0 < G; g0 += DOT_TILE)
            dot_heads(chunk, out + g0, q + g0 * n, G - g0 < DOT_TILE ? G - g0 : DOT_TILE, r, n);
    }
}

/* acc[g*n + i] += w[g] * decode(row)[i]: one decode per chunk, G heads. */
INLINE void axpy_rows(ChunkFn chunk, float *acc, const float *w, size_t G, const Row *r, size_t n)
{
    size_t i = 0;
    for (; i + W <= n; i += W) {
        const F8 v = chunk(r, i, W);
        for (size_t g = 0; g < G; g++) {
            float *a = acc + g * n + i;
            const F8 wv = { vdupq_n_f32(w[g]), vdupq_n_f32(w[g]) };
            store8(a, fma8(load8(a, W), wv, v), W);
        }
    }
    if (i < n) {
        const size_t m = n - i;
        const F8 v = chunk(r, i, m);
        for (size_t g = 0; g < G; g++) {
            float *a = acc + g * n + i;
            const F8 wv = { vdupq_n_f32(w[g]), vdupq_n_f32(w[g]) };
            store8(a, fma8(load8(a, m), wv, v), m);
        }
    }
}

/* --- quantize: f16 in hardware, the others the reference ------------------ */

static void quantize_f16(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst;
    for (size_t i = 0; i < n; i += W) {
        const size_t m = n - i < W ? n - i : W;
        const F8 v = load8(src + i, m);
        uint16_t h[W];
        vst1q_u16(h, vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(v.lo), v.hi)));
        memcpy(p + 2 * i, h, 2 * m);
    }
}

/* --- the table -------------------------------------------------------------- */

#define ISA_OPS(fmt, per_row_scale)                                                             \
    static void dequantize_##fmt(float *dst, const void *row, size_t n)                         \
    {                                                                                           \
        const Row r = row_of(row, n, per_row_scale);                                            \
        dequantize_rows(chunk_##fmt, dst, &r, n);                                               \
    }                                                                                           \
    static void dot_##fmt(float *out, const float *q, size_t G, const void *row, size_t n)      \
    {                                                                                           \
        const Row r = row_of(row, n, per_row_scale);                                            \
        dot_rows(chunk_##fmt, out, q, G, &r, n);                                                \
    }                                                                                           \
    static void axpy_##fmt(float *acc, const float *w, size_t G, const void *row, size_t n)     \
    {                                                                                           \
        const Row r = row_of(row, n, per_row_scale);                                            \
        axpy_rows(chunk_##fmt, acc, w, G, &r, n);                                               \
    }

ISA_OPS(f32, 0)
ISA_OPS(f16, 0)
ISA_OPS(q8_0, 0)
ISA_OPS(q4_0, 0)
ISA_OPS(int4, 1)
ISA_OPS(fp4, 1)

const FormatOps codec_neon[FMT_COUNT] = {
    /* quantize: the reference, except f16 (hardware conversion); f32's is a copy */
    [FMT_F32] = { FMT_F32, codec_quantize_f32_ref, dequantize_f32, dot_f32, axpy_f32 },
    [FMT_F16] = { FMT_F16, quantize_f16, dequantize_f16, dot_f16, axpy_f16 },
    [FMT_Q8_0] = { FMT_Q8_0, codec_quantize_q8_0_ref, dequantize_q8_0, dot_q8_0, axpy_q8_0 },
    [FMT_Q4_0] = { FMT_Q4_0, codec_quantize_q4_0_ref, dequantize_q4_0, dot_q4_0, axpy_q4_0 },
    [FMT_INT4] = { FMT_INT4, codec_quantize_int4_ref, dequantize_int4, dot_int4, axpy_int4 },
    [FMT_FP4] = { FMT_FP4, codec_quantize_fp4_ref, dequantize_fp4, dot_fp4, axpy_fp4 },
};
