/* codec_avx2.c: the codecs for AVX2 + FMA + F16C, 8 floats at a time.
 *
 * One loop skeleton per operation (dequantize_rows, dot_tile, axpy_tile)
 * walks the rows in chunks of 8 values; each format contributes only a chunk
 * decoder, chunk_<fmt>(row, i, m): values i .. i+7 in one register, lanes
 * from m on zeroed. The skeletons are always inlined with the decoder as a
 * constant, so every format gets its own loop with the decoder inlined: the
 * row is dequantized in registers, never into a temporary f32 row.
 *
 * Tiles (dot_rows, axpy_rows; the per-row dot and axpy are tiles of one
 * row): every loop works on a block of accumulators that stays in
 * registers, 8 of them (16 ymm registers in all), the block's sizes being
 * constants so that GCC unrolls it fully.
 *   dot   GB heads x RB rows (4 x 2, 3 x 2, 2 x 4, 1 x 8): a chunk of q is
 *         loaded once for RB rows, a chunk of a row decoded once for GB
 *         heads, and the GB * RB sums leave through one transposed
 *         reduction (reduce8) instead of a horizontal add each.
 *   axpy  GB heads x CB chunks of the output (4 x 2, 3 x 2, 2 x 4, 1 x 8):
 *         loaded once, every row of the tile added in, stored once,
 *         instead of a load and a store of the accumulators per row.
 * More heads go in blocks of 4 (the rows are decoded again per block, from
 * L1). Before the tiles, per-row calls reloaded q and the accumulators from
 * L1 for every row: with 4 heads the load / store ports, not DRAM, bound
 * decode attention (about a third of the read bandwidth, f32 flash).
 * Misaligned acc costs up to 2x: give 64-byte-aligned buffers.
 *
 * Reads stay inside the row: q8_0 and q4_0 rows are whole blocks and int4,
 * fp4 rows whole words, so a decoder may read its whole chunk; f32 and f16
 * tails are read with masked loads or through a small copy.
 *
 * Agrees with codec_ref: dequantize bit for bit (the same one multiply per
 * value), dot and axpy within float rounding (FMA, 8 lanes summed at the
 * end; axpy_rows adds the rows in order, one FMA each). quantize is the
 * reference one except f16 (F16C, same bytes). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"

#define W 8           /* floats per register */
#define INLINE static inline __attribute__((always_inline))
/* Unroll a loop over heads, rows or chunks of a block: with the counts
 * constants (every block size is), the accumulators then live in registers;
 * without it GCC -O2 keeps them in memory. */
#define UNROLL_16 CODEC_UNROLL

typedef struct {
    const unsigned char *p; /* the row's bytes */
    __m256 s;               /* int4, fp4: the row's scale, broadcast */
} Row;

/* Values i .. i+W-1 of row r, lanes >= m zeroed (1 <= m <= W). */
typedef __m256 (*ChunkFn)(const Row *r, size_t i, size_t m);

/* --- helpers ---------------------------------------------------------------- */

static const int32_t mask_table[2 * W] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };

/* All-ones in lanes 0 .. m-1. */
INLINE __m256i lanes(size_t m)
{
    return _mm256_loadu_si256((const __m256i *)(mask_table + W - m));
}

INLINE __m256 keep(__m256 v, size_t m)
{
    return m == W ? v : _mm256_and_ps(v, _mm256_castsi256_ps(lanes(m)));
}

INLINE float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INLINE float load_fp16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

INLINE Row row_of(const void *row, size_t n, int per_row_scale)
{
    Row r = { row, _mm256_setzero_ps() };
    if (per_row_scale)
        r.s = _mm256_set1_ps(load_fp16(r.p + 4 * codec_row_words(n)));
    return r;
}

/* The 8 nibbles of an int4 / fp4 word, each in the low bits of its lane
 * (higher bits hold the nibbles above it: mask or shift them off). */
INLINE __m256i nibbles(const Row *r, size_t i)
{
    int32_t w;
    memcpy(&w, r->p + 4 * (i / 8), sizeof w);
    return _mm256_srlv_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
}

/* --- chunk decoders ------------------------------------------------------- */

static inline __m256 chunk_f32(const Row *r, size_t i, size_t m)
{
    const float *x = (const float *)(const void *)r->p + i;
    return m == W ? _mm256_loadu_ps(x) : _mm256_maskload_ps(x, lanes(m));
}

static inline __m256 chunk_f16(const Row *r, size_t i, size_t m)
{
    const unsigned char *x = r->p + 2 * i;
    if (m == W)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)x));
    uint16_t h[W] = { 0 };
    memcpy(h, x, 2 * m);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)h));
}

static inline __m256 chunk_q8_0(const Row *r, size_t i, size_t m)
{
    const unsigned char *blk = r->p + (i / QK8_0) * sizeof(BlockQ8_0);
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(blk + offsetof(BlockQ8_0, qs) + i % QK8_0));
    const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    return keep(_mm256_mul_ps(q, _mm256_set1_ps(load_fp16(blk))), m);
}

static inline __m256 chunk_q4_0(const Row *r, size_t i, size_t m)
{
    const unsigned char *blk = r->p + (i / QK4_0) * sizeof(BlockQ4_0);
    const size_t j = i % QK4_0; /* 0, 8: low nibbles of qs[j..]; 16, 24: high nibbles of qs[j-16..] */
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(blk + offsetof(BlockQ4_0, qs) + j % 16));
    __m256i q = _mm256_cvtepu8_epi32(b);
    q = j < 16 ? _mm256_and_si256(q, _mm256_set1_epi32(0xf)) : _mm256_srli_epi32(q, 4);
    q = _mm256_sub_epi32(q, _mm256_set1_epi32(8));
    return keep(_mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(load_fp16(blk))), m);
}

static inline __m256 chunk_int4(const Row *r, size_t i, size_t m)
{
    __m256i q = _mm256_srai_epi32(_mm256_slli_epi32(nibbles(r, i), 28), 28); /* sign-extend */
    return keep(_mm256_mul_ps(_mm256_cvtepi32_ps(q), r->s), m);
}

static inline __m256 chunk_fp4(const Row *r, size_t i, size_t m)
{
    const __m256i nib = nibbles(r, i);
    const __m256 mag = _mm256_permutevar8x32_ps(_mm256_setr_ps(FP4_MAGNITUDES), nib); /* index: low 3 bits */
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(nib, _mm256_set1_epi32(8)), 28);
    return keep(_mm256_mul_ps(_mm256_xor_ps(mag, _mm256_castsi256_ps(sign)), r->s), m);
}

/* --- the loop skeletons --------------------------------------------------- */

/* dst[0..n) = decode(row) */
INLINE void dequantize_rows(ChunkFn chunk, float *dst, const Row *r, size_t n)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm256_storeu_ps(dst + i, chunk(r, i, W));
    if (i < n)
        _mm256_maskstore_ps(dst + i, lanes(n - i), chunk(r, i, n - i));
}

/* Lane k of the result = the sum of a[k]'s lanes, k < 8: a transposed
 * reduction, 7 adds for 8 sums. */
INLINE __m256 reduce8(const __m256 *a)
{
    __m256 x[8], s[4];
    UNROLL_16
    for (int k = 0; k < 8; k++) /* slot 2j takes a[j], slot 2j + 1 a[4 + j]: the hadds interleave them */
        x[k] = a[k % 2 ? 4 + k / 2 : k / 2];
    UNROLL_16
    for (int k = 0; k < 4; k++) /* halves: [x0.lo + x0.hi, x1.lo + x1.hi] */
        s[k] = _mm256_add_ps(_mm256_permute2f128_ps(x[2 * k], x[2 * k + 1], 0x20),
                             _mm256_permute2f128_ps(x[2 * k], x[2 * k + 1], 0x31));
    return _mm256_hadd_ps(_mm256_hadd_ps(s[0], s[1]), _mm256_hadd_ps(s[2], s[3]));
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
    __m256 part[8];
#pragma GCC unroll 1
    for (size_t r = 0; r < nr; r++) {
        const Row row = row_of(base + r * stride, n, per_row_scale);
        __m256 acc[4][4];
        UNROLL_16
        for (size_t s = 0; s < NS; s++)
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                acc[s][g] = _mm256_setzero_ps();
        size_t i = 0;
        for (; i + NS * W <= n; i += NS * W)
            UNROLL_16
            for (size_t s = 0; s < NS; s++) {
                const __m256 v = chunk(&row, i + s * W, W);
                UNROLL_16
                for (size_t g = 0; g < GB; g++)
                    acc[s][g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + g * n + i + s * W), v, acc[s][g]);
            }
        for (; i < n; i += W) { /* what NS chunks at a time left, the last one partial */
            const size_t m = n - i < W ? n - i : W;
            const __m256 v = chunk(&row, i, m);
            UNROLL_16
            for (size_t g = 0; g < GB; g++) {
                const float *qg = q + g * n + i;
                const __m256 qc = m == W ? _mm256_loadu_ps(qg) : _mm256_maskload_ps(qg, lanes(m));
                acc[0][g] = _mm256_fmadd_ps(qc, v, acc[0][g]);
            }
        }
        UNROLL_16
        for (size_t g = 0; g < GB; g++) {
            UNROLL_16
            for (size_t s = 1; s < NS; s++)
                acc[0][g] = _mm256_add_ps(acc[0][g], acc[s][g]);
            part[g * RB + r] = acc[0][g];
        }
    }
    if (nr == 1 && GB == 1) {
        out[0] = hsum(part[0]);
        return;
    }
    for (size_t g = 0; g < GB; g++)
        for (size_t r = nr; r < RB; r++)
            part[g * RB + r] = _mm256_setzero_ps();
    float sums[8];
    _mm256_storeu_ps(sums, reduce8(part));
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
 * the rows. The last chunk has m lanes. Called with nc = CB and m = W as
 * constants for the bulk of a row, with what is left at its end. With
 * prefetch > 0, each row's first `prefetch` bytes are prefetched (the whole
 * row, when the block is the first of several). */
INLINE void axpy_block(ChunkFn chunk, const size_t GB, const size_t CB, const int per_row_scale, float *acc,
                       const float *w, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows, size_t n,
                       size_t i0, size_t nc, size_t m, size_t prefetch)
{
    __m256 a[8], wv[4];
    const __m256i mk = lanes(m);
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < CB; c++) {
            const float *p = acc + g * n + i0 + c * W;
            a[g * CB + c] = c >= nc ? _mm256_setzero_ps()
                            : c + 1 < nc || m == W ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mk);
        }
    for (size_t r = 0; r < n_rows; r++) {
        const Row row = row_of(rows + r * stride, n, per_row_scale);
        for (size_t off = 0; off < prefetch; off += 64) /* see axpy_heads */
            __builtin_prefetch(row.p + off);
        UNROLL_16
        for (size_t g = 0; g < GB; g++)
            wv[g] = _mm256_set1_ps(w[g * ld + r]);
        UNROLL_16
        for (size_t c = 0; c < CB; c++) {
            if (c >= nc)
                break;
            const __m256 v = chunk(&row, i0 + c * W, c + 1 < nc ? W : m);
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                a[g * CB + c] = _mm256_fmadd_ps(wv[g], v, a[g * CB + c]);
        }
    }
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < CB && c < nc; c++) {
            float *p = acc + g * n + i0 + c * W;
            if (c + 1 < nc || m == W)
                _mm256_storeu_ps(p, a[g * CB + c]);
            else
                _mm256_maskstore_ps(p, mk, a[g * CB + c]);
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

/* --- quantize: f16 with F16C, the others the reference --------------------- */

static void quantize_f16(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst;
    size_t i = 0;
    for (; i + W <= n; i += W)
        _mm_storeu_si128((__m128i *)(void *)(p + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        uint16_t h[W];
        _mm_storeu_si128((__m128i *)(void *)h,
                         _mm256_cvtps_ph(_mm256_maskload_ps(src + i, lanes(n - i)), _MM_FROUND_TO_NEAREST_INT));
        memcpy(p + 2 * i, h, 2 * (n - i));
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

/* quantize: the reference, except f16 (F16C); f32's is a copy */
const FormatOps codec_avx2[FMT_COUNT] = {
    ENTRY(FMT_F32, f32, codec_quantize_f32_ref),   ENTRY(FMT_F16, f16, quantize_f16),
    ENTRY(FMT_Q8_0, q8_0, codec_quantize_q8_0_ref), ENTRY(FMT_Q4_0, q4_0, codec_quantize_q4_0_ref),
    ENTRY(FMT_INT4, int4, codec_quantize_int4_ref), ENTRY(FMT_FP4, fp4, codec_quantize_fp4_ref),
};
