/* codec_avx512.c: the codecs for AVX-512 (F, BW, VL, DQ), 16 floats at a time.
 *
 * The same design as codec_avx2.c (read that first): one loop skeleton per
 * operation, one chunk decoder per format, the row decoded once per chunk
 * in registers and used for all G heads (accumulators and weights in
 * registers for G = 1 .. 8). What AVX-512 adds: mask registers, so every tail is a masked
 * load or store (no copies, no reads past the row), and a 16-entry permute,
 * so an fp4 nibble indexes its signed E2M1 value directly.
 *
 * Agrees with codec_ref: dequantize bit for bit, dot and axpy within float
 * rounding. quantize is the reference one except f16 (same bytes). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"

#define W 16          /* floats per register */
#define DOT_TILE 64   /* heads whose dot accumulators one pass holds */
#define INLINE static inline __attribute__((always_inline))
/* Unroll a loop over heads: with G a constant (dot_rows, axpy_rows), acc[]
 * and wv[] then live in registers; without it GCC -O2 keeps them in memory. */
#define UNROLL_HEADS _Pragma("GCC unroll 8")

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

/* out[g] = the sum of acc[g]'s lanes, g < G; four heads at a time share
 * their horizontal adds. */
INLINE void reduce_heads(float *out, const __m512 *acc, size_t G)
{
    size_t g = 0;
    for (; g + 4 <= G; g += 4) {
        __m256 a[4];
        for (size_t k = 0; k < 4; k++) /* 16 lanes to 8 */
            a[k] = _mm256_add_ps(_mm512_castps512_ps256(acc[g + k]), _mm512_extractf32x8_ps(acc[g + k], 1));
        const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
        _mm_storeu_ps(out + g, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    }
    for (; g < G; g++)
        out[g] = _mm512_reduce_add_ps(acc[g]);
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

/* out[0] = q[0..n) . decode(row): four accumulators, four chunks a step. */
INLINE void dot_one(ChunkFn chunk, float *out, const float *q, const Row *r, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), chunk(r, i, W), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + W), chunk(r, i + W, W), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 2 * W), chunk(r, i + 2 * W, W), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 3 * W), chunk(r, i + 3 * W, W), a3);
    }
    for (; i + W <= n; i += W)
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), chunk(r, i, W), a0);
    if (i < n)
        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes(n - i), q + i), chunk(r, i, n - i), a0);
    out[0] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* out[g] = q[g*n .. g*n+n) . decode(row) for g < G <= DOT_TILE: one decode
 * per chunk, G accumulators (registers when G is a small constant). */
INLINE void dot_heads(ChunkFn chunk, float *out, const float *q, size_t G, const Row *r, size_t n)
{
    __m512 acc[DOT_TILE];
    UNROLL_HEADS
    for (size_t g = 0; g < G; g++)
        acc[g] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + W <= n; i += W) {
        const __m512 v = chunk(r, i, W);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++)
            acc[g] = _mm512_fmadd_ps(_mm512_loadu_ps(q + g * n + i), v, acc[g]);
    }
    if (i < n) {
        const __mmask16 mk = lanes(n - i);
        const __m512 v = chunk(r, i, n - i);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++)
            acc[g] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, q + g * n + i), v, acc[g]);
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
    __m512 wv[DOT_TILE];
    UNROLL_HEADS
    for (size_t g = 0; g < G; g++)
        wv[g] = _mm512_set1_ps(w[g]);
    size_t i = 0;
    for (; i + W <= n; i += W) {
        const __m512 v = chunk(r, i, W);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++) {
            float *a = acc + g * n + i;
            _mm512_storeu_ps(a, _mm512_fmadd_ps(wv[g], v, _mm512_loadu_ps(a)));
        }
    }
    if (i < n) {
        const __mmask16 mk = lanes(n - i);
        const __m512 v = chunk(r, i, n - i);
        UNROLL_HEADS
        for (size_t g = 0; g < G; g++) {
            float *a = acc + g * n + i;
            _mm512_mask_storeu_ps(a, mk, _mm512_fmadd_ps(wv[g], v, _mm512_maskz_loadu_ps(mk, a)));
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

const FormatOps codec_avx512[FMT_COUNT] = {
    /* quantize: the reference, except f16 (hardware conversion); f32's is a copy */
    [FMT_F32] = { FMT_F32, codec_quantize_f32_ref, dequantize_f32, dot_f32, axpy_f32 },
    [FMT_F16] = { FMT_F16, quantize_f16, dequantize_f16, dot_f16, axpy_f16 },
    [FMT_Q8_0] = { FMT_Q8_0, codec_quantize_q8_0_ref, dequantize_q8_0, dot_q8_0, axpy_q8_0 },
    [FMT_Q4_0] = { FMT_Q4_0, codec_quantize_q4_0_ref, dequantize_q4_0, dot_q4_0, axpy_q4_0 },
    [FMT_INT4] = { FMT_INT4, codec_quantize_int4_ref, dequantize_int4, dot_int4, axpy_int4 },
    [FMT_FP4] = { FMT_FP4, codec_quantize_fp4_ref, dequantize_fp4, dot_fp4, axpy_fp4 },
};
