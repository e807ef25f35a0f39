/* codec_neon.c: the codecs for aarch64 Advanced SIMD, 8 floats at a time.
 *
 * NOT TESTED ON ARM HARDWARE. The development machine is x86-64: this file
 * was built with an aarch64 cross compiler and its results checked against
 * codec_ref under user-mode emulation (qemu-aarch64) only. Correct there is
 * not yet fast on a real core; measure before trusting its speed.
 *
 * The same design as codec_avx2.c (read that first): one loop skeleton per
 * operation, one chunk decoder per format, the rows decoded once per chunk
 * in registers and used for all the heads of a block of accumulators (8
 * chunks of 8 floats, 16 of the 32 q registers: dot 4 x 2, 3 x 2, 2 x 4,
 * 1 x 8 heads x rows; axpy the same heads x chunks). A chunk is 8 values,
 * two float32x4_t (one int4 / fp4 word, a quarter of a q8_0 / q4_0 block).
 * NEON has no masked loads, so tails go through small zeroed copies.
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

/* [sum of a, of b, of c, of d]: pairwise adds shared by four sums. */
INLINE float32x4_t reduce4(F8 a, F8 b, F8 c, F8 d)
{
    const float32x4_t ab = vpaddq_f32(vaddq_f32(a.lo, a.hi), vaddq_f32(b.lo, b.hi));
    const float32x4_t cd = vpaddq_f32(vaddq_f32(c.lo, c.hi), vaddq_f32(d.lo, d.hi));
    return vpaddq_f32(ab, cd);
}

/* A block of GB heads x nr <= 8 / GB rows, the rows at base + r * stride:
 * out[g * ld + r] = q[g * n ..] . decode(row r). The rows are read one
 * after the other, each chunk decoded once for the GB heads, their
 * GB * NS accumulators in registers (q comes from L1); each row's sums wait
 * in part[] for one transposed reduction of the block. (Reading a chunk of
 * each row in turn instead, q loaded once for them, halves the loads from
 * L1 but streams from DRAM at half the speed: the prefetchers lose the
 * rows.) NS chunks in flight per head keep one long row from being bound
 * by the FMA latency. */
INLINE void dot_block(ChunkFn chunk, const size_t GB, const int per_row_scale, float *out, size_t ld, const float *q,
                      const unsigned char *base, size_t stride, size_t nr, size_t n)
{
    const size_t NS = GB == 1 ? 4 : GB == 2 ? 2 : 1, RB = 8 / GB;
    const F8 zero = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
    F8 part[8];
#pragma GCC unroll 1
    for (size_t r = 0; r < nr; r++) {
        const Row row = row_of(base + r * stride, n, per_row_scale);
        F8 acc[4][4];
        UNROLL_16
        for (size_t s = 0; s < NS; s++)
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                acc[s][g] = zero;
        size_t i = 0;
        for (; i + NS * W <= n; i += NS * W)
            UNROLL_16
            for (size_t s = 0; s < NS; s++) {
                const F8 v = chunk(&row, i + s * W, W);
                UNROLL_16
                for (size_t g = 0; g < GB; g++)
                    acc[s][g] = fma8(acc[s][g], load8(q + g * n + i + s * W, W), v);
            }
        for (; i < n; i += W) { /* what NS chunks at a time left, the last one partial */
            const size_t m = n - i < W ? n - i : W;
            const F8 v = chunk(&row, i, m);
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                acc[0][g] = fma8(acc[0][g], load8(q + g * n + i, m), v);
        }
        UNROLL_16
        for (size_t g = 0; g < GB; g++) {
            UNROLL_16
            for (size_t s = 1; s < NS; s++)
                acc[0][g] = (F8){ vaddq_f32(acc[0][g].lo, acc[s][g].lo), vaddq_f32(acc[0][g].hi, acc[s][g].hi) };
            part[g * RB + r] = acc[0][g];
        }
    }
    if (nr == 1 && GB == 1) {
        out[0] = hsum8(part[0]);
        return;
    }
    for (size_t g = 0; g < GB; g++)
        for (size_t r = nr; r < RB; r++)
            part[g * RB + r] = zero;
    float sums[8];
    vst1q_f32(sums, reduce4(part[0], part[1], part[2], part[3]));
    if (GB * RB > 4)
        vst1q_f32(sums + 4, reduce4(part[4], part[5], part[6], part[7]));
    for (size_t g = 0; g < GB; g++)
        for (size_t r = 0; r < nr; r++)
            out[g * ld + r] = sums[g * RB + r];
}

/* GB heads over all the rows, 8 / GB rows a block. */
INLINE void dot_heads(ChunkFn chunk, const size_t GB, const int per_row_scale, float *out, size_t ld, const float *q,
                      const unsigned char *rows, size_t stride, size_t n_rows, size_t n)
{
    const size_t RB = 8 / GB;
    for (size_t r = 0; r < n_rows; r += RB)
        dot_block(chunk, GB, per_row_scale, out + r, ld, q, rows + r * stride, stride,
                  n_rows - r < RB ? n_rows - r : RB, n);
}

/* The heads in blocks of 4, then 2, then 1 (G = 8: two blocks, each
 * decoding the rows, the second time from L1). */
INLINE void dot_tile(ChunkFn chunk, const int per_row_scale, float *out, size_t ld, const float *q, size_t G,
                     const void *rows, size_t stride, size_t n_rows, size_t n)
{
    const unsigned char *p = rows;
    for (size_t g = 0; g < G;) {
        const size_t left = G - g;
        float *o = out + g * ld;
        const float *qg = q + g * n;
        if (left >= 4) { /* a constant GB per call: see UNROLL_16 */
            dot_heads(chunk, 4, per_row_scale, o, ld, qg, p, stride, n_rows, n);
            g += 4;
        } else if (left >= 2) {
            dot_heads(chunk, 2, per_row_scale, o, ld, qg, p, stride, n_rows, n);
            g += 2;
        } else {
            dot_heads(chunk, 1, per_row_scale, o, ld, qg, p, stride, n_rows, n);
            g += 1;
        }
    }
}

/* GB heads x nc <= CB chunks of W values from value i0 on (GB * CB <= 8
 * accumulators, registers): acc[g * n + i0 ..] += sum_r w[g * ld + r] *
 * decode(row r)[i0 ..], the accumulators loaded once and stored once for all
 * the rows. The last chunk has m values. Called with nc = CB and m = W as
 * constants for the bulk of a row, with what is left at its end. With
 * prefetch > 0, each row's first `prefetch` bytes are prefetched (the whole
 * row, when the block is the first of several). */
INLINE void axpy_block(ChunkFn chunk, const size_t GB, const size_t CB, const int per_row_scale, float *acc,
                       const float *w, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows, size_t n,
                       size_t i0, size_t nc, size_t m, size_t prefetch)
{
    const F8 zero = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
    F8 a[8];
    float32x4_t wv[4];
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < CB; c++) {
            const float *p = acc + g * n + i0 + c * W;
            a[g * CB + c] = c >= nc ? zero : load8(p, c + 1 < nc ? W : m);
        }
    for (size_t r = 0; r < n_rows; r++) {
        const Row row = row_of(rows + r * stride, n, per_row_scale);
        for (size_t off = 0; off < prefetch; off += 64) /* see axpy_heads */
            __builtin_prefetch(row.p + off);
        UNROLL_16
        for (size_t g = 0; g < GB; g++)
            wv[g] = vdupq_n_f32(w[g * ld + r]);
        UNROLL_16
        for (size_t c = 0; c < CB; c++) {
            if (c >= nc)
                break;
            const F8 v = chunk(&row, i0 + c * W, c + 1 < nc ? W : m);
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                a[g * CB + c] = fma8(a[g * CB + c], (F8){ wv[g], wv[g] }, v);
        }
    }
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < CB && c < nc; c++) {
            float *p = acc + g * n + i0 + c * W;
            store8(p, a[g * CB + c], c + 1 < nc ? W : m);
        }
}

/* GB heads over the whole row length: blocks of CB chunks, then the rest.
 * When a row takes more than one block, the first block's pass over the
 * rows prefetches each whole row, so that memory is still read row after
 * row (reading part of every row, then the rest, streams from DRAM at half
 * the speed); the later passes find the rows in cache. */
INLINE void axpy_heads(ChunkFn chunk, const size_t GB, const int per_row_scale, float *acc, const float *w, size_t ld,
                       const unsigned char *rows, size_t stride, size_t n_rows, size_t n, size_t row_bytes)
{
    const size_t CB = GB == 1 ? 8 : GB == 2 ? 4 : 2;
    const size_t prefetch = n > CB * W ? row_bytes : 0;
    size_t i = 0;
    for (; i + CB * W <= n; i += CB * W)
        axpy_block(chunk, GB, CB, per_row_scale, acc, w, ld, rows, stride, n_rows, n, i, CB, W, i ? 0 : prefetch);
    if (i < n) {
        const size_t nc = (n - i + W - 1) / W;
        axpy_block(chunk, GB, CB, per_row_scale, acc, w, ld, rows, stride, n_rows, n, i, nc, n - i - (nc - 1) * W,
                   i ? 0 : prefetch);
    }
}

/* The heads in blocks of 4, then 2, then 1. */
INLINE void axpy_tile(ChunkFn chunk, const int per_row_scale, float *acc, const float *w, size_t ld, size_t G,
                      const void *rows, size_t stride, size_t n_rows, size_t n, size_t row_bytes)
{
    const unsigned char *p = rows;
    for (size_t g = 0; g < G;) {
        const size_t left = G - g;
        float *a = acc + g * n;
        const float *wg = w + g * ld;
        if (left >= 4) { /* a constant GB per call */
            axpy_heads(chunk, 4, per_row_scale, a, wg, ld, p, stride, n_rows, n, row_bytes);
            g += 4;
        } else if (left >= 2) {
            axpy_heads(chunk, 2, per_row_scale, a, wg, ld, p, stride, n_rows, n, row_bytes);
            g += 2;
        } else {
            axpy_heads(chunk, 1, per_row_scale, a, wg, ld, p, stride, n_rows, n, row_bytes);
            g += 1;
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

/* The per-row forms are tiles of one row (codec.h). */
#define ISA_OPS(fmt, FMT, per_row_scale)                                                                         \
    static void dequantize_##fmt(float *dst, const void *row, size_t n)                                     \
    {                                                                                                       \
        const Row r = row_of(row, n, per_row_scale);                                                        \
        dequantize_rows(chunk_##fmt, dst, &r, n);                                                           \
    }                                                                                                       \
    static void dot_rows_##fmt(float *out, size_t ld, const float *q, size_t G, const void *rows,           \
                               size_t stride, size_t n_rows, size_t n)                                      \
    {                                                                                                       \
        dot_tile(chunk_##fmt, per_row_scale, out, ld, q, G, rows, stride, n_rows, n);                       \
    }                                                                                                       \
    static void axpy_rows_##fmt(float *acc, const float *w, size_t ld, size_t G, const void *rows,          \
                                size_t stride, size_t n_rows, size_t n)                                     \
    {                                                                                                       \
        axpy_tile(chunk_##fmt, per_row_scale, acc, w, ld, G, rows, stride, n_rows, n, format_row_bytes(FMT, n)); \
    }                                                                                                       \
    static void dot_##fmt(float *out, const float *q, size_t G, const void *row, size_t n)                  \
    {                                                                                                       \
        dot_rows_##fmt(out, 1, q, G, row, 0, 1, n);                                                         \
    }                                                                                                       \
    static void axpy_##fmt(float *acc, const float *w, size_t G, const void *row, size_t n)                 \
    {                                                                                                       \
        axpy_rows_##fmt(acc, w, 1, G, row, 0, 1, n);                                                        \
    }

ISA_OPS(f32, FMT_F32, 0)
ISA_OPS(f16, FMT_F16, 0)
ISA_OPS(q8_0, FMT_Q8_0, 0)
ISA_OPS(q4_0, FMT_Q4_0, 0)
ISA_OPS(int4, FMT_INT4, 1)
ISA_OPS(fp4, FMT_FP4, 1)

#define ENTRY(F, fmt, quantize) [F] = { F, quantize, dequantize_##fmt, dot_##fmt, axpy_##fmt, dot_rows_##fmt, axpy_rows_##fmt }

/* quantize: the reference, except f16 (hardware conversion); f32's is a copy */
const FormatOps codec_neon[FMT_COUNT] = {
    ENTRY(FMT_F32, f32, codec_quantize_f32_ref),   ENTRY(FMT_F16, f16, quantize_f16),
    ENTRY(FMT_Q8_0, q8_0, codec_quantize_q8_0_ref), ENTRY(FMT_Q4_0, q4_0, codec_quantize_q4_0_ref),
    ENTRY(FMT_INT4, int4, codec_quantize_int4_ref), ENTRY(FMT_FP4, fp4, codec_quantize_fp4_ref),
};
