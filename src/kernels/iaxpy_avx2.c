/* iaxpy_avx2.c: 4-bit value rows added with 16-bit integer weights, AVX2
 * (kernels.h, IAxpyFn); the reference in qdot_ref.c is the specification.
 *
 * The rows go CHUNK at a time: their scales are read and converted (F16C),
 * each head's weights rounded to 16 bits on the stack, and the chunk's
 * rows, now in L1, added, the next chunk's prefetched meanwhile. So the
 * rows' cache misses meet work, as in the float path, rather than a pass
 * over the scales of its own (measured cold, that cost q4_0 and int4 more
 * than their integer sums saved).
 *
 * Two rows at a time: a block's 16 bytes of each are widened to 16-bit
 * lanes, split into their low and high nibbles, and the two rows' codes
 * interleaved, so that one madd multiplies both rows by their weights and
 * adds the products into 32-bit sums. The codes stay unsigned (q4_0 and
 * int4 their value + 8, fp4 its doubled value + 12, by a byte shuffle), and
 * the offset times the rows' weights (one sum a chunk, head and block)
 * is taken off where a pass loads the sums: exact, so the sums do not
 * depend on where the rows are cut into calls.
 *
 * A register holds 8 of a block's sums in the order the interleaving makes
 * (lanes j and j + 8 of the nibbles side by side); acc is turned into that
 * order when loaded and back when stored (load_block, store_block; the
 * codes and that order: iaxpy_codes_avx2.h).
 *
 * iaxpy_vnni.c builds this file again for AVX-512 with VNNI: there the
 * 256-bit code has 32 registers, so a pass holds four heads' sums of a
 * block, not two (each row pair unpacked once for the four), and VNNI's
 * vpdpwssd multiplies the pairs and adds them into the sums in one
 * instruction (add_pairs). The sums are the same integers. Whole flash
 * steps (--int-dot, cold, 65536 rows, G = 4, an AVX-512 Xeon, 41 steps
 * alternating with this file's AVX2 build, medians): q4_0 0.87 of the
 * time, int4 0.86 and 0.90, fp4 0.85 and 0.90 (four heads a pass without
 * VNNI: 0.90 to 0.91); G = 1 unchanged (0.93 to 1.02). Where AVX-512 BW is
 * on as well, that build adds a block in 512-bit registers instead
 * (iaxpy_pass512.h): the same G = 4 steps, measured the same way against
 * the 256-bit VNNI build, took q4_0 0.89 of its time, int4 0.84, fp4 0.87;
 * G = 8 (q4_0) 0.87, G = 1 0.95. */
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/codec_isa.h"
#include "kernels/kernels_isa.h"

#define QK 32 /* values a block */

#define INLINE static inline __attribute__((always_inline))

#include "kernels/iaxpy_codes_avx2.h" /* after QK and INLINE */

#ifndef IAXPY_FN
#define IAXPY_FN iaxpy_avx2 /* the name this build's IAxpyFn goes by */
#endif

/* Heads a pass adds a block to at once: their sums, 4 registers a head,
 * and the row pair's codes must stay in registers. */
#ifdef __AVX512VL__
#define PASS_HEADS 4 /* of 32 registers */
#else
#define PASS_HEADS 2 /* of 16 */
#endif

/* What a pass does with a chunk's unpacked row pairs (UNPACKED_MAX_BLOCKS
 * blocks a row at most): unpack them, unpack them and keep them, or take
 * them as kept, [row pair][block][4]. Where a pass holds two heads (16
 * registers), a group's later heads take what its first pair kept: four
 * loads a block and row pair for int4 and fp4, whose unpacking flips or
 * looks up the nibbles too. The kernel alone on an AVX-512 Xeon's AVX2
 * table (a tile of 1024 rows from L2, 3001 calls alternating with the
 * former): at G = 4 the former took int4 1.04x to 1.07x as long, fp4
 * 1.10x, q4_0 at G = 8 1.08x; whole cold --int-dot flash steps at G = 4
 * int4 1.04x, fp4 1.09x (G = 3 1.05x). q4_0's unpacking (a widening, a
 * mask, a shift) costs what the loads and the first pair's stores do: kept,
 * its G = 4 took 1.02x as long, so it unpacks for every pair. */
typedef enum { UNPACK, UNPACK_KEEP, UNPACKED } Unpack;
#define UNPACKED_MAX_BLOCKS 4 /* 16 KiB on the stack */

/* The row pair (ra, rb)'s block b as a pass adds it: p[0], p[1] the low
 * nibbles' codes of the two rows interleaved, p[2], p[3] the high ones';
 * unpacked, or taken from k where they were kept, or unpacked and kept
 * there (mode). */
INLINE void pair_codes(Format fmt, const Unpack mode, __m256i *k, const unsigned char *ra, const unsigned char *rb,
                       size_t b, __m256i p[4])
{
    if (mode == UNPACKED) {
        CODEC_UNROLL
        for (size_t j = 0; j < 4; j++)
            p[j] = _mm256_load_si256(k + j);
        return;
    }
    __m256i lo_a, hi_a, lo_b, hi_b;
    codes(fmt, nibbles_of(fmt, ra, b), &lo_a, &hi_a);
    codes(fmt, nibbles_of(fmt, rb, b), &lo_b, &hi_b);
    p[0] = _mm256_unpacklo_epi16(lo_a, lo_b);
    p[1] = _mm256_unpackhi_epi16(lo_a, lo_b);
    p[2] = _mm256_unpacklo_epi16(hi_a, hi_b);
    p[3] = _mm256_unpackhi_epi16(hi_a, hi_b);
    if (mode == UNPACK_KEEP)
        CODEC_UNROLL
        for (size_t j = 0; j < 4; j++)
            _mm256_store_si256(k + j, p[j]);
}

/* Rows r and r + 1 of blocks b0 .. b0 + BB - 1 added into the GB heads'
 * sums a (pass()). */
INLINE void add_row_pair(Format fmt, const size_t GB, const size_t BB, __m256i *a, const int16_t *wq, size_t ldw,
                         size_t wpr, size_t bw, const unsigned char *rows, size_t stride, size_t n, size_t r,
                         size_t b0, const Unpack mode, __m256i *kept)
{
    const unsigned char *ra = rows + r * stride, *rb = ra + stride;
    CODEC_UNROLL
    for (size_t bb = 0; bb < BB; bb++) {
        __m256i p[4];
        pair_codes(fmt, mode, mode == UNPACK ? NULL : kept + (r / 2 * (n / QK) + b0 + bb) * 4, ra, rb, b0 + bb, p);
        CODEC_UNROLL
        for (size_t g = 0; g < GB; g++)
            add_pairs(a + 4 * (g * BB + bb), p, weight_pair(wq + g * ldw + r * wpr + 2 * bw * (b0 + bb)));
    }
}

/* BB blocks from block b0 on, for GB heads (GB * BB <= PASS_HEADS), over
 * all the rows, each head's offsets (off, round_weights) taken off its
 * sums as they are loaded; meanwhile the pf_bytes at pf (the next chunk's
 * rows) are prefetched, a row pair's worth a step, so that their misses
 * meet this work rather than the next chunk's reading of scales. kept:
 * the row pairs (Unpack). */
INLINE void pass(Format fmt, const size_t GB, const size_t BB, int32_t *acc, const int16_t *wq, size_t ldw,
                 const int32_t *off, const unsigned char *rows, size_t stride, size_t n_rows, size_t n, size_t b0,
                 const unsigned char *pf, size_t pf_bytes, const Unpack mode, __m256i *kept)
{
    const size_t wpr = iaxpy_weights_per_row(fmt, n), bw = wpr > 1; /* bw: the weights go by block */
    __m256i a[4 * PASS_HEADS];
    CODEC_UNROLL
    for (size_t g = 0; g < GB; g++)
        CODEC_UNROLL
        for (size_t bb = 0; bb < BB; bb++) {
            __m256i *v = a + 4 * (g * BB + bb);
            load_block(fmt, acc + g * n + (b0 + bb) * QK, v);
            const __m256i o = _mm256_set1_epi32(off[g * wpr + bw * (b0 + bb)]);
            CODEC_UNROLL
            for (size_t k = 0; k < 4; k++)
                v[k] = _mm256_sub_epi32(v[k], o);
        }
    size_t r = 0;
    /* Two loops, as pass512's: with the prefetch's test inside the one,
     * GCC moved sums between registers every row pair. The one loop took,
     * on an AVX-512 Xeon's AVX2 table, the kernel alone (a tile of 1024
     * rows from L2, 3001 calls in turn) 1.03x to 1.18x as long (q4_0,
     * int4, fp4, G = 1 and 4); whole --int-dot steps, cold, at G = 4, q4_0
     * 1.06x and 1.09x, int4 and fp4 1.01x to 1.03x. */
    if (pf_bytes)
        for (; r + 2 <= n_rows; r += 2) {
            for (size_t o = r * stride; o < (r + 2) * stride && o < pf_bytes; o += 64)
                _mm_prefetch((const char *)pf + o, _MM_HINT_T0);
            add_row_pair(fmt, GB, BB, a, wq, ldw, wpr, bw, rows, stride, n, r, b0, mode, kept);
        }
    else
        for (; r + 2 <= n_rows; r += 2)
            add_row_pair(fmt, GB, BB, a, wq, ldw, wpr, bw, rows, stride, n, r, b0, mode, kept);
    if (r < n_rows) /* an odd row: paired with itself (nothing past the rows is read) and a weight of 0 */
        CODEC_UNROLL
        for (size_t bb = 0; bb < BB; bb++) {
            __m256i lo, hi;
            codes(fmt, nibbles_of(fmt, rows + r * stride, b0 + bb), &lo, &hi);
            const __m256i p[4] = { _mm256_unpacklo_epi16(lo, lo), _mm256_unpackhi_epi16(lo, lo),
                                   _mm256_unpacklo_epi16(hi, hi), _mm256_unpackhi_epi16(hi, hi) };
            CODEC_UNROLL
            for (size_t g = 0; g < GB; g++)
                add_pairs(a + 4 * (g * BB + bb), p, weight_pair(wq + g * ldw + r * wpr + 2 * bw * (b0 + bb)));
        }
    CODEC_UNROLL
    for (size_t g = 0; g < GB; g++)
        CODEC_UNROLL
        for (size_t bb = 0; bb < BB; bb++)
            store_block(fmt, acc + g * n + (b0 + bb) * QK, a + 4 * (g * BB + bb));
}

/* sum[j], j < wpr (dividing 8): a head's weights of block j (of the row,
 * wpr 1) summed over a chunk's m rows, their weights in pairs: 16 at a
 * time, madd with ones adding each pair, lane l then holding block l % wpr. */
INLINE void weight_sums(int32_t *sum, const int16_t *w, size_t m, size_t wpr)
{
    const size_t count = (m + 1) / 2 * 2 * wpr;
    __m256i s = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 16 <= count; i += 16)
        s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(w + i)),
                                                  _mm256_set1_epi16(1)));
    int32_t lane[8];
    _mm256_storeu_si256((__m256i *)(void *)lane, s);
    memset(sum, 0, wpr * sizeof *sum);
    for (size_t l = 0; l < 8; l++)
        sum[l % wpr] += lane[l];
    for (; i < count; i++)
        sum[i / 2 % wpr] += w[i];
}

/* off[b] = offset times the sum of a head's chunk weights of block b (wq,
 * in pairs), b < wpr: what a pass takes off its sums (the codes' offset). */
INLINE void weight_offsets(int32_t *off, int offset, const int16_t *wq, size_t m, size_t wpr)
{
    int32_t sum[8];
    weight_sums(sum, wq, m, wpr);
    for (size_t b = 0; b < wpr; b++)
        off[b] = offset * sum[b];
}

INLINE __m256 abs_ps(__m256 x)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

/* The largest lane. */
INLINE float max_lane(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* The f16 bits of scale b of row r: int4's and fp4's one after the row's
 * nibbles, q4_0's at the head of its block b. */
INLINE int scale_bits(Format fmt, const unsigned char *rows, size_t stride, size_t n, size_t r, size_t b)
{
    const unsigned char *row = rows + r * stride;
    unsigned short h;
    memcpy(&h, fmt == FMT_Q4_0 ? row + b * sizeof(BlockQ4_0) : row + n / 2, sizeof h);
    return h;
}

/* The codes' scales of 8 rows (WPR a row) into d[r * WPR + b], r < 8, by
 * F16C (fp4's halved), and their magnitudes into top. Put in lane by lane:
 * stored to memory as a whole and loaded, a vector would wait for the
 * stores. */
INLINE void scales_of_8(const size_t WPR, float *d, __m256 *top, Format fmt, const unsigned char *rows,
                        size_t stride, size_t n)
{
    const size_t step = 8 / WPR; /* rows a vector */
    const __m256 half = _mm256_set1_ps(fmt == FMT_FP4 ? 0.5f : 1.0f);
    CODEC_UNROLL
    for (size_t c = 0; c < WPR; c++) {
#define LANE(l) scale_bits(fmt, rows, stride, n, c * step + (l) / WPR, (l) % WPR)
        __m128i h = _mm_cvtsi32_si128(LANE(0));
        h = _mm_insert_epi16(h, LANE(1), 1);
        h = _mm_insert_epi16(h, LANE(2), 2);
        h = _mm_insert_epi16(h, LANE(3), 3);
        h = _mm_insert_epi16(h, LANE(4), 4);
        h = _mm_insert_epi16(h, LANE(5), 5);
        h = _mm_insert_epi16(h, LANE(6), 6);
        h = _mm_insert_epi16(h, LANE(7), 7);
#undef LANE
        const __m256 x = _mm256_mul_ps(_mm256_cvtph_ps(h), half);
        _mm256_storeu_ps(d + c * 8, x);
        *top = _mm256_max_ps(abs_ps(x), *top); /* a NaN scale left out, as the reference leaves it */
    }
}

/* The scales of a chunk's rows r .. m - 1 into d[r * WPR + b] (fp4's
 * halved), eight rows at a time and then one by one, their largest
 * magnitude into top and *top_tail. */
INLINE void read_scales(const size_t WPR, float *d, __m256 *top, float *top_tail, Format fmt,
                        const unsigned char *chunk, size_t stride, size_t n, size_t r, size_t m)
{
    for (; r + 8 <= m; r += 8)
        scales_of_8(WPR, d + r * WPR, top, fmt, chunk + r * stride, stride, n);
    for (; r < m; r++)
        for (size_t b = 0; b < WPR; b++) {
            const float x = fp16_to_f32((unsigned short)scale_bits(fmt, chunk, stride, n, r, b)) *
                            (fmt == FMT_FP4 ? 0.5f : 1.0f);
            d[r * WPR + b] = x;
            *top_tail = fabsf(x) > *top_tail ? fabsf(x) : *top_tail;
        }
}

/* Where row r's weight of block b goes: beside the other row of its pair
 * (weight_pair). */
INLINE size_t pair_slot(size_t WPR, size_t r, size_t b)
{
    return r / 2 * 2 * WPR + 2 * b + r % 2;
}

/* The 8 weights of x (lane l: row c * 8 / WPR + l / WPR, block l % WPR of
 * 8 rows) into pair order; WPR 8 takes two rows' vectors, x and y. */
INLINE void store_pairs(const size_t WPR, int16_t *wq, __m128i x, __m128i y)
{
    if (WPR == 1) {
        _mm_storeu_si128((__m128i *)(void *)wq, x);
    } else if (WPR == 2) {
        _mm_storeu_si128((__m128i *)(void *)wq, _mm_shufflehi_epi16(_mm_shufflelo_epi16(x, 0xd8), 0xd8));
    } else if (WPR == 4) {
        _mm_storeu_si128((__m128i *)(void *)wq, _mm_unpacklo_epi16(x, _mm_srli_si128(x, 8)));
    } else {
        _mm_storeu_si128((__m128i *)(void *)wq, _mm_unpacklo_epi16(x, y));
        _mm_storeu_si128((__m128i *)(void *)(wq + 8), _mm_unpackhi_epi16(x, y));
    }
}

/* round_weights()'s rows from r on, one by one, and the partner of the
 * last row where m is odd. */
INLINE void round_rest(const size_t WPR, int16_t *wq, const float *p, const float *d, float k, size_t r, size_t m)
{
    for (; r < m; r++)
        for (size_t b = 0; b < WPR; b++)
            wq[pair_slot(WPR, r, b)] = iaxpy_weight(p[r] * d[r * WPR + b], k);
    if (m % 2)
        for (size_t b = 0; b < WPR; b++)
            wq[pair_slot(WPR, m, b)] = 0;
}

/* iaxpy_weight(p[r] * d[r * WPR + b], k) for the chunk's m rows, in pairs
 * (pair_slot): 8 rows at a time, their 8 weights p spread over the WPR
 * vectors of their scales by a permute; the rest one by one. off[b] =
 * offset times the sum of block b's weights, b < WPR. */
INLINE void round_weights(const size_t WPR, int16_t *wq, int32_t *off, int offset, const float *p, const float *d,
                          float k, size_t m)
{
    if (k == 0.0f) { /* iaxpy_weight's rule, whatever the scales */
        memset(wq, 0, (m + 1) / 2 * 2 * WPR * sizeof *wq);
        memset(off, 0, WPR * sizeof *off);
        return;
    }
    const size_t step = 8 / WPR;
    const __m256 kv = _mm256_set1_ps(k), lo = _mm256_set1_ps(-32767.0f), hi = _mm256_set1_ps(32767.0f);
    size_t r = 0;
    for (; r + 8 <= m; r += 8) {
        const __m256 p8 = _mm256_loadu_ps(p + r);
        __m128i w[8];
        CODEC_UNROLL
        for (size_t c = 0; c < WPR; c++) {
            __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            if (WPR > 1) /* lane l: row c * step + l / WPR */
                idx = _mm256_add_epi32(_mm256_set1_epi32((int)(c * step)),
                                       _mm256_srli_epi32(idx, WPR == 2 ? 1 : WPR == 4 ? 2 : 3));
            const __m256 u = _mm256_mul_ps(WPR == 1 ? p8 : _mm256_permutevar8x32_ps(p8, idx),
                                           _mm256_loadu_ps(d + r * WPR + c * 8));
            const __m256i x = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(u, kv), lo), hi));
            w[c] = _mm_packs_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
        }
        CODEC_UNROLL
        for (size_t c = 0; c < WPR; c += WPR == 8 ? 2 : 1)
            store_pairs(WPR, wq + (r + c * step) * WPR, w[c], w[WPR == 8 ? c + 1 : c]);
    }
    round_rest(WPR, wq, p, d, k, r, m);
    weight_offsets(off, offset, wq, m, WPR);
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include "kernels/iaxpy_pass512.h" /* the VNNI build's pass, weights and scales, in 512 bits */
#define PASS pass512
#define ROUND_WEIGHTS round_weights512
#define READ_SCALES read_scales512
#else
#define PASS pass
#define ROUND_WEIGHTS round_weights
#define READ_SCALES read_scales
#endif

/* Rows a chunk: its scales and a pass's heads' weights, 2 KiB a head at
 * most, on the stack, its rows (4.5 KiB of q4_0 rows of 128 values) in L1. */
#define CHUNK 64

/* GB heads' weights of a chunk's m rows rounded into wq (ldw apart), then
 * the rows added for all of them a block at a time, the pf_bytes at pf
 * prefetched during the first block. */
INLINE void add_heads(Format fmt, const size_t WPR, const size_t GB, int32_t *acc, int16_t *wq, size_t ldw,
                      const float *p, size_t ld, const float *to_int, const float *d, const unsigned char *rows,
                      size_t stride, size_t m, size_t n, const unsigned char *pf, size_t pf_bytes,
                      const Unpack mode, __m256i *kept)
{
    int32_t off[PASS_HEADS * 8];
    CODEC_UNROLL
    for (size_t j = 0; j < GB; j++)
        ROUND_WEIGHTS(WPR, wq + j * ldw, off + j * WPR, code_offset(fmt), p + j * ld, d, to_int[j], m);
    for (size_t b = 0; b < n / QK; b++)
        PASS(fmt, GB, 1, acc, wq, ldw, off, rows, stride, m, n, b, pf, b == 0 ? pf_bytes : 0, mode, kept);
}

/* One chunk of m <= CHUNK rows, all heads, its scales d already there,
 * and next rows after it to prefetch: one head two blocks a pass, more
 * heads PASS_HEADS at a time (then 2, then 1), sharing each block's
 * unpacking. */
INLINE void add_chunk(Format fmt, const size_t WPR, int32_t *acc, const float *p, size_t ld, const float *to_int,
                      const float *d, const unsigned char *rows, size_t stride, size_t m, size_t G, size_t n,
                      size_t next)
{
    const unsigned char *pf = rows + m * stride;
    const size_t nb = n / QK, ldw = CHUNK * WPR, pf_bytes = next * stride;
    int16_t wq[PASS_HEADS * CHUNK * 8];
    size_t g = 0;
    if (G == 1) {
        int32_t off[8];
        ROUND_WEIGHTS(WPR, wq, off, code_offset(fmt), p, d, to_int[0], m);
        size_t b = 0;
        for (; b + 2 <= nb; b += 2)
            PASS(fmt, 1, 2, acc, wq, ldw, off, rows, stride, m, n, b, pf, b == 0 ? pf_bytes : 0, UNPACK, NULL);
        if (b < nb)
            PASS(fmt, 1, 1, acc, wq, ldw, off, rows, stride, m, n, b, pf, b == 0 ? pf_bytes : 0, UNPACK, NULL);
        return;
    }
#if PASS_HEADS == 2
    if (fmt != FMT_Q4_0 && G > 2 && nb <= UNPACKED_MAX_BLOCKS) { /* the first pair of heads unpacks for the rest */
        __m256i kept[CHUNK / 2 * UNPACKED_MAX_BLOCKS * 4];
        add_heads(fmt, WPR, 2, acc, wq, ldw, p, ld, to_int, d, rows, stride, m, n, pf, pf_bytes, UNPACK_KEEP,
                  kept);
        for (g = 2; g + 2 <= G; g += 2)
            add_heads(fmt, WPR, 2, acc + g * n, wq, ldw, p + g * ld, ld, to_int + g, d, rows, stride, m, n, pf, 0,
                      UNPACKED, kept);
        if (g < G)
            add_heads(fmt, WPR, 1, acc + g * n, wq, ldw, p + g * ld, ld, to_int + g, d, rows, stride, m, n, pf, 0,
                      UNPACKED, kept);
        return;
    }
#endif
    for (; g + PASS_HEADS <= G; g += PASS_HEADS)
        add_heads(fmt, WPR, PASS_HEADS, acc + g * n, wq, ldw, p + g * ld, ld, to_int + g, d, rows, stride, m, n, pf,
                  g == 0 ? pf_bytes : 0, UNPACK, NULL);
    if (PASS_HEADS > 2 && G - g >= 2) {
        add_heads(fmt, WPR, 2, acc + g * n, wq, ldw, p + g * ld, ld, to_int + g, d, rows, stride, m, n, pf,
                  g == 0 ? pf_bytes : 0, UNPACK, NULL);
        g += 2;
    }
    if (g < G)
        add_heads(fmt, WPR, 1, acc + g * n, wq, ldw, p + g * ld, ld, to_int + g, d, rows, stride, m, n, pf, 0,
                  UNPACK, NULL);
}

INLINE void iaxpy_fmt(Format fmt, const size_t WPR, int32_t *acc, float *dmax, const float *p, size_t ld,
                      const float *to_int, const unsigned char *rows, size_t stride, size_t n_rows, size_t G,
                      size_t n)
{
    __m256 top = _mm256_setzero_ps();
    float top_tail = 0.0f;
    int adds = 0; /* every factor 0 (flash's first part): every weight is 0, only the scales are wanted */
    for (size_t g = 0; g < G; g++)
        adds |= to_int[g] != 0.0f;
    for (size_t r0 = 0; r0 < n_rows; r0 += CHUNK) {
        const size_t m = n_rows - r0 < CHUNK ? n_rows - r0 : CHUNK;
        const unsigned char *chunk = rows + r0 * stride;
        float d[CHUNK * 8];
        READ_SCALES(WPR, d, &top, &top_tail, fmt, chunk, stride, n, 0, m);
        const size_t left = n_rows - r0 - m;
        if (adds)
            add_chunk(fmt, WPR, acc, p + r0, ld, to_int, d, chunk, stride, m, G, n, left < CHUNK ? left : CHUNK);
    }
    const float t = max_lane(top) > top_tail ? max_lane(top) : top_tail;
    *dmax = t > *dmax ? t : *dmax;
}

/* Each format and row shape its own function: inlined all into one, GCC
 * kept the loops' addresses on the stack. */
#define IAXPY_SHAPE(name, FMT, WPR)                                                                                 \
    static __attribute__((noinline)) void name(int32_t *acc, float *dmax, const float *p, size_t ld,                 \
                                               const float *to_int, const unsigned char *rows, size_t stride,        \
                                               size_t n_rows, size_t G, size_t n)                                    \
    {                                                                                                                \
        iaxpy_fmt(FMT, WPR, acc, dmax, p, ld, to_int, rows, stride, n_rows, G, n);                                   \
    }
IAXPY_SHAPE(iaxpy_int4, FMT_INT4, 1)
IAXPY_SHAPE(iaxpy_fp4, FMT_FP4, 1)
IAXPY_SHAPE(iaxpy_q4_0_1, FMT_Q4_0, 1)
IAXPY_SHAPE(iaxpy_q4_0_2, FMT_Q4_0, 2)
IAXPY_SHAPE(iaxpy_q4_0_4, FMT_Q4_0, 4)
IAXPY_SHAPE(iaxpy_q4_0_8, FMT_Q4_0, 8)

/* int4 and fp4 rows of any length, q4_0 rows of 32, 64, 128 or 256 values
 * (1, 2, 4 or 8 blocks: a row's scales fill vectors of 8); other q4_0
 * lengths to the reference. */
void IAXPY_FN(int32_t *acc, float *dmax, const float *p, size_t ld, const float *to_int, Format fmt,
              const void *rows, size_t stride, size_t n_rows, size_t G, size_t n)
{
    const unsigned char *v = rows;
    const size_t wpr = iaxpy_weights_per_row(fmt, n);
    if (fmt == FMT_INT4)
        iaxpy_int4(acc, dmax, p, ld, to_int, v, stride, n_rows, G, n);
    else if (fmt == FMT_FP4)
        iaxpy_fp4(acc, dmax, p, ld, to_int, v, stride, n_rows, G, n);
    else if (fmt == FMT_Q4_0 && wpr == 1)
        iaxpy_q4_0_1(acc, dmax, p, ld, to_int, v, stride, n_rows, G, n);
    else if (fmt == FMT_Q4_0 && wpr == 2)
        iaxpy_q4_0_2(acc, dmax, p, ld, to_int, v, stride, n_rows, G, n);
    else if (fmt == FMT_Q4_0 && wpr == 4)
        iaxpy_q4_0_4(acc, dmax, p, ld, to_int, v, stride, n_rows, G, n);
    else if (fmt == FMT_Q4_0 && wpr == 8)
        iaxpy_q4_0_8(acc, dmax, p, ld, to_int, v, stride, n_rows, G, n);
    else
        iaxpy_ref(acc, dmax, p, ld, to_int, fmt, rows, stride, n_rows, G, n);
}
