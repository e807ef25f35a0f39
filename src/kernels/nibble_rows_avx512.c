/* nibble_rows_avx512.c: AVX-512's dot_rows and axpy_rows for rows of 128
 * 4-bit codes (the usual head size): q4_0 (4 blocks, 72 bytes), with the
 * nibbles of all four blocks gathered into each vector, and int4 and fp4
 * (64 bytes of nibbles and the row's scale).
 *
 * The general decoder (codec_avx512.c) takes a block at a time: it widens
 * 16 bytes to 16 lanes twice and fetches, converts and applies the block's
 * scale once per 32 values. Here a word permute of the row gathers 16
 * words, 4 from each block, into the dword lanes: lane 4b + i holds a word
 * of block b. A word's 4 nibbles give 4 vectors (a shift each; the
 * 16-entry permute that decodes reads only the low 4 bits of its index),
 * every vector holds 4 values of each block, and one vector of scales,
 * [d0 x4, d1 x4, d2 x4, d3 x4], serves the whole row: the dot sums q times
 * the codes over the row, then scales lane by lane; axpy adds w * that
 * vector times the codes. q and the accumulators are moved into this lane
 * order once per call (view_index).
 *
 * What it bought on this project's machine (Zen 4; 8192 rows of 128 values
 * from L2, G = 1, best of 200 rounds): dot 7.2 -> 6.6 ns a row, axpy 6.6 ->
 * 5.3. Both are bound by the count of 512-bit operations, about 28 a row
 * now (decode 16, FMA 8). Tried and slower: exact codes from the float
 * 2^23 + k (a logic op and a subtraction instead of the permute).
 * Software prefetch 2 KiB ahead: no change from L3, but from memory (a
 * flash step over 65536 rows, cold, 8 alternating runs of 96 steps) mean
 * 1.19 -> 1.05 ms, best 1.02 -> 0.93: the hardware prefetchers fall behind
 * a stream this slow to consume.
 *
 * Four heads' axpy (axpy_four) takes each part of 64 rows twice, one half
 * of the views at a time: 4 x 4 accumulators fit in registers where 4 x 8
 * do not, and a half decodes with half the permutes, so a row is decoded
 * once for the four heads where before once for each pair. Whole cold
 * flash steps on an AVX-512 Xeon (65536 rows, 31 alternating with the
 * former code in one process, medians; same bits): the former took 1.16x
 * as long at G = 4, 1.17x at G = 8, 1.08x at G = 2, this and the dot's
 * fix below together. The dot zeroed its 16 partial sums, through memory,
 * before every block of rows (a rep stos each 4 rows at G = 4); now only
 * a last, partial block is zeroed: the dot alone, cold, 0.83x of its time
 * at G = 4, 0.91x at G = 1.
 *
 * int4 and fp4 need no gathering: a row's 64 bytes are 16 words, and word
 * j's nibble v is element 8j + v, so view v is the row shifted by 4v and
 * looked up in a table of the 16 values times the row's scale (a multiply
 * per half row decoded, the reference's rounding of each value). Before, they
 * went through the general decoder 16 values at a time (a permute to
 * spread two words, a variable shift, the lookup): whole cold flash steps
 * as above took 1.55x (int4) and 1.51x (fp4) as long at G = 1, 1.38x and
 * 1.36x at G = 4.
 *
 * Agrees with codec_ref within test_codec.c's bounds: the dot rounds the
 * products and the row's sum in float, then scales each lane once (q4_0;
 * int4's and fp4's values come scaled); axpy rounds w * d once per row
 * and block (q4_0), then one FMA a value. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"
#include "kernels/reduce_avx512.h"

#define INLINE static inline __attribute__((always_inline))
#define VIEWS 8 /* vectors of 16 values a row: 2 gathers x 4 nibbles */
#define ROW_VALUES NIBBLE_ROW_VALUES /* 4 q4_0 blocks */
#define PREFETCH_BYTES 2048 /* 28 rows ahead: see the header */

/* Value index of lane j of view v. q4_0: gather g = v / 4 takes qs word
 * 4g + i of block b = j / 4 (i = j % 4), that is bytes 8g + 2i and 8g +
 * 2i + 1; nibble s = v % 4 of that word is element 8g + 2i + (0, 16, 1,
 * 17)[s]. int4, fp4: nibble v of the row's word j, element 8j + v. */
static int32_t view_index(Format fmt, size_t v, size_t j)
{
    static const int32_t nibble_elem[4] = { 0, 16, 1, 17 };
    const size_t g = v / 4, s = v % 4, b = j / 4, i = j % 4;
    if (fmt != FMT_Q4_0)
        return (int32_t)(8 * j + v);
    return (int32_t)(QK4_0 * b + 8 * g + 2 * i) + nibble_elem[s];
}

/* The lanes' value indexes, view by view. */
typedef struct {
    __m512i idx[VIEWS];
} ViewIndex;

static ViewIndex view_indexes(Format fmt)
{
    ViewIndex vi;
    for (size_t v = 0; v < VIEWS; v++) {
        int32_t t[16];
        for (size_t j = 0; j < 16; j++)
            t[j] = view_index(fmt, v, j);
        vi.idx[v] = _mm512_loadu_si512(t);
    }
    return vi;
}

/* A row of 128 floats (q, or a head's sums) in the views' lane order. */
INLINE void gather_views(const ViewIndex *vi, const float *x, __m512 v[VIEWS])
{
    for (size_t i = 0; i < VIEWS; i++)
        v[i] = _mm512_i32gather_ps(vi->idx[i], x, 4);
}

/* Word permutes of a row's bytes 0..63 (lo) and 64..71 (hi). WORDS(g): in
 * dword j, word 9b + 1 + 4g + i (block b's qs start at byte 18b + 2); the
 * upper word of each dword is not read. SCALES: words 9b, the d of block
 * b, in words 4b .. 4b + 3. */
INLINE __m512i words_index(size_t g)
{
    int16_t t[32];
    for (size_t j = 0; j < 16; j++)
        t[2 * j] = t[2 * j + 1] = (int16_t)(9 * (j / 4) + 1 + 4 * g + j % 4);
    return _mm512_loadu_si512(t);
}

INLINE __m512i scales_index(void)
{
    int16_t t[32];
    for (size_t j = 0; j < 32; j++)
        t[j] = (int16_t)(9 * (j % 16 / 4));
    return _mm512_loadu_si512(t);
}

/* The constants of the decode. */
typedef struct {
    __m512i words[2], scales; /* q4_0 */
    __m512 table;             /* code -> value: q4_0 k - 8; int4 and fp4 as codec_ref decodes, unscaled */
} Decode;

INLINE Decode decode_consts(Format fmt)
{
    static const float int4_values[16] = { 0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1 };
    static const float fp4_values[16] = { FP4_MAGNITUDES, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f };
    if (fmt != FMT_Q4_0)
        return (Decode){ .table = _mm512_loadu_ps(fmt == FMT_INT4 ? int4_values : fp4_values) };
    return (Decode){ { words_index(0), words_index(1) },
                     scales_index(),
                     _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7) };
}

/* Half h of row p decoded: k[v] the values of view 4h + v, *d the scale of
 * each lane. q4_0: k the codes minus 8, d the blocks' scales, from the
 * gather of the blocks' words h. int4, fp4: word j's nibble 4h + v in lane
 * j of view v, looked up as its value times the row's scale (codec_ref's
 * one rounding); d unset. The permute reads only the low 4 bits of each
 * index. */
INLINE void decode_half(const Format fmt, const Decode *c, size_t h, const unsigned char *p, __m512 k[4],
                        __m512 *d)
{
    __m512i w;
    __m512 t = c->table;
    if (fmt == FMT_Q4_0) {
        const __m512i lo = _mm512_loadu_si512(p);
        const __m512i hi = _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)(const void *)(p + 64)));
        *d = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(c->scales, lo)));
        w = _mm512_permutex2var_epi16(lo, c->words[h], hi);
    } else {
        unsigned short bits;
        memcpy(&bits, p + ROW_VALUES / 2, sizeof bits);
        t = _mm512_mul_ps(t, _mm512_cvtph_ps(_mm256_set1_epi16((short)bits)));
        w = _mm512_loadu_si512(p);
        if (h)
            w = _mm512_srli_epi32(w, 16);
    }
    k[0] = _mm512_permutexvar_ps(w, t);
    k[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(w, 4), t);
    k[2] = _mm512_permutexvar_ps(_mm512_srli_epi32(w, 8), t);
    k[3] = _mm512_permutexvar_ps(_mm512_srli_epi32(w, 12), t);
}

/* Row p decoded, both halves (the compiler shares their loads, scales and
 * table): k[v] view v's values, *d as decode_half's. */
INLINE void decode_row(const Format fmt, const Decode *c, const unsigned char *p, __m512 k[VIEWS], __m512 *d)
{
    _mm_prefetch((const char *)p + PREFETCH_BYTES, _MM_HINT_T0);
    decode_half(fmt, c, 0, p, k, d);
    decode_half(fmt, c, 1, p, k + 4, d);
}

/* --- dot ---------------------------------------------------------------------- */

/* GB heads x the rows, 16 / GB rows a reduction: out[g * ld + r] = q_g .
 * row r, with qv[g][v] head g's q in view v's lane order. */
INLINE void dot_heads(const Format fmt, const size_t GB, float *out, size_t ld, const __m512 (*qv)[VIEWS],
                      const unsigned char *rows, size_t stride, size_t n_rows)
{
    const Decode c = decode_consts(fmt);
    const size_t RB = 16 / GB;
    for (size_t r0 = 0; r0 < n_rows; r0 += RB) {
        const size_t nr = n_rows - r0 < RB ? n_rows - r0 : RB;
        __m512 part[16];
        if (nr < RB) /* only then: see the header */
            for (size_t x = 0; x < 16; x++)
                part[x] = _mm512_setzero_ps();
#pragma GCC unroll 1
        for (size_t r = 0; r < nr; r++) {
            __m512 k[VIEWS], d;
            decode_row(fmt, &c, rows + (r0 + r) * stride, k, &d);
            CODEC_UNROLL
            for (size_t g = 0; g < GB; g++) {
                __m512 t0 = _mm512_mul_ps(qv[g][0], k[0]), t1 = _mm512_mul_ps(qv[g][1], k[1]);
                CODEC_UNROLL
                for (size_t v = 2; v < VIEWS; v += 2) { /* two sums in flight */
                    t0 = _mm512_fmadd_ps(qv[g][v], k[v], t0);
                    t1 = _mm512_fmadd_ps(qv[g][v + 1], k[v + 1], t1);
                }
                const __m512 t = _mm512_add_ps(t0, t1);
                part[g * RB + r] = fmt == FMT_Q4_0 ? _mm512_mul_ps(t, d) : t;
            }
        }
        store_heads(GB, out + r0, ld, reduce16(part), nr);
    }
}

INLINE void dot_rows_128(const Format fmt, float *out, size_t ld, const float *q, size_t G, const void *rows,
                         size_t stride, size_t n_rows)
{
    const ViewIndex vi = view_indexes(fmt);
    for (size_t g0 = 0; g0 < G;) {
        const size_t GB = G - g0 >= 4 ? 4 : G - g0 >= 2 ? 2 : 1;
        __m512 qv[4][VIEWS];
        for (size_t g = 0; g < GB; g++)
            gather_views(&vi, q + (g0 + g) * ROW_VALUES, qv[g]);
        float *o = out + g0 * ld;
        if (GB == 4) /* a constant GB per call: see CODEC_UNROLL */
            dot_heads(fmt, 4, o, ld, (const __m512(*)[VIEWS])qv, rows, stride, n_rows);
        else if (GB == 2)
            dot_heads(fmt, 2, o, ld, (const __m512(*)[VIEWS])qv, rows, stride, n_rows);
        else
            dot_heads(fmt, 1, o, ld, (const __m512(*)[VIEWS])qv, rows, stride, n_rows);
        g0 += GB;
    }
}

/* --- axpy --------------------------------------------------------------------- */

/* Row r's weight for head g: w, times the lanes' scales where k are codes. */
INLINE __m512 weight(const Format fmt, float w, __m512 d)
{
    return fmt == FMT_Q4_0 ? _mm512_mul_ps(_mm512_set1_ps(w), d) : _mm512_set1_ps(w);
}

/* GB heads, views 4h .. 4h + 3: a[g][v] += sum_r w[g * ld + r] * row r. */
INLINE void axpy_half(const Format fmt, const size_t GB, const Decode *c, size_t h, __m512 (*a)[4], const float *w,
                      size_t ld, const unsigned char *rows, size_t stride, size_t n_rows)
{
#pragma GCC unroll 1
    for (size_t r = 0; r < n_rows; r++) {
        const unsigned char *p = rows + r * stride;
        if (h == 0)
            _mm_prefetch((const char *)p + PREFETCH_BYTES, _MM_HINT_T0);
        __m512 k[4], d = _mm512_setzero_ps();
        decode_half(fmt, c, h, p, k, &d);
        CODEC_UNROLL
        for (size_t g = 0; g < GB; g++) {
            const __m512 wd = weight(fmt, w[g * ld + r], d);
            CODEC_UNROLL
            for (size_t v = 0; v < 4; v++)
                a[g][v] = _mm512_fmadd_ps(wd, k[v], a[g][v]);
        }
    }
}

#define HALF_ROWS 64 /* rows a part: its 4.5 KiB read twice, the second time from L1 */

/* Four heads at once: each part of the rows is added in two halves of the
 * views, 4 x 4 accumulators each, so a row is decoded once for the four
 * heads (at half the permutes a half) instead of once per two. */
INLINE void axpy_four(const Format fmt, __m512 (*acc)[VIEWS], const float *w, size_t ld, const unsigned char *rows,
                      size_t stride, size_t n_rows)
{
    const Decode c = decode_consts(fmt);
    for (size_t r0 = 0; r0 < n_rows; r0 += HALF_ROWS) {
        const size_t nr = n_rows - r0 < HALF_ROWS ? n_rows - r0 : HALF_ROWS;
        for (size_t h = 0; h < 2; h++) {
            __m512 a[4][4];
            for (size_t g = 0; g < 4; g++)
                for (size_t v = 0; v < 4; v++)
                    a[g][v] = acc[g][4 * h + v];
            axpy_half(fmt, 4, &c, h, a, w + r0, ld, rows + r0 * stride, stride, nr);
            for (size_t g = 0; g < 4; g++)
                for (size_t v = 0; v < 4; v++)
                    acc[g][4 * h + v] = a[g][v];
        }
    }
}

/* GB heads: a[g][v] += sum_r w[g * ld + r] * row r, in view order. */
INLINE void axpy_heads(const Format fmt, const size_t GB, __m512 (*a)[VIEWS], const float *w, size_t ld,
                       const unsigned char *rows, size_t stride, size_t n_rows)
{
    const Decode c = decode_consts(fmt);
#pragma GCC unroll 1
    for (size_t r = 0; r < n_rows; r++) {
        __m512 k[VIEWS], d = _mm512_setzero_ps();
        decode_row(fmt, &c, rows + r * stride, k, &d);
        CODEC_UNROLL
        for (size_t g = 0; g < GB; g++) {
            const __m512 wd = weight(fmt, w[g * ld + r], d);
            CODEC_UNROLL
            for (size_t v = 0; v < VIEWS; v++)
                a[g][v] = _mm512_fmadd_ps(wd, k[v], a[g][v]);
        }
    }
}

INLINE void axpy_rows_128(const Format fmt, float *acc, const float *w, size_t ld, size_t G, const void *rows,
                          size_t stride, size_t n_rows)
{
    const ViewIndex vi = view_indexes(fmt);
    for (size_t g0 = 0; g0 < G;) {
        const size_t GB = G - g0 >= 4 ? 4 : G - g0 >= 2 ? 2 : 1;
        __m512 a[4][VIEWS];
        for (size_t g = 0; g < GB; g++)
            gather_views(&vi, acc + (g0 + g) * ROW_VALUES, a[g]);
        if (GB == 4)
            axpy_four(fmt, a, w + g0 * ld, ld, rows, stride, n_rows);
        else if (GB == 2)
            axpy_heads(fmt, 2, a, w + g0 * ld, ld, rows, stride, n_rows);
        else
            axpy_heads(fmt, 1, a, w + g0 * ld, ld, rows, stride, n_rows);
        for (size_t g = 0; g < GB; g++)
            for (size_t v = 0; v < VIEWS; v++)
                _mm512_i32scatter_ps(acc + (g0 + g) * ROW_VALUES, vi.idx[v], a[g][v], 4);
        g0 += GB;
    }
}

/* --- the formats -------------------------------------------------------------- */

/* One function a format and form, each with its constants folded. */
#define NIBBLE_ROWS(name, FMT)                                                                                      \
    void name##_dot_rows_128_avx512(float *out, size_t ld, const float *q, size_t G, const void *rows,             \
                                    size_t stride, size_t n_rows)                                                  \
    {                                                                                                               \
        dot_rows_128(FMT, out, ld, q, G, rows, stride, n_rows);                                                     \
    }                                                                                                               \
    void name##_axpy_rows_128_avx512(float *acc, const float *w, size_t ld, size_t G, const void *rows,            \
                                     size_t stride, size_t n_rows)                                                 \
    {                                                                                                               \
        axpy_rows_128(FMT, acc, w, ld, G, rows, stride, n_rows);                                                    \
    }
NIBBLE_ROWS(q4_0, FMT_Q4_0)
NIBBLE_ROWS(int4, FMT_INT4)
NIBBLE_ROWS(fp4, FMT_FP4)
