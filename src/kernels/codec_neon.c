/* codec_neon.c: the codecs for aarch64 Advanced SIMD, 8 floats at a time.
 *
 * NOT TESTED ON ARM HARDWARE. The development machine is x86-64: this file
 * was built with an aarch64 cross compiler and its results checked against
 * codec_ref under user-mode emulation (qemu-aarch64) only. Correct there is
 * not yet fast on a real core; measure before trusting its speed.
 *
 * The same design as codec_avx2.c (read that first): one chunk decoder per
 * format, the loop skeletons of codec_tiles.h around them. A chunk is 8
 * values, two float32x4_t (one int4 / fp4 word, a quarter of a q8_0 / q4_0
 * block); a block of accumulators holds 8 chunks (NACC), 16 of the 32
 * registers. NEON has no masked loads, so tails go through small zeroed
 * copies. The blocking was chosen on x86 (codec_tiles.h); on a real ARM core
 * other sizes may do better.
 *
 * Agrees with codec_ref: dequantize bit for bit, dot and axpy within float
 * rounding. quantize is the reference one except f16 (FCVTN, same bytes). */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"

#define W 8           /* floats per chunk */
#define INLINE static inline __attribute__((always_inline))
/* Unroll a loop over heads, rows or chunks of a block: with the counts
 * constants (every block size is), the accumulators then live in registers. */
#define UNROLL_16 CODEC_UNROLL

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

/* q8_0 and q4_0 in two parts, for dot (codec_tiles.h): a whole chunk's
 * codes, and its block's scale. */
static inline F8 raw_q8_0(const Row *r, size_t i)
{
    const unsigned char *blk = r->p + (i / QK8_0) * sizeof(BlockQ8_0);
    return from_s16(vmovl_s8(vld1_s8((const int8_t *)(const void *)(blk + offsetof(BlockQ8_0, qs) + i % QK8_0))));
}

static inline F8 raw_q4_0(const Row *r, size_t i)
{
    const unsigned char *blk = r->p + (i / QK4_0) * sizeof(BlockQ4_0);
    const size_t j = i % QK4_0; /* as chunk_q4_0 */
    uint8x8_t b = vld1_u8(blk + offsetof(BlockQ4_0, qs) + j % 16);
    b = j < 16 ? vand_u8(b, vdup_n_u8(0xf)) : vshr_n_u8(b, 4);
    return from_s16(vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(b)), vdupq_n_s16(8)));
}

static inline F8 scale_q8_0(const Row *r, size_t i)
{
    const float d = load_fp16(r->p + (i / QK8_0) * sizeof(BlockQ8_0));
    return (F8){ vdupq_n_f32(d), vdupq_n_f32(d) };
}

static inline F8 scale_q4_0(const Row *r, size_t i)
{
    const float d = load_fp16(r->p + (i / QK4_0) * sizeof(BlockQ4_0));
    return (F8){ vdupq_n_f32(d), vdupq_n_f32(d) };
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

/* The per-channel code formats: a code is its own value (the cache folds
 * the channel's scale into the query). u4 packs like int4; u2 is 16 codes
 * to a word, a chunk of 8 its low or high half (i a multiple of 8). */
static inline F8 chunk_u4(const Row *r, size_t i, size_t m)
{
    uint32x4_t lo, hi;
    nibbles(r, i, &lo, &hi);
    return keep((F8){ vcvtq_f32_u32(lo), vcvtq_f32_u32(hi) }, m);
}

static inline F8 chunk_u2(const Row *r, size_t i, size_t m)
{
    uint32_t w;
    memcpy(&w, r->p + 4 * (i / 16), sizeof w);
    w >>= 2 * (i % 16); /* 0 or 8: codes from bit 0 or bit 16 */
    static const int32_t sh_lo[4] = { 0, -2, -4, -6 }, sh_hi[4] = { -8, -10, -12, -14 }; /* right shifts */
    const uint32x4_t v = vdupq_n_u32(w), three = vdupq_n_u32(3);
    const uint32x4_t lo = vandq_u32(vshlq_u32(v, vld1q_s32(sh_lo)), three);
    const uint32x4_t hi = vandq_u32(vshlq_u32(v, vld1q_s32(sh_hi)), three);
    return keep((F8){ vcvtq_f32_u32(lo), vcvtq_f32_u32(hi) }, m);
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

/* --- the shared skeletons (codec_tiles.h) ---------------------------------- */

#define NACC 8 /* accumulators (of two registers each) a block keeps in registers */
typedef F8 V;

INLINE V v_zero(void) { return (F8){ vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) }; }
INLINE V v_load(const float *p) { return load8(p, W); }
INLINE V v_load_part(const float *p, size_t m) { return load8(p, m); }
INLINE void v_store(float *p, V v) { store8(p, v, W); }
INLINE void v_store_part(float *p, V v, size_t m) { store8(p, v, m); }
INLINE V v_set1(float x) { return (F8){ vdupq_n_f32(x), vdupq_n_f32(x) }; }
INLINE V v_fma(V a, V b, V c) { return fma8(c, a, b); }
INLINE V v_mul(V a, V b) { return (F8){ vmulq_f32(a.lo, b.lo), vmulq_f32(a.hi, b.hi) }; }
INLINE V v_add(V a, V b) { return (F8){ vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi) }; }

/* [sum of a, of b, of c, of d]: pairwise adds shared by four sums. */
INLINE float32x4_t reduce4(F8 a, F8 b, F8 c, F8 d)
{
    const float32x4_t ab = vpaddq_f32(vaddq_f32(a.lo, a.hi), vaddq_f32(b.lo, b.hi));
    const float32x4_t cd = vpaddq_f32(vaddq_f32(c.lo, c.hi), vaddq_f32(d.lo, d.hi));
    return vpaddq_f32(ab, cd);
}

INLINE void v_reduce(float *sums, const V *part)
{
    vst1q_f32(sums, reduce4(part[0], part[1], part[2], part[3]));
    vst1q_f32(sums + 4, reduce4(part[4], part[5], part[6], part[7]));
}

#include "kernels/codec_tiles.h"

/* --- the table -------------------------------------------------------------- */

const FormatOps codec_neon[FMT_COUNT] = {
    CODEC_ENTRY(FMT_F32, f32, codec_quantize_f32_ref),   CODEC_ENTRY(FMT_F16, f16, quantize_f16),
    CODEC_ENTRY(FMT_Q8_0, q8_0, codec_quantize_q8_0_ref), CODEC_ENTRY(FMT_Q4_0, q4_0, codec_quantize_q4_0_ref),
    CODEC_ENTRY(FMT_INT4, int4, codec_quantize_int4_ref), CODEC_ENTRY(FMT_FP4, fp4, codec_quantize_fp4_ref),
    CODEC_ENTRY(FMT_U4, u4, codec_quantize_u4_ref),       CODEC_ENTRY(FMT_U2, u2, codec_quantize_u2_ref),
};
