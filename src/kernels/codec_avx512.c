/* codec_avx512.c: the codecs for AVX-512 (F, BW, VL, DQ), 16 floats at a time.
 *
 * The same design as codec_avx2.c (read that first): one loop skeleton per
 * operation, one chunk decoder per format, the rows decoded once per chunk
 * in registers and used for all the heads of a block. With 32 zmm
 * registers a block holds 16 accumulators: dot 8 x 2, 4 x 4, 3 x 4, 2 x 8
 * or 1 x 16 (heads x rows), summed by one transposed reduction (reduce16);
 * axpy 8 x 2, 4 x 4, 3 x 4, 2 x 8, 1 x 16 (heads x chunks of 16 values).
 * More heads go in blocks of 8. What AVX-512 adds: mask registers, so every
 * tail is a masked load or store (no copies, no reads past the row), and a
 * 16-entry permute, so an fp4 nibble indexes its signed E2M1 value directly.
 *
 * Agrees with codec_ref: dequantize bit for bit, dot and axpy within float
 * rounding. quantize is the reference one except f16 (same bytes). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"

#define W 16          /* floats per register */
#ifndef PF_ROWS
#define PF_ROWS 8
#endif
#define INLINE static inline __attribute__((always_inline))
/* Unroll a loop over heads, rows or chunks of a block: with the counts
 * constants (every block size is), the accumulators then live in registers;
 * without it GCC -O2 keeps them in memory. */
#define UNROLL_16 CODEC_UNROLL

typedef struct {
    const unsigned char *p; /* the row's bytes */
    __m512 s;               /* int4, fp4: the row's scale, broadcast */
} Row;

/* Values i .. i+W-1 of row r, lanes >= m zeroed (1 <= m <= W). */
typedef __m512 (*ChunkFn)(const Row *r, size_t i, size_t m);

/* --- helpers ---------------------------------------------------------------- */

/* Lanes 0 .. m-1 (1 <= m <= 16). */
INLINE __mmask16 lanes(size_t m)
{
    return (__mmask16)((1u << m) - 1u);
}

INLINE __m512 keep(__m512 v, size_t m)
{
    return m == W ? v : _mm512_maskz_mov_ps(lanes(m), v);
}

INLINE float load_fp16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

INLINE Row row_of(const void *row, size_t n, int per_row_scale)
{
    Row r = { row, _mm512_setzero_ps() };
    if (per_row_scale)
        r.s = _mm512_set1_ps(load_fp16(r.p + 4 * codec_row_words(n)));
    return r;
}

/* The 16 nibbles of int4 / fp4 words i/8 and i/8 + 1, each in the low bits
 * of its lane. The second word is read only when the chunk reaches it
 * (m > 8): past the row's last word lies its scale, then the next row. */
INLINE __m512i nibbles(const Row *r, size_t i, size_t m)
{
    int32_t w[2] = { 0, 0 };
    memcpy(&w[0], r->p + 4 * (i / 8), 4);
    if (m > 8)
        memcpy(&w[1], r->p + 4 * (i / 8) + 4, 4);
    const __m512i both = _mm512_inserti64x4(_mm512_set1_epi32(w[0]), _mm256_set1_epi32(w[1]), 1);
    return _mm512_srlv_epi32(both, _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28));
}

/* --- chunk decoders ------------------------------------------------------- */

static inline __m512 chunk_f32(const Row *r, size_t i, size_t m)
{
    const float *x = (const float *)(const void *)r->p + i;
    return m == W ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(lanes(m), x);
}

static inline __m512 chunk_f16(const Row *r, size_t i, size_t m)
{
    const void *x = r->p + 2 * i;
    return _mm512_cvtph_ps(m == W ? _mm256_loadu_si256((const __m256i *)x) : _mm256_maskz_loadu_epi16(lanes(m), x));
}

static inline __m512 chunk_q8_0(const Row *r, size_t i, size_t m)
{
    const unsigned char *blk = r->p + (i / QK8_0) * sizeof(BlockQ8_0);
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + offsetof(BlockQ8_0, qs) + i % QK8_0));
    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
    return keep(_mm512_mul_ps(q, _mm512_set1_ps(load_fp16(blk))), m);
}

static inline __m512 chunk_q4_0(const Row *r, size_t i, size_t m)
{
    const unsigned char *blk = r->p + (i / QK4_0) * sizeof(BlockQ4_0);
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + offsetof(BlockQ4_0, qs)));
    __m512i q = _mm512_cvtepu8_epi32(b); /* i % 32 == 0: the low nibbles; 16: the high ones */
    q = i % QK4_0 == 0 ? _mm512_and_si512(q, _mm512_set1_epi32(0xf)) : _mm512_srli_epi32(q, 4);
    q = _mm512_sub_epi32(q, _mm512_set1_epi32(8));
    return keep(_mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(load_fp16(blk))), m);
}

static inline __m512 chunk_int4(const Row *r, size_t i, size_t m)
{
    const __m512i q = _mm512_srai_epi32(_mm512_slli_epi32(nibbles(r, i, m), 28), 28); /* sign-extend */
    return keep(_mm512_mul_ps(_mm512_cvtepi32_ps(q), r->s), m);
}

static inline __m512 chunk_fp4(const Row *r, size_t i, size_t m)
{
    /* the whole nibble (sign and magnitude index) picks the signed value */
    static const float values[16] = { FP4_MAGNITUDES, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f };
    const __m512 v = _mm512_permutexvar_ps(nibbles(r, i, m), _mm512_loadu_ps(values)); /* index: low 4 bits */
    return keep(_mm512_mul_ps(v, r->s), m);
}

/* --- the loop skeletons --------------------------------------------------- */

/* dst[0..n) = decode(row) */
INLINE void dequantize_rows(ChunkFn chunk, float *dst, const Row *r, size_t n)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm512_storeu_ps(dst + i, chunk(r, i, W));
    if (i < n)
        _mm512_mask_storeu_ps(dst + i, lanes(n - i), chunk(r, i, n - i));
}

/* Lane k of the result = the sum of a[k]'s lanes, k < 16: a transposed
 * reduction, 15 adds for 16 sums (where one reduce_add each costs 4). */
INLINE __m512 reduce16(const __m512 *a)
{
    __m512 x[16], t[8], u[4];
    UNROLL_16
    for (int s = 0; s < 16; s++) /* slot 4j + m takes a[4m + j]: the shuffles below transpose it back */
        x[s] = a[(s % 4) * 4 + s / 4];
    UNROLL_16
    for (int k = 0; k < 8; k++) /* 128-bit quarters: [a0+a2, a1+a3, b0+b2, b1+b3] */
        t[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0x44),
                             _mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0xee));
    UNROLL_16
    for (int k = 0; k < 4; k++) /* quarter m: four lanes of source 4k + m */
        u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * k], t[2 * k + 1], 0x88),
                             _mm512_shuffle_f32x4(t[2 * k], t[2 * k + 1], 0xdd));
    const __m512 w0 = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x44), _mm512_shuffle_ps(u[0], u[1], 0xee));
    const __m512 w1 = _mm512_add_ps(_mm512_shuffle_ps(u[2], u[3], 0x44), _mm512_shuffle_ps(u[2], u[3], 0xee));
    return _mm512_add_ps(_mm512_shuffle_ps(w0, w1, 0x88), _mm512_shuffle_ps(w0, w1, 0xdd));
}

/* A block of GB heads x nr <= 16 / GB rows, the rows at base + r * stride:
 * out[g * ld + r] = q[g * n ..] . decode(row r). The rows are read one
 * after the other, each chunk decoded once for the GB heads, their
 * GB * NS accumulators in registers (q comes from L1); each row's sums wait
 * in part[] for one transposed reduction of the block. (Reading a chunk of
 * each row in turn instead, q loaded once for them, halves the loads from
 * L1 but streams from DRAM at half the speed: the prefetchers lose the
 * rows.) NS chunks in flight per head keep one long row from being bound
 * by the FMA latency. */
INLINE void dot_block(ChunkFn chunk, const size_t GB, const int per_row_scale, float *out, size_t ld, const float *q,
                      const unsigned char *base, size_t stride, size_t nr, size_t n, size_t row_bytes)
{
    const size_t NS = GB == 1 ? 4 : GB == 2 ? 2 : 1, RB = 16 / GB;
    __m512 part[16];
#pragma GCC unroll 1
    for (size_t r = 0; r < nr; r++) {
        const Row row = row_of(base + r * stride, n, per_row_scale);
        for (size_t off = 0; off < row_bytes; off += 64)
            __builtin_prefetch(row.p + PF_ROWS * stride + off);
        __m512 acc[4][4];
        UNROLL_16
        for (size_t s = 0; s < NS; s++)
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                acc[s][g] = _mm512_setzero_ps();
        size_t i = 0;
        for (; i + NS * W <= n; i += NS * W)
            UNROLL_16
            for (size_t s = 0; s < NS; s++) {
                const __m512 v = chunk(&row, i + s * W, W);
                UNROLL_16
                for (size_t g = 0; g < GB; g++)
                    acc[s][g] = _mm512_fmadd_ps(_mm512_loadu_ps(q + g * n + i + s * W), v, acc[s][g]);
            }
        for (; i < n; i += W) { /* what NS chunks at a time left, the last one partial */
            const size_t m = n - i < W ? n - i : W;
            const __m512 v = chunk(&row, i, m);
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                acc[0][g] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes(m), q + g * n + i), v, acc[0][g]);
        }
        UNROLL_16
        for (size_t g = 0; g < GB; g++) {
            UNROLL_16
            for (size_t s = 1; s < NS; s++)
                acc[0][g] = _mm512_add_ps(acc[0][g], acc[s][g]);
            part[g * RB + r] = acc[0][g];
        }
    }
    if (nr == 1 && GB == 1) {
        out[0] = _mm512_reduce_add_ps(part[0]);
        return;
    }
    for (size_t g = 0; g < GB; g++)
        for (size_t r = nr; r < RB; r++)
            part[g * RB + r] = _mm512_setzero_ps();
    float sums[16];
    _mm512_storeu_ps(sums, reduce16(part));
    for (size_t g = 0; g < GB; g++)
        for (size_t r = 0; r < nr; r++)
            out[g * ld + r] = sums[g * RB + r];
}

/* GB heads over all the rows, 16 / GB rows a block. */
INLINE void dot_heads(ChunkFn chunk, const size_t GB, const int per_row_scale, float *out, size_t ld, const float *q,
                      const unsigned char *rows, size_t stride, size_t n_rows, size_t n, size_t row_bytes)
{
    const size_t RB = 16 / GB;
    for (size_t r = 0; r < n_rows; r += RB)
        dot_block(chunk, GB, per_row_scale, out + r, ld, q, rows + r * stride, stride,
                  n_rows - r < RB ? n_rows - r : RB, n, row_bytes);
}

/* The heads in blocks of 4, then 2, then 1 (G = 8: two blocks, each
 * decoding the rows, the second time from L1). */
INLINE void dot_tile(ChunkFn chunk, const int per_row_scale, float *out, size_t ld, const float *q, size_t G,
                     const void *rows, size_t stride, size_t n_rows, size_t n, size_t row_bytes)
{
    const unsigned char *p = rows;
    for (size_t g = 0; g < G;) {
        const size_t left = G - g;
        float *o = out + g * ld;
        const float *qg = q + g * n;
        if (left >= 4) { /* a constant GB per call: see UNROLL_16 */
            dot_heads(chunk, 4, per_row_scale, o, ld, qg, p, stride, n_rows, n, n_rows > 1 ? row_bytes : 0);
            g += 4;
        } else if (left >= 2) {
            dot_heads(chunk, 2, per_row_scale, o, ld, qg, p, stride, n_rows, n, n_rows > 1 ? row_bytes : 0);
            g += 2;
        } else {
            dot_heads(chunk, 1, per_row_scale, o, ld, qg, p, stride, n_rows, n, n_rows > 1 ? row_bytes : 0);
            g += 1;
        }
    }
}

/* GB heads x nc <= CB chunks of W values from value i0 on (GB * CB <= 16
 * accumulators, registers): acc[g * n + i0 ..] += sum_r w[g * ld + r] *
 * decode(row r)[i0 ..], the accumulators loaded once and stored once for all
 * the rows. The last chunk has m lanes. Called with nc = CB and m = W as
 * constants for the bulk of a row, with what is left at its end. With
 * prefetch > 0, each row's first `prefetch` bytes are prefetched (the whole
 * row, when the block is the first of several). */
INLINE void axpy_block(ChunkFn chunk, const size_t GB, const size_t CB, const int per_row_scale, float *acc,
                       const float *w, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows, size_t n,
                       size_t i0, size_t nc, size_t m, size_t prefetch)
{
    __m512 a[16], wv[4];
    const __mmask16 mk = lanes(m);
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < CB; c++) {
            const float *p = acc + g * n + i0 + c * W;
            a[g * CB + c] = c >= nc ? _mm512_setzero_ps()
                            : c + 1 < nc ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mk, p);
        }
    for (size_t r = 0; r < n_rows; r++) {
        const Row row = row_of(rows + r * stride, n, per_row_scale);
        for (size_t off = 0; off < prefetch; off += 64) /* see axpy_heads */
            __builtin_prefetch(row.p + PF_ROWS * stride + off);
        UNROLL_16
        for (size_t g = 0; g < GB; g++)
            wv[g] = _mm512_set1_ps(w[g * ld + r]);
        UNROLL_16
        for (size_t c = 0; c < CB; c++) {
            if (c >= nc)
                break;
            const __m512 v = chunk(&row, i0 + c * W, c + 1 < nc ? W : m);
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                a[g * CB + c] = _mm512_fmadd_ps(wv[g], v, a[g * CB + c]);
        }
    }
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < CB && c < nc; c++) {
            float *p = acc + g * n + i0 + c * W;
            if (c + 1 < nc)
                _mm512_storeu_ps(p, a[g * CB + c]);
            else
                _mm512_mask_storeu_ps(p, mk, a[g * CB + c]);
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
    const size_t CB = GB == 4 ? 4 : 8;
    const size_t prefetch = n_rows > 1 ? row_bytes : 0;
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
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm256_storeu_si256((__m256i *)(void *)(p + 2 * i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        const __mmask16 mk = lanes(n - i);
        _mm256_mask_storeu_epi16(p + 2 * i, mk,
                                 _mm512_cvtps_ph(_mm512_maskz_loadu_ps(mk, src + i), _MM_FROUND_TO_NEAREST_INT));
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
        dot_tile(chunk_##fmt, per_row_scale, out, ld, q, G, rows, stride, n_rows, n, format_row_bytes(FMT, n)); \
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
const FormatOps codec_avx512[FMT_COUNT] = {
    ENTRY(FMT_F32, f32, codec_quantize_f32_ref),   ENTRY(FMT_F16, f16, quantize_f16),
    ENTRY(FMT_Q8_0, q8_0, codec_quantize_q8_0_ref), ENTRY(FMT_Q4_0, q4_0, codec_quantize_q4_0_ref),
    ENTRY(FMT_INT4, int4, codec_quantize_int4_ref), ENTRY(FMT_FP4, fp4, codec_quantize_fp4_ref),
};
