/* codec_avx2.c: the codecs for AVX2 + FMA + F16C, 8 floats at a time.
 *
 * One loop skeleton per operation (dequantize_rows, dot_rows, axpy_rows)
 * walks the row in chunks of 8 values; each format contributes only a chunk
 * decoder, chunk_<fmt>(row, i, m): values i .. i+7 in one register, lanes
 * from m on zeroed. The skeletons are always inlined with the decoder as a
 * constant, so every format gets its own loop with the decoder inlined: the
 * row is dequantized in registers, never into a temporary f32 row.
 *
 * GQA: dot and axpy decode each chunk once and use it for all G heads
 * before moving on. The loops are specialized for G = 1 .. 8, so that
 * dot's accumulators and axpy's broadcast weights live in registers (dot
 * with G = 1 keeps four accumulators, so one head is not bound by the FMA
 * latency; four heads share their final horizontal adds). A larger G keeps
 * them on the stack, still decoding once; beyond DOT_TILE heads the row is
 * decoded again per tile of heads (from L1: no extra memory traffic).
 *
 * Speed, measured on this project's machine (rows of 128 floats streamed
 * from DRAM): one head runs at 75-95% of the read bandwidth; with G heads
 * the row's bytes are G times the work, and per-row calls reload q (dot) or
 * acc (axpy) from L1, so G = 4 .. 8 is bound by the load / store ports,
 * not by DRAM. Misaligned acc costs up to 2x: give 64-byte-aligned buffers.
 *
 * Reads stay inside the row: q8_0 and q4_0 rows are whole blocks and int4,
 * fp4 rows whole words, so a decoder may read its whole chunk; f32 and f16
 * tails are read with masked loads or through a small copy.
 *
 * Agrees with codec_ref: dequantize bit for bit (the same one multiply per
 * value), dot and axpy within float rounding (FMA, 8 lanes summed at the
 * end). quantize is the reference one except f16 (F16C, same bytes). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"

#define W 8           /* floats per register */
#define DOT_TILE 64   /* heads whose dot accumulators one pass holds */
#define INLINE static inline __attribute__((always_inline))
/* Unroll a loop over heads: with G a constant (dot_rows, axpy_rows), acc[]
 * and wv[] then live in registers; without it GCC -O2 keeps them in memory. */
#define UNROLL_HEADS _Pragma("GCC unroll 8")

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

/* out[g] = the sum of acc[g]'s lanes, g < G; four heads at a time share
 * their horizontal adds. */
INLINE void reduce_heads(float *out, const __m256 *acc, size_t G)
{
    size_t g = 0;
    for (; g + 4 <= G; g += 4) {
        const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(acc[g], acc[g + 1]), _mm256_hadd_ps(acc[g + 2], acc[g + 3]));
        _mm_storeu_ps(out + g, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    }
    for (; g < G; g++)
        out[g] = hsum(acc[g]);
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

/* out[0] = q[0..n) . decode(row): four accumulators, four chunks a step. */
INLINE void dot_one(ChunkFn chunk, float *out, const float *q, const Row *r, size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), chunk(r, i, W), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + W), chunk(r, i + W, W), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 2 * W), chunk(r, i + 2 * W, W), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 3 * W), chunk(r, i + 3 * W, W), a3);
    }
    for (; i + W <= n; i += W)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), chunk(r, i, W), a0);
    if (i < n)
        a0 = _mm256_fmadd_ps(_mm256_maskload_ps(q + i, lanes(n - i)), chunk(r, i, n - i), a0);
    out[0] = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

/* out[g] = q[g*n .. g*n+n) . decode(row) for g < G <= DOT_TILE: one decode
 * per chunk, G accumulators (registers when G is a small constant). */
INLINE void dot_heads(ChunkFn chunk, float *out, const float *q, size_t G, const Row *r, size_t n)
{
    __m256 acc[DOT_TILE];
    UNROLL_HEADS
    for (size_t g = 0; g < G; g++)
        acc[g] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + W <= n; i += W) {
        const __m256 v = chunk(r, i, W);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++)
            acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + g * n + i), v, acc[g]);
    }
    if (i < n) {
        const __m256i mk = lanes(n - i);
        const __m256 v = chunk(r, i, n - i);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++)
            acc[g] = _mm256_fmadd_ps(_mm256_maskload_ps(q + g * n + i, mk), v, acc[g]);
    }
    reduce_heads(out, acc, G);
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

/* acc[g*n + i] += w[g] * decode(row)[i] for g < G <= DOT_TILE: one decode
 * per chunk, the weights broadcast once (registers when G is a constant). */
INLINE void axpy_heads(ChunkFn chunk, float *acc, const float *w, size_t G, const Row *r, size_t n)
{
    __m256 wv[DOT_TILE];
    UNROLL_HEADS
    for (size_t g = 0; g < G; g++)
        wv[g] = _mm256_set1_ps(w[g]);
    size_t i = 0;
    for (; i + W <= n; i += W) {
        const __m256 v = chunk(r, i, W);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++) {
            float *a = acc + g * n + i;
            _mm256_storeu_ps(a, _mm256_fmadd_ps(wv[g], v, _mm256_loadu_ps(a)));
        }
    }
    if (i < n) {
        const __m256i mk = lanes(n - i);
        const __m256 v = chunk(r, i, n - i);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++) {
            float *a = acc + g * n + i;
            _mm256_maskstore_ps(a, mk, _mm256_fmadd_ps(wv[g], v, _mm256_maskload_ps(a, mk)));
        }
    }
}

INLINE void axpy_rows(ChunkFn chunk, float *acc, const float *w, size_t G, const Row *r, size_t n)
{
    switch (G) { /* a constant G per case: see UNROLL_HEADS */
    case 0: return;
    case 1: axpy_heads(chunk, acc, w, 1, r, n); return;
    case 2: axpy_heads(chunk, acc, w, 2, r, n); return;
    case 3: axpy_heads(chunk, acc, w, 3, r, n); return;
    case 4: axpy_heads(chunk, acc, w, 4, r, n); return;
    case 5: axpy_heads(chunk, acc, w, 5, r, n); return;
    case 6: axpy_heads(chunk, acc, w, 6, r, n); return;
    case 7: axpy_heads(chunk, acc, w, 7, r, n); return;
    case 8: axpy_heads(chunk, acc, w, 8, r, n); return;
    default:
        for (size_t g0 = 0; g0 < G; g0 += DOT_TILE)
            axpy_heads(chunk, acc + g0 * n, w + g0, G - g0 < DOT_TILE ? G - g0 : DOT_TILE, r, n);
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

const FormatOps codec_avx2[FMT_COUNT] = {
    /* quantize: the reference, except f16 (F16C); f32's is a copy */
    [FMT_F32] = { FMT_F32, codec_quantize_f32_ref, dequantize_f32, dot_f32, axpy_f32 },
    [FMT_F16] = { FMT_F16, quantize_f16, dequantize_f16, dot_f16, axpy_f16 },
    [FMT_Q8_0] = { FMT_Q8_0, codec_quantize_q8_0_ref, dequantize_q8_0, dot_q8_0, axpy_q8_0 },
    [FMT_Q4_0] = { FMT_Q4_0, codec_quantize_q4_0_ref, dequantize_q4_0, dot_q4_0, axpy_q4_0 },
    [FMT_INT4] = { FMT_INT4, codec_quantize_int4_ref, dequantize_int4, dot_int4, axpy_int4 },
    [FMT_FP4] = { FMT_FP4, codec_quantize_fp4_ref, dequantize_fp4, dot_fp4, axpy_fp4 },
};
