/* codec_avx512.c: the codecs for AVX-512 (F, BW, VL, DQ), 16 floats at a time.
 *
 * The same design as codec_avx2.c (read that first): one chunk decoder per
 * format, the loop skeletons of codec_tiles.h around them. With 32 zmm
 * registers a block holds 16 accumulators (NACC), summed by one transposed
 * reduction (reduce16). What AVX-512 adds: mask registers, so every tail is
 * a masked load or store (no copies, no reads past the row), and a 16-entry
 * permute, so a q4_0, int4 or fp4 nibble indexes its (scaled) value
 * directly. Zen 4 runs 512-bit shuffles at half rate: the decoders avoid
 * the ones they can (a block's scale is a broadcast load and a conversion).
 * q4_0, int4 and fp4 rows of 128 values, the common head size, have their
 * own tile forms (nibble_rows_avx512.c), which decode a row's four blocks
 * into each vector.
 *
 * Agrees with codec_ref: dequantize bit for bit (each value is the
 * reference's one product, value times scale), dot and axpy within float
 * rounding. quantize is the reference one except f16 and q8_0 (AVX2's,
 * codec_quantize_q8_0_avx2), with the same bytes. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"
#include "kernels/reduce_avx512.h"

#define W 16          /* floats per register */
#define INLINE static inline __attribute__((always_inline))
/* Unroll a loop over heads, rows or chunks of a block: with the counts
 * constants (every block size is), the accumulators then live in registers;
 * without it GCC -O2 keeps them in memory. */
#define UNROLL_16 CODEC_UNROLL

typedef struct {
    const unsigned char *p; /* the row's bytes */
    __m512 t;               /* int4, fp4: the 16 values a nibble stands for, times the row's scale */
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

/* scaled: 0, or the row's fp16 scale follows its words and nibbles index
 * the values of int4 (1) or fp4 (2). */
INLINE Row row_of(const void *row, size_t n, int scaled)
{
    static const float int4_values[16] = { 0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1 };
    static const float fp4_values[16] = { FP4_MAGNITUDES, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f };
    Row r = { row, _mm512_setzero_ps() };
    if (scaled) /* value times scale: the reference's one rounding */
        r.t = _mm512_mul_ps(_mm512_loadu_ps(scaled == 1 ? int4_values : fp4_values),
                            _mm512_set1_ps(load_fp16(r.p + 4 * codec_row_words(n))));
    return r;
}

/* The 16 nibbles of int4 / fp4 words i/8 and i/8 + 1, each in the low bits
 * of its lane. The second word is read only when the chunk reaches it
 * (m > 8): past the row's last word lies its scale, then the next row. */
INLINE __m512i nibbles(const Row *r, size_t i, size_t m)
{
    int64_t w = 0; /* word i/8 in the low half, word i/8 + 1 in the high */
    memcpy(&w, r->p + 4 * (i / 8), m > 8 ? 8 : 4);
    const __m512i both = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                                  _mm512_castsi128_si512(_mm_cvtsi64_si128(w)));
    return _mm512_srlv_epi32(both, _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28));
}

/* A block's fp16 scale, in every lane: a broadcast load and a conversion,
 * no shuffle (512-bit shuffles are what the quantized decoders run out
 * of first). */
INLINE __m512 block_scale(const unsigned char *blk)
{
    uint16_t h;
    memcpy(&h, blk, sizeof h);
    return _mm512_cvtph_ps(_mm256_set1_epi16((short)h));
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
    return keep(_mm512_mul_ps(q, block_scale(blk)), m);
}

static inline __m512 chunk_q4_0(const Row *r, size_t i, size_t m)
{
    static const float values[16] = { -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7 };
    const unsigned char *blk = r->p + (i / QK4_0) * sizeof(BlockQ4_0);
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + offsetof(BlockQ4_0, qs)));
    __m512i q = _mm512_cvtepu8_epi32(b); /* i % 32 == 0: the low nibbles; 16: the high ones */
    if (i % QK4_0)
        q = _mm512_srli_epi32(q, 4);
    /* the block's 16 values, (k - 8) * d, indexed by the nibble (the low 4 bits of each lane) */
    const __m512 t = _mm512_mul_ps(_mm512_loadu_ps(values), block_scale(blk));
    return keep(_mm512_permutexvar_ps(q, t), m);
}

/* q8_0 and q4_0 in two parts, for dot (codec_tiles.h): a whole chunk's
 * codes, and its block's scale. */
static inline __m512 raw_q8_0(const Row *r, size_t i)
{
    const unsigned char *blk = r->p + (i / QK8_0) * sizeof(BlockQ8_0);
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + offsetof(BlockQ8_0, qs) + i % QK8_0));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

static inline __m512 raw_q4_0(const Row *r, size_t i)
{
    const unsigned char *blk = r->p + (i / QK4_0) * sizeof(BlockQ4_0);
    __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(blk + offsetof(BlockQ4_0, qs))));
    if (i % QK4_0)
        q = _mm512_srli_epi32(q, 4);
    return _mm512_permutexvar_ps(q, _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7));
}

static inline __m512 scale_q8_0(const Row *r, size_t i)
{
    return block_scale(r->p + (i / QK8_0) * sizeof(BlockQ8_0));
}

static inline __m512 scale_q4_0(const Row *r, size_t i)
{
    return block_scale(r->p + (i / QK4_0) * sizeof(BlockQ4_0));
}

static inline __m512 chunk_int4(const Row *r, size_t i, size_t m)
{
    return keep(_mm512_permutexvar_ps(nibbles(r, i, m), r->t), m); /* index: the low 4 bits */
}

static inline __m512 chunk_fp4(const Row *r, size_t i, size_t m)
{
    return keep(_mm512_permutexvar_ps(nibbles(r, i, m), r->t), m); /* the nibble: sign and magnitude */
}

/* The per-channel code formats: a code is its own value (the cache folds
 * the channel's scale into the query). u4 packs like int4; u2 is 16 codes
 * to a word, so a chunk of 16 is one word (i a multiple of 16). */
static inline __m512 chunk_u4(const Row *r, size_t i, size_t m)
{
    return keep(_mm512_cvtepi32_ps(_mm512_and_si512(nibbles(r, i, m), _mm512_set1_epi32(0xf))), m);
}

static inline __m512 chunk_u2(const Row *r, size_t i, size_t m)
{
    int32_t w;
    memcpy(&w, r->p + 4 * (i / 16), sizeof w);
    const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i codes = _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(w), shifts), _mm512_set1_epi32(3));
    return keep(_mm512_cvtepi32_ps(codes), m);
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

/* --- the shared skeletons (codec_tiles.h) ---------------------------------- */

#define NACC 16 /* accumulators a block keeps in registers (of 32) */
typedef __m512 V;

INLINE V v_zero(void) { return _mm512_setzero_ps(); }
INLINE V v_load(const float *p) { return _mm512_loadu_ps(p); }
INLINE V v_load_part(const float *p, size_t m) { return _mm512_maskz_loadu_ps(lanes(m), p); }
INLINE void v_store(float *p, V v) { _mm512_storeu_ps(p, v); }
INLINE void v_store_part(float *p, V v, size_t m) { _mm512_mask_storeu_ps(p, lanes(m), v); }
INLINE V v_set1(float x) { return _mm512_set1_ps(x); }
INLINE V v_fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
INLINE V v_mul(V a, V b) { return _mm512_mul_ps(a, b); }
INLINE V v_add(V a, V b) { return _mm512_add_ps(a, b); }

INLINE void v_reduce(float *sums, const V *part)
{
    _mm512_storeu_ps(sums, reduce16(part));
}

/* f32 and f16 values added for 4 heads at a time too: flash steps, cold,
 * 65536 rows, G = 4, an AVX-512 Xeon: f16 0.94 and 0.96 of the time, f32
 * 0.97 and 0.97 (41 alternating steps, medians; the same sums) */
#define AXPY_CHEAP_PARTS 1
/* f32 and f16 rows prefetched ahead of where they are read, where
 * nothing else asks for them: the hardware alone read one head's f16 value
 * rows at 8 to 9 GB/s here (f32's 14), and a group's cheap keys and values
 * each in one stream. Each value row prefetches the one 16 rows on; a
 * group's keys, the first block of heads, 64 rows on. Whole flash steps,
 * cold, 65536 rows, an AVX-512 Xeon, 31 alternating with the former
 * build's, medians: that took 1.14 times as long at G = 1 in f16 (f32
 * 0.99: unchanged), 1.33 at G = 2 in f16, 1.23 at G = 4, 1.13 at G = 8,
 * 1.09 at G = 4 in f32; q8_0 unchanged (8 value rows on and no keys gave
 * G = 1 f16 1.15 and 1.16; 16 to 256 key rows on and 8 to 32 value rows on
 * were within the noise of each other). */
#define AXPY_AHEAD 16
#define DOT_KEYS_AHEAD 64
/* q8_0's value rows prefetch their own too, 16 rows on (q4_0's of other
 * lengths than 128 as well, not measured), and a group of 1, 2 or 4 heads
 * reads its keys in four streams, whatever their format: the key scoring
 * no longer prefetches a tile's value rows on this table (Kernels'
 * values_prefetch_own; it did, DOT_AHEAD 1: q8_0 0.86 to 0.92 of the time
 * without). Whole flash steps, cold, 65536 rows, an AVX-512 Xeon,
 * alternating with that (31 steps, medians; the same bits): q8_0 G = 1
 * 0.74 and 0.76 of the time, G = 2 0.79, G = 4 0.91 to 0.95, G = 3 0.97,
 * G = 8 1.01. The keys in streams with the values still prefetched by the
 * dot: 0.89 and 0.90 at G = 1; streams and no value prefetch at all:
 * 0.92. */
#define GROUP_STREAMS 1
/* Each stream's key rows prefetch their own, 2 KiB on: q8_0 at G = 1
 * took 0.92 to 0.95 of the time without (the same steps; 1 KiB 0.96, 4
 * KiB 0.95 to 0.97, 8 KiB 1.00), nothing clear at G = 2 and 4 (1.00,
 * 1.01) nor for one head's f16 and f32 rows (0.95 to 1.01). f16 and f32
 * groups of 2 and 4 (until then two blocks of 2 heads at G = 4, q in
 * registers, in passes that prefetched the keys 64 rows on) in streams
 * with this prefetch: f16 G = 4 0.84 to 0.86 of the time, G = 2 0.91;
 * f32 0.93 and 0.95, 0.95 (in streams without it, G = 4: f16 0.95, f32
 * 1.07). */
#define DOT_STREAMS_AHEAD 2048
#define DOT_STREAM_ROWS 4 /* long rows: four streams' rows side by side (dot_block_streams4) */
#include "kernels/codec_tiles.h"

/* --- the table -------------------------------------------------------------- */

/* q4_0, int4 and fp4 rows of 128 values: nibble_rows_avx512.c, however
 * few (it sums in its own order, and a run cut into calls, a paged
 * cache's, must give the whole run's bits; a row alone is a run of one).
 * The rows ahead are not prefetched there (not measured). */
#define NIBBLE_ANY(fmt)                                                                                             \
    static void dot_##fmt##_any(float *out, const float *q, size_t G, const void *row, size_t n)                    \
    {                                                                                                               \
        if (n == NIBBLE_ROW_VALUES)                                                                                 \
            fmt##_dot_rows_128_avx512(out, 1, q, G, row, 0, 1);                                                     \
        else                                                                                                        \
            dot_##fmt(out, q, G, row, n);                                                                           \
    }                                                                                                               \
    static void axpy_##fmt##_any(float *acc, const float *w, size_t G, const void *row, size_t n)                   \
    {                                                                                                               \
        if (n == NIBBLE_ROW_VALUES)                                                                                 \
            fmt##_axpy_rows_128_avx512(acc, w, 1, G, row, 0, 1);                                                    \
        else                                                                                                        \
            axpy_##fmt(acc, w, G, row, n);                                                                          \
    }                                                                                                               \
    static void dot_rows_##fmt##_any(float *out, size_t ld, const float *q, size_t G, const void *rows,             \
                                     size_t stride, size_t n_rows, size_t n, const RowsAhead *ahead)                \
    {                                                                                                               \
        if (n == NIBBLE_ROW_VALUES)                                                                                 \
            fmt##_dot_rows_128_avx512(out, ld, q, G, rows, stride, n_rows);                                         \
        else                                                                                                        \
            dot_rows_##fmt(out, ld, q, G, rows, stride, n_rows, n, ahead);                                          \
    }                                                                                                               \
    static void axpy_rows_##fmt##_any(float *acc, const float *w, size_t ld, size_t G, const void *rows,            \
                                      size_t stride, size_t n_rows, size_t n)                                       \
    {                                                                                                               \
        if (n == NIBBLE_ROW_VALUES)                                                                                 \
            fmt##_axpy_rows_128_avx512(acc, w, ld, G, rows, stride, n_rows);                                        \
        else                                                                                                        \
            axpy_rows_##fmt(acc, w, ld, G, rows, stride, n_rows, n);                                                \
    }
NIBBLE_ANY(q4_0)
NIBBLE_ANY(int4)
NIBBLE_ANY(fp4)

#define NIBBLE_ENTRY(F, fmt, quantize)                                                                              \
    [F] = { F, quantize, dequantize_##fmt, dot_##fmt##_any, axpy_##fmt##_any, dot_rows_##fmt##_any,                 \
            axpy_rows_##fmt##_any }

const FormatOps codec_avx512[FMT_COUNT] = {
    CODEC_ENTRY(FMT_F32, f32, codec_quantize_f32_ref),   CODEC_ENTRY(FMT_F16, f16, quantize_f16),
    CODEC_ENTRY(FMT_Q8_0, q8_0, codec_quantize_q8_0_avx2),
    NIBBLE_ENTRY(FMT_Q4_0, q4_0, codec_quantize_q4_0_ref),
    NIBBLE_ENTRY(FMT_INT4, int4, codec_quantize_int4_ref), NIBBLE_ENTRY(FMT_FP4, fp4, codec_quantize_fp4_ref),
    CODEC_ENTRY(FMT_U4, u4, codec_quantize_u4_ref),       CODEC_ENTRY(FMT_U2, u2, codec_quantize_u2_ref),
};
