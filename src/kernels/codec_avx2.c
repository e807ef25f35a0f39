/* codec_avx2.c: the codecs for AVX2 + FMA + F16C, 8 floats at a time.
 *
 * Each format contributes only a chunk decoder, chunk_<fmt>(row, i, m):
 * values i .. i+7 in one register, lanes from m on zeroed. The loop
 * skeletons around them (dequantize, and the tile forms dot_rows and
 * axpy_rows that attention uses; the per-row dot and axpy are tiles of one
 * row) are shared by the three SIMD files: codec_tiles.h, which says how
 * they block heads, rows and chunks so that q and the accumulators stay in
 * registers, and what was measured choosing that. They are always inlined
 * with the decoder as a constant, so every format gets its own loops with
 * the decoder inside: rows are dequantized in registers, never into a
 * temporary f32 row. With 16 ymm registers a block holds 8 accumulators
 * (NACC), summed by one transposed reduction (reduce8).
 *
 * Reads stay inside the row: q8_0 and q4_0 rows are whole blocks and int4,
 * fp4 rows whole words, so a decoder may read its whole chunk; f32 and f16
 * tails are read with masked loads or through a small copy.
 *
 * Agrees with codec_ref: dequantize bit for bit (the same one multiply per
 * value), dot and axpy within float rounding (FMA, 8 lanes summed at the
 * end; axpy_rows adds the rows in order, one FMA each, q8_0 and q4_0 with
 * w times the block's scale rounded first); f32 and f16 dot and axpy bit
 * for bit (their dots in 16 lanes as two registers: codec_lanes16_avx2.h). quantize is the
 * reference one except f16 (F16C) and q8_0, with the same bytes. */
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

/* The fp16 at p in every lane: broadcast as a half, then converted (two
 * operations; a scalar conversion and a broadcast take three). */
INLINE __m256 fp16_lanes(const unsigned char *p)
{
    short h;
    memcpy(&h, p, sizeof h);
    return _mm256_cvtph_ps(_mm_set1_epi16(h));
}

INLINE Row row_of(const void *row, size_t n, int per_row_scale)
{
    Row r = { row, _mm256_setzero_ps() };
    if (per_row_scale)
        r.s = fp16_lanes(r.p + 4 * codec_row_words(n));
    if (per_row_scale == 2) /* fp4: half the scale, for its doubled values (raw_fp4); exact */
        r.s = _mm256_mul_ps(r.s, _mm256_set1_ps(0.5f));
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
    return keep(_mm256_mul_ps(q, fp16_lanes(blk)), m);
}

static inline __m256 chunk_q4_0(const Row *r, size_t i, size_t m)
{
    const unsigned char *blk = r->p + (i / QK4_0) * sizeof(BlockQ4_0);
    const size_t j = i % QK4_0; /* 0, 8: low nibbles of qs[j..]; 16, 24: high nibbles of qs[j-16..] */
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(blk + offsetof(BlockQ4_0, qs) + j % 16));
    __m256i q = _mm256_cvtepu8_epi32(b);
    q = j < 16 ? _mm256_and_si256(q, _mm256_set1_epi32(0xf)) : _mm256_srli_epi32(q, 4);
    q = _mm256_sub_epi32(q, _mm256_set1_epi32(8));
    return keep(_mm256_mul_ps(_mm256_cvtepi32_ps(q), fp16_lanes(blk)), m);
}

/* q8_0 and q4_0 in two parts, for dot (codec_tiles.h): a whole chunk's
 * codes, and its block's scale. */
static inline __m256 raw_q8_0(const Row *r, size_t i)
{
    const unsigned char *blk = r->p + (i / QK8_0) * sizeof(BlockQ8_0);
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(blk + offsetof(BlockQ8_0, qs) + i % QK8_0));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

static inline __m256 raw_q4_0(const Row *r, size_t i)
{
    const unsigned char *blk = r->p + (i / QK4_0) * sizeof(BlockQ4_0);
    const size_t j = i % QK4_0; /* as chunk_q4_0 */
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(blk + offsetof(BlockQ4_0, qs) + j % 16));
    __m256i q = _mm256_cvtepu8_epi32(b);
    q = j < 16 ? _mm256_and_si256(q, _mm256_set1_epi32(0xf)) : _mm256_srli_epi32(q, 4);
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(8)));
}

static inline __m256 scale_q8_0(const Row *r, size_t i)
{
    return fp16_lanes(r->p + (i / QK8_0) * sizeof(BlockQ8_0));
}

static inline __m256 scale_q4_0(const Row *r, size_t i)
{
    return fp16_lanes(r->p + (i / QK4_0) * sizeof(BlockQ4_0));
}

/* The 8 nibbles of an int4 / fp4 word, lane k's in its top 4 bits (bits
 * 28..31; the nibbles below it under them): one variable shift. */
INLINE __m256i nibble_tops(const Row *r, size_t i)
{
    int32_t w;
    memcpy(&w, r->p + 4 * (i / 8), sizeof w);
    return _mm256_sllv_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0));
}

/* int4 and fp4 in two parts, for axpy (codec_tiles.h), which folds the
 * row's scale into its weight once a row: a whole chunk's values, unscaled,
 * and the row's scale (row_of). int4: the nibble shifted back
 * arithmetically, sign-extended. fp4: its magnitude doubled (the integers
 * 0 to 12) looked up by a byte shuffle, converted, and the nibble's sign
 * bit put on it; the row's scale is halved to match. */
static inline __m256 raw_int4(const Row *r, size_t i)
{
    return _mm256_cvtepi32_ps(_mm256_srai_epi32(nibble_tops(r, i), 28));
}

static inline __m256 raw_fp4(const Row *r, size_t i)
{
    const __m256i top = nibble_tops(r, i);
    const __m256i twice = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12,
                                           0, 1, 2, 3, 4, 6, 8, 12); /* 8 to 15 repeat 0 to 7: the sign bit */
    const __m256 mag = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(twice, _mm256_srli_epi32(top, 28)));
    return _mm256_xor_ps(mag, _mm256_castsi256_ps(_mm256_and_si256(top, _mm256_set1_epi32(INT32_MIN))));
}

static inline __m256 scale_int4(const Row *r, size_t i)
{
    (void)i;
    return r->s;
}

#define scale_fp4 scale_int4

static inline __m256 chunk_int4(const Row *r, size_t i, size_t m)
{
    return keep(_mm256_mul_ps(raw_int4(r, i), r->s), m);
}

static inline __m256 chunk_fp4(const Row *r, size_t i, size_t m)
{
    return keep(_mm256_mul_ps(raw_fp4(r, i), r->s), m);
}

/* The per-channel code formats: a code is its own value (the cache folds
 * the channel's scale into the query). u4 packs like int4; u2 is 16 codes
 * to a word, a chunk of 8 its low or high half (i a multiple of 8). */
static inline __m256 chunk_u4(const Row *r, size_t i, size_t m)
{
    return keep(_mm256_cvtepi32_ps(_mm256_and_si256(nibbles(r, i), _mm256_set1_epi32(0xf))), m);
}

static inline __m256 chunk_u2(const Row *r, size_t i, size_t m)
{
    int32_t w;
    memcpy(&w, r->p + 4 * (i / 16), sizeof w);
    const int half = (int)(i % 16); /* 0 or 8: codes from bit 0 or bit 16 */
    const __m256i shifts = _mm256_add_epi32(_mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), _mm256_set1_epi32(2 * half));
    const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w), shifts), _mm256_set1_epi32(3));
    return keep(_mm256_cvtepi32_ps(codes), m);
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

/* A q8_0 block written: its scale d as fp16, then the 32 codes q[4] holds
 * (eight 32-bit lanes each), packed to bytes in order. */
static inline void store_block(unsigned char *out, float d, const __m256i q[4])
{
    const __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    const unsigned short h = fp16_from_f32(d);
    memcpy(out + offsetof(BlockQ8_0, d), &h, sizeof h);
    _mm256_storeu_si256((__m256i *)(void *)(out + offsetof(BlockQ8_0, qs)),
                        _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* A q8_0 block's 32 values x loaded into v[4], and their largest magnitude;
 * *nan says whether one of them is a NaN (the max would hide it). */
static inline float block_absmax(const float *x, __m256 v[4], int *nan)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 amax = _mm256_setzero_ps(), unord = _mm256_setzero_ps();
    for (size_t k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + k * W);
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
        unord = _mm256_or_ps(unord, _mm256_cmp_ps(v[k], v[k], _CMP_UNORD_Q));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    *nan = _mm256_movemask_ps(unord) != 0;
    return _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
}

/* q8_0, the reference's bytes: a block's largest |x|, d = amax / 127 and
 * the codes x * (1 / d) rounded half away from zero (roundf) as the
 * reference computes them, 32 at a time. Blocks holding a NaN, a scale
 * past fp16's range, and a last block short of 32 values go to the
 * reference. Every --int-dot matvec rounds its activation so: a
 * TinyLlama-shaped decode step about 400 thousand values, which the
 * reference (a roundf call each) took 14.4 us per 2048 to round and this
 * 1.75 us (alternating, from cache, an AVX-512 Xeon): about 2.8 ms of a
 * 65 ms q4_0 step saved. */
void codec_quantize_q8_0_avx2(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst;
    const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    const __m256 lim = _mm256_set1_ps(127.0f);
    size_t b = 0;
    for (; (b + 1) * QK8_0 <= n; b++) {
        const float *x = src + b * QK8_0;
        unsigned char *out = p + b * sizeof(BlockQ8_0);
        __m256 v[4];
        int nan;
        const float d = block_absmax(x, v, &nan) / 127.0f;
        if (nan || d > FP16_MAX) {
            codec_quantize_q8_0_ref(out, x, QK8_0);
            continue;
        }
        const __m256 id = _mm256_set1_ps(codec_inverse(d));
        __m256i q[4];
        for (size_t k = 0; k < 4; k++) {
            const __m256 y = _mm256_mul_ps(v[k], id);
            const __m256 t = _mm256_round_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(y, t)); /* exact */
            const __m256 away = _mm256_and_ps(_mm256_cmp_ps(frac, half, _CMP_GE_OQ),
                                              _mm256_or_ps(one, _mm256_and_ps(sign, y))); /* +-1 from a half on */
            const __m256 r = _mm256_min_ps(_mm256_add_ps(t, away), lim);
            q[k] = _mm256_cvtps_epi32(_mm256_max_ps(r, _mm256_sub_ps(_mm256_setzero_ps(), lim)));
        }
        store_block(out, d, q);
    }
    if (b * QK8_0 < n)
        codec_quantize_q8_0_ref(p + b * sizeof(BlockQ8_0), src + b * QK8_0, n - b * QK8_0);
}

/* q8_0 of an activation as llama.cpp's x86 path rounds it, the bytes of
 * codec_quantize_q8_0_even (codec_ref.c): the codes x * (127 / absmax)
 * rounded to nearest, ties to even, 32 at a time. Blocks holding a NaN, a
 * scale past fp16's range or an absmax so small that 127 / absmax is not
 * finite, and a last block short of 32 values, go to the reference. The
 * default path rounds every q8_0/q4_0 matvec's input so (Kernels.round_q8_0):
 * a TinyLlama-shaped step some 400 thousand values, about 2% of a one-thread
 * q4_0 step by the reference's loop. */
void codec_quantize_q8_0_even_avx2(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst;
    const __m256 lim = _mm256_set1_ps(127.0f), nlim = _mm256_set1_ps(-127.0f);
    size_t b = 0;
    for (; (b + 1) * QK8_0 <= n; b++) {
        const float *x = src + b * QK8_0;
        unsigned char *out = p + b * sizeof(BlockQ8_0);
        __m256 v[4];
        int nan;
        const float a = block_absmax(x, v, &nan), d = a / 127.0f;
        const float id = a == 0.0f ? 0.0f : 127.0f / a;
        if (nan || d > FP16_MAX || !isfinite(id)) {
            codec_quantize_q8_0_even(out, x, QK8_0);
            continue;
        }
        __m256i q[4];
        for (size_t k = 0; k < 4; k++) {
            const __m256 y = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[k], _mm256_set1_ps(id)), nlim), lim);
            q[k] = _mm256_cvtps_epi32(_mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
        store_block(out, d, q);
    }
    if (b * QK8_0 < n)
        codec_quantize_q8_0_even(p + b * sizeof(BlockQ8_0), src + b * QK8_0, n - b * QK8_0);
}

/* --- the shared skeletons (codec_tiles.h) ---------------------------------- */

#define NACC 8 /* accumulators a block keeps in registers (of 16) */
#define ROW_SCALE_PARTS 1 /* int4, fp4: raw_ and scale_, so axpy scales w, not every chunk */
#define AXPY_CHEAP_PARTS 1 /* f32, f16 values added for 4 heads at a time too */
#define DOT_AHEAD 2 /* dot_rows prefetches the rows ahead (the values) where it computes: decoding, or G > 1 */
#define CHEAP_DOTS_OWN 1 /* f32, f16 dots in the AVX-512 codec's order: codec_lanes16_avx2.h */
typedef __m256 V;

INLINE V v_zero(void) { return _mm256_setzero_ps(); }
INLINE V v_load(const float *p) { return _mm256_loadu_ps(p); }
INLINE V v_load_part(const float *p, size_t m) { return m == W ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes(m)); }
INLINE void v_store(float *p, V v) { _mm256_storeu_ps(p, v); }
INLINE void v_store_part(float *p, V v, size_t m)
{
    if (m == W)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, lanes(m), v);
}
INLINE V v_set1(float x) { return _mm256_set1_ps(x); }
INLINE V v_fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
INLINE V v_mul(V a, V b) { return _mm256_mul_ps(a, b); }
INLINE V v_add(V a, V b) { return _mm256_add_ps(a, b); }

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

INLINE void v_reduce(float *sums, const V *part)
{
    _mm256_storeu_ps(sums, reduce8(part));
}

#include "kernels/codec_tiles.h"
#include "kernels/codec_lanes16_avx2.h"

/* --- the table -------------------------------------------------------------- */

const FormatOps codec_avx2[FMT_COUNT] = {
    CODEC_ENTRY(FMT_F32, f32, codec_quantize_f32_ref),   CODEC_ENTRY(FMT_F16, f16, quantize_f16),
    CODEC_ENTRY(FMT_Q8_0, q8_0, codec_quantize_q8_0_avx2), CODEC_ENTRY(FMT_Q4_0, q4_0, codec_quantize_q4_0_ref),
    CODEC_ENTRY(FMT_INT4, int4, codec_quantize_int4_ref), CODEC_ENTRY(FMT_FP4, fp4, codec_quantize_fp4_ref),
    CODEC_ENTRY(FMT_U4, u4, codec_quantize_u4_ref),       CODEC_ENTRY(FMT_U2, u2, codec_quantize_u2_ref),
};
