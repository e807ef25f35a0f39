/* iaxpy_avx2.c: 4-bit value rows added with 16-bit integer weights, AVX2
 * (kernels.h, IntValueOps: scale, round, axpy); the references in
 * qdot_ref.c are the specification.
 *
 * Two rows at a time: a block's 16 bytes of each are widened to 16-bit
 * lanes, split into their low and high nibbles, and the two rows' codes
 * interleaved, so that one madd multiplies both rows by their weights and
 * adds the products into 32-bit sums. The codes stay unsigned (q4_0 and
 * int4 their value + 8, fp4 its doubled value + 12, by a byte shuffle), and
 * the offset times the rows' weights is taken off once a call: exact, so
 * the sums do not depend on where the rows are cut into calls.
 *
 * A register holds 8 of a block's sums in the order the interleaving makes
 * (lanes j and j + 8 of the nibbles side by side); acc is turned into that
 * order when loaded and back when stored (load_block, store_block). */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "kernels/codec_isa.h"
#include "kernels/kernels_isa.h"

#define QK 32 /* values a block */

#define INLINE static inline __attribute__((always_inline))

/* Where block b of a row keeps its 16 bytes of nibbles. */
INLINE const unsigned char *nibbles_of(Format fmt, const unsigned char *row, size_t b)
{
    return fmt == FMT_Q4_0 ? row + b * sizeof(BlockQ4_0) + offsetof(BlockQ4_0, qs) : row + b * (QK / 2);
}

/* The unsigned codes of a block of one row, in 16-bit lanes: lo lane j the
 * code in byte j's low nibble, hi the high nibble's. */
INLINE void codes(Format fmt, const unsigned char *p, __m256i *lo, __m256i *hi)
{
    __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)p));
    if (fmt == FMT_INT4) /* the sign bit of both nibbles flipped: the value + 8 */
        x = _mm256_xor_si256(x, _mm256_set1_epi16(0x88));
    if (fmt == FMT_FP4) /* both nibbles complemented, so that lanes' zero high bytes look up 0 */
        x = _mm256_xor_si256(x, _mm256_set1_epi16(0xff));
    *lo = _mm256_and_si256(x, _mm256_set1_epi16(0x0f));
    *hi = _mm256_srli_epi16(x, 4);
    if (fmt == FMT_FP4) { /* complemented nibble -> doubled E2M1 value + 12 */
        const __m256i t = _mm256_setr_epi8(0, 4, 6, 8, 9, 10, 11, 12, 24, 20, 18, 16, 15, 14, 13, 12, 0, 4, 6, 8, 9,
                                           10, 11, 12, 24, 20, 18, 16, 15, 14, 13, 12);
        *lo = _mm256_shuffle_epi8(t, *lo);
        *hi = _mm256_shuffle_epi8(t, *hi);
    }
}

/* The offset the unsigned codes carry. */
INLINE int code_offset(Format fmt)
{
    return fmt == FMT_FP4 ? 12 : 8;
}

/* acc's 32 sums of a block, natural order, into the registers' order. q4_0:
 * value j from the low nibble, j + 16 from the high; int4 and fp4: 2j and
 * 2j + 1. */
INLINE void load_block(Format fmt, const int32_t *a, __m256i v[4])
{
    const __m256i n0 = _mm256_loadu_si256((const __m256i *)(const void *)a);
    const __m256i n1 = _mm256_loadu_si256((const __m256i *)(const void *)(a + 8));
    const __m256i n2 = _mm256_loadu_si256((const __m256i *)(const void *)(a + 16));
    const __m256i n3 = _mm256_loadu_si256((const __m256i *)(const void *)(a + 24));
    if (fmt == FMT_Q4_0) {
        v[0] = _mm256_permute2x128_si256(n0, n1, 0x20);
        v[1] = _mm256_permute2x128_si256(n0, n1, 0x31);
        v[2] = _mm256_permute2x128_si256(n2, n3, 0x20);
        v[3] = _mm256_permute2x128_si256(n2, n3, 0x31);
        return;
    }
    const __m256 a02 = _mm256_castsi256_ps(_mm256_permute2x128_si256(n0, n2, 0x20));
    const __m256 b02 = _mm256_castsi256_ps(_mm256_permute2x128_si256(n0, n2, 0x31));
    const __m256 a13 = _mm256_castsi256_ps(_mm256_permute2x128_si256(n1, n3, 0x20));
    const __m256 b13 = _mm256_castsi256_ps(_mm256_permute2x128_si256(n1, n3, 0x31));
    v[0] = _mm256_castps_si256(_mm256_shuffle_ps(a02, b02, 0x88)); /* evens */
    v[2] = _mm256_castps_si256(_mm256_shuffle_ps(a02, b02, 0xdd)); /* odds */
    v[1] = _mm256_castps_si256(_mm256_shuffle_ps(a13, b13, 0x88));
    v[3] = _mm256_castps_si256(_mm256_shuffle_ps(a13, b13, 0xdd));
}

/* The inverse of load_block. */
INLINE void store_block(Format fmt, int32_t *a, const __m256i v[4])
{
    __m256i n0, n1, n2, n3;
    if (fmt == FMT_Q4_0) {
        n0 = _mm256_permute2x128_si256(v[0], v[1], 0x20);
        n1 = _mm256_permute2x128_si256(v[0], v[1], 0x31);
        n2 = _mm256_permute2x128_si256(v[2], v[3], 0x20);
        n3 = _mm256_permute2x128_si256(v[2], v[3], 0x31);
    } else {
        const __m256 v0 = _mm256_castsi256_ps(v[0]), v1 = _mm256_castsi256_ps(v[1]);
        const __m256 v2 = _mm256_castsi256_ps(v[2]), v3 = _mm256_castsi256_ps(v[3]);
        const __m256i a02 = _mm256_castps_si256(_mm256_unpacklo_ps(v0, v2));
        const __m256i b02 = _mm256_castps_si256(_mm256_unpackhi_ps(v0, v2));
        const __m256i a13 = _mm256_castps_si256(_mm256_unpacklo_ps(v1, v3));
        const __m256i b13 = _mm256_castps_si256(_mm256_unpackhi_ps(v1, v3));
        n0 = _mm256_permute2x128_si256(a02, b02, 0x20);
        n2 = _mm256_permute2x128_si256(a02, b02, 0x31);
        n1 = _mm256_permute2x128_si256(a13, b13, 0x20);
        n3 = _mm256_permute2x128_si256(a13, b13, 0x31);
    }
    _mm256_storeu_si256((__m256i *)(void *)a, n0);
    _mm256_storeu_si256((__m256i *)(void *)(a + 8), n1);
    _mm256_storeu_si256((__m256i *)(void *)(a + 16), n2);
    _mm256_storeu_si256((__m256i *)(void *)(a + 24), n3);
}

/* Two weights side by side in every 32-bit lane: a row's, and the next
 * row's, wpr further on. */
INLINE __m256i weight_pair(const int16_t *w, size_t wpr)
{
    return _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)w[0] | (uint32_t)(uint16_t)w[wpr] << 16));
}

/* s[k] += the pairs p[k] times the weight pair w, k < 4. */
INLINE void add_pairs(__m256i s[4], const __m256i p[4], __m256i w)
{
    CODEC_UNROLL
    for (size_t k = 0; k < 4; k++)
        s[k] = _mm256_add_epi32(s[k], _mm256_madd_epi16(p[k], w));
}

/* BB blocks from block b0 on, for GB heads (GB * BB * 4 <= 8 sums in
 * registers), over all the rows. */
INLINE void pass(Format fmt, const size_t GB, const size_t BB, int32_t *acc, const int16_t *wq, size_t ldw,
                 const unsigned char *rows, size_t stride, size_t n_rows, size_t n, size_t b0)
{
    const size_t wpr = iaxpy_weights_per_row(fmt, n), bw = wpr > 1; /* bw: the weights go by block */
    __m256i a[8];
    CODEC_UNROLL
    for (size_t g = 0; g < GB; g++)
        CODEC_UNROLL
        for (size_t bb = 0; bb < BB; bb++)
            load_block(fmt, acc + g * n + (b0 + bb) * QK, a + 4 * (g * BB + bb));
    size_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        const unsigned char *ra = rows + r * stride, *rb = ra + stride;
        CODEC_UNROLL
        for (size_t bb = 0; bb < BB; bb++) {
            __m256i lo_a, hi_a, lo_b, hi_b;
            codes(fmt, nibbles_of(fmt, ra, b0 + bb), &lo_a, &hi_a);
            codes(fmt, nibbles_of(fmt, rb, b0 + bb), &lo_b, &hi_b);
            const __m256i p[4] = { _mm256_unpacklo_epi16(lo_a, lo_b), _mm256_unpackhi_epi16(lo_a, lo_b),
                                   _mm256_unpacklo_epi16(hi_a, hi_b), _mm256_unpackhi_epi16(hi_a, hi_b) };
            CODEC_UNROLL
            for (size_t g = 0; g < GB; g++)
                add_pairs(a + 4 * (g * BB + bb), p, weight_pair(wq + g * ldw + r * wpr + bw * (b0 + bb), wpr));
        }
    }
    if (r < n_rows) /* an odd row: paired with a weight of 0 (itself again, so nothing past the rows is read) */
        CODEC_UNROLL
        for (size_t bb = 0; bb < BB; bb++) {
            __m256i lo, hi;
            codes(fmt, nibbles_of(fmt, rows + r * stride, b0 + bb), &lo, &hi);
            const __m256i p[4] = { _mm256_unpacklo_epi16(lo, lo), _mm256_unpackhi_epi16(lo, lo),
                                   _mm256_unpacklo_epi16(hi, hi), _mm256_unpackhi_epi16(hi, hi) };
            CODEC_UNROLL
            for (size_t g = 0; g < GB; g++)
                add_pairs(a + 4 * (g * BB + bb), p,
                          _mm256_set1_epi32((int32_t)(uint16_t)wq[g * ldw + r * wpr + bw * (b0 + bb)]));
        }
    CODEC_UNROLL
    for (size_t g = 0; g < GB; g++)
        CODEC_UNROLL
        for (size_t bb = 0; bb < BB; bb++)
            store_block(fmt, acc + g * n + (b0 + bb) * QK, a + 4 * (g * BB + bb));
}

/* The sum of a head's weights of index j (< wpr) over its rows: with
 * one weight a row (int4, fp4) 16 a step, madd with ones adding pairs. */
static int32_t weight_sum(const int16_t *w, size_t n_rows, size_t wpr, size_t j)
{
    int32_t sum = 0;
    size_t r = 0;
    if (wpr == 1) {
        __m256i s = _mm256_setzero_si256();
        for (; r + 16 <= n_rows; r += 16)
            s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(w + r)),
                                                      _mm256_set1_epi16(1)));
        int32_t lane[8];
        _mm256_storeu_si256((__m256i *)(void *)lane, s);
        for (size_t l = 0; l < 8; l++)
            sum += lane[l];
    }
    for (; r < n_rows; r++)
        sum += w[r * wpr + j];
    return sum;
}

/* acc[g * n + i] -= offset * (the rows' weights of i): the codes' offset
 * taken off. */
static void take_offset(int32_t *acc, const int16_t *wq, size_t ldw, size_t wpr, int offset, size_t n_rows,
                        size_t G, size_t n)
{
    const size_t span = n / wpr; /* values a weight covers: a block, or the row */
    for (size_t g = 0; g < G; g++)
        for (size_t j = 0; j < wpr; j++) {
            const int32_t off = offset * weight_sum(wq + g * ldw, n_rows, wpr, j);
            for (size_t i = j * span; i < (j + 1) * span; i++)
                acc[g * n + i] -= off;
        }
}

INLINE void iaxpy_fmt(Format fmt, int32_t *acc, const int16_t *wq, size_t ldw, const unsigned char *rows,
                      size_t stride, size_t n_rows, size_t G, size_t n)
{
    const size_t nb = n / QK;
    size_t g = 0;
    if (G == 1) { /* one head: two blocks a pass */
        size_t b = 0;
        for (; b + 2 <= nb; b += 2)
            pass(fmt, 1, 2, acc, wq, ldw, rows, stride, n_rows, n, b);
        if (b < nb)
            pass(fmt, 1, 1, acc, wq, ldw, rows, stride, n_rows, n, b);
        g = 1;
    }
    for (; g + 2 <= G; g += 2) /* the group's heads two at a time, sharing each block's unpacking */
        for (size_t b = 0; b < nb; b++)
            pass(fmt, 2, 1, acc + g * n, wq + g * ldw, ldw, rows, stride, n_rows, n, b);
    if (g < G)
        for (size_t b = 0; b < nb; b++)
            pass(fmt, 1, 1, acc + g * n, wq + g * ldw, ldw, rows, stride, n_rows, n, b);
    take_offset(acc, wq, ldw, iaxpy_weights_per_row(fmt, n), code_offset(fmt), n_rows, G, n);
}

void iaxpy_avx2(int32_t *acc, const int16_t *wq, size_t ldw, Format fmt, const void *rows, size_t stride,
                size_t n_rows, size_t G, size_t n)
{
    const unsigned char *p = rows;
    switch (fmt) { /* each format its own loops, the decoder inside */
    case FMT_Q4_0: iaxpy_fmt(FMT_Q4_0, acc, wq, ldw, p, stride, n_rows, G, n); break;
    case FMT_INT4: iaxpy_fmt(FMT_INT4, acc, wq, ldw, p, stride, n_rows, G, n); break;
    case FMT_FP4: iaxpy_fmt(FMT_FP4, acc, wq, ldw, p, stride, n_rows, G, n); break;
    default: iaxpy_ref(acc, wq, ldw, fmt, rows, stride, n_rows, G, n); break;
    }
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

/* Rows r.. of n_rows, 8 / WPR at a time (WPR, the weights a row, a
 * constant dividing 8): their 8 scales converted at once by F16C (int4,
 * fp4: a row's, after its nibbles; q4_0: a block's, before its nibbles),
 * then each head's weights times them. Returns the rows done. */
INLINE size_t scale_rows(const size_t WPR, float *u, size_t ldu, float *umax, const float *p, size_t ld, size_t G,
                         Format fmt, const unsigned char *rows, size_t stride, size_t n_rows, size_t n)
{
    const size_t step = 8 / WPR;
    const __m256 half = _mm256_set1_ps(fmt == FMT_FP4 ? 0.5f : 1.0f);
    size_t r = 0;
    for (; r + step <= n_rows; r += step) {
        short h[8]; /* into a vector lane by lane: stored as a whole and loaded, it would wait for the stores */
        for (size_t i = 0; i < step; i++)
            for (size_t b = 0; b < WPR; b++) {
                const unsigned char *row = rows + (r + i) * stride;
                memcpy(&h[i * WPR + b], fmt == FMT_Q4_0 ? row + b * sizeof(BlockQ4_0) : row + n / 2, sizeof h[0]);
            }
        const __m128i hv = _mm_setr_epi16(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]);
        const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(hv), half);
        for (size_t g = 0; g < G; g++) {
            const float *pg = p + g * ld + r;
            __m256 pv;
            if (WPR == 1) {
                pv = _mm256_loadu_ps(pg);
            } else {
                float pw[8];
                for (size_t i = 0; i < step; i++)
                    for (size_t b = 0; b < WPR; b++)
                        pw[i * WPR + b] = pg[i];
                pv = _mm256_loadu_ps(pw);
            }
            const __m256 x = _mm256_mul_ps(pv, d);
            _mm256_storeu_ps(u + g * ldu + r * WPR, x);
            const float m = max_lane(abs_ps(x));
            umax[g] = m > umax[g] ? m : umax[g];
        }
    }
    return r;
}

/* Row lengths of 32, 64, 128 or 256 values for q4_0 (1, 2, 4 or 8 blocks),
 * any for int4 and fp4; what is left, and other lengths, to iscale_ref. */
void iscale_avx2(float *u, size_t ldu, float *umax, const float *p, size_t ld, size_t G, Format fmt, const void *rows,
                 size_t stride, size_t n_rows, size_t n)
{
    const unsigned char *base = rows;
    size_t r = 0;
    if (iaxpy_takes(fmt))
        switch (iaxpy_weights_per_row(fmt, n)) {
        case 1: r = scale_rows(1, u, ldu, umax, p, ld, G, fmt, base, stride, n_rows, n); break;
        case 2: r = scale_rows(2, u, ldu, umax, p, ld, G, fmt, base, stride, n_rows, n); break;
        case 4: r = scale_rows(4, u, ldu, umax, p, ld, G, fmt, base, stride, n_rows, n); break;
        case 8: r = scale_rows(8, u, ldu, umax, p, ld, G, fmt, base, stride, n_rows, n); break;
        default: break;
        }
    if (r < n_rows)
        iscale_ref(u + r * iaxpy_weights_per_row(fmt, n), ldu, umax, p + r, ld, G, fmt, base + r * stride, stride,
                   n_rows - r, n);
}

void iround_avx2(int16_t *wq, const float *u, float k, size_t count)
{
    const __m256 kv = _mm256_set1_ps(k);
    size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m256i lo = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(u + i), kv));
        const __m256i hi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(u + i + 8), kv));
        const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xd8); /* packs works by halves */
        _mm256_storeu_si256((__m256i *)(void *)(wq + i), w);
    }
    iround_ref(wq + i, u + i, k, count - i);
}
