/* iaxpy_avx2.c: 4-bit value rows added with 16-bit integer weights
 * (kernels.h, IAxpyFn), AVX2. iaxpy_ref is the specification.
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
#include <string.h>

#include "kernels/kernels_isa.h"

#define QK 32 /* values a block */

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8") /* the sums stay in registers only with every index a constant */

/* Where block b of a row keeps its 16 bytes of nibbles. */
INLINE const unsigned char *nibbles_of(Format fmt, const unsigned char *row, size_t b)
{
    return fmt == FMT_Q4_0 ? row + b * 18 + 2 : row + b * (QK / 2); /* q4_0: fp16 scale first */
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

/* Two weights side by side in every 32-bit lane: row r's and row r + 1's. */
INLINE __m256i weight_pair(const int16_t *w, size_t nb)
{
    return _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)w[0] | (uint32_t)(uint16_t)w[nb] << 16));
}

/* BB blocks from block b0 on, for GB heads (GB * BB * 4 <= 8 sums in
 * registers), over all the rows. */
INLINE void pass(Format fmt, const size_t GB, const size_t BB, int32_t *acc, const int16_t *wq, size_t ldw,
                 const unsigned char *rows, size_t stride, size_t n_rows, size_t n, size_t b0)
{
    const size_t nb = n / QK;
    __m256i a[8];
    UNROLL
    for (size_t g = 0; g < GB; g++)
        UNROLL
        for (size_t bb = 0; bb < BB; bb++)
            load_block(fmt, acc + g * n + (b0 + bb) * QK, a + 4 * (g * BB + bb));
    size_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        const unsigned char *ra = rows + r * stride, *rb = ra + stride;
        UNROLL
        for (size_t bb = 0; bb < BB; bb++) {
            __m256i lo_a, hi_a, lo_b, hi_b;
            codes(fmt, nibbles_of(fmt, ra, b0 + bb), &lo_a, &hi_a);
            codes(fmt, nibbles_of(fmt, rb, b0 + bb), &lo_b, &hi_b);
            const __m256i p0 = _mm256_unpacklo_epi16(lo_a, lo_b), p1 = _mm256_unpackhi_epi16(lo_a, lo_b);
            const __m256i p2 = _mm256_unpacklo_epi16(hi_a, hi_b), p3 = _mm256_unpackhi_epi16(hi_a, hi_b);
            UNROLL
            for (size_t g = 0; g < GB; g++) {
                const __m256i w = weight_pair(wq + g * ldw + r * nb + b0 + bb, nb);
                __m256i *s = a + 4 * (g * BB + bb);
                s[0] = _mm256_add_epi32(s[0], _mm256_madd_epi16(p0, w));
                s[1] = _mm256_add_epi32(s[1], _mm256_madd_epi16(p1, w));
                s[2] = _mm256_add_epi32(s[2], _mm256_madd_epi16(p2, w));
                s[3] = _mm256_add_epi32(s[3], _mm256_madd_epi16(p3, w));
            }
        }
    }
    if (r < n_rows) /* an odd row: paired with a weight of 0 (itself again, so nothing past the rows is read) */
        UNROLL
        for (size_t bb = 0; bb < BB; bb++) {
            __m256i lo, hi;
            codes(fmt, nibbles_of(fmt, rows + r * stride, b0 + bb), &lo, &hi);
            const __m256i p0 = _mm256_unpacklo_epi16(lo, lo), p1 = _mm256_unpackhi_epi16(lo, lo);
            const __m256i p2 = _mm256_unpacklo_epi16(hi, hi), p3 = _mm256_unpackhi_epi16(hi, hi);
            UNROLL
            for (size_t g = 0; g < GB; g++) {
                const __m256i w = _mm256_set1_epi32((int32_t)(uint16_t)wq[g * ldw + r * nb + b0 + bb]);
                __m256i *s = a + 4 * (g * BB + bb);
                s[0] = _mm256_add_epi32(s[0], _mm256_madd_epi16(p0, w));
                s[1] = _mm256_add_epi32(s[1], _mm256_madd_epi16(p1, w));
                s[2] = _mm256_add_epi32(s[2], _mm256_madd_epi16(p2, w));
                s[3] = _mm256_add_epi32(s[3], _mm256_madd_epi16(p3, w));
            }
        }
    UNROLL
    for (size_t g = 0; g < GB; g++)
        UNROLL
        for (size_t bb = 0; bb < BB; bb++)
            store_block(fmt, acc + g * n + (b0 + bb) * QK, a + 4 * (g * BB + bb));
}

/* The sum of a head's weights for each of its rows' nb blocks, into sum[]:
 * 8 weights a step in 32-bit lanes, lane l holding block l % nb's when nb
 * divides 8; one at a time otherwise. */
static void weight_sums(int32_t *sum, const int16_t *w, size_t n_rows, size_t nb)
{
    const size_t count = n_rows * nb;
    size_t i = 0;
    memset(sum, 0, nb * sizeof *sum);
    if (8 % nb == 0) {
        __m256i s = _mm256_setzero_si256();
        for (; i + 8 <= count; i += 8)
            s = _mm256_add_epi32(s, _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(w + i))));
        int32_t lane[8];
        _mm256_storeu_si256((__m256i *)(void *)lane, s);
        for (size_t l = 0; l < 8; l++)
            sum[l % nb] += lane[l];
    }
    for (; i < count; i++)
        sum[i % nb] += w[i];
}

/* acc[g * n + i] -= offset * (the rows' weights of i's block): the codes'
 * offset taken off. */
static void take_offset(int32_t *acc, const int16_t *wq, size_t ldw, int offset, size_t n_rows, size_t G, size_t n)
{
    const size_t nb = n / QK;
    int32_t sum[64];
    for (size_t b0 = 0; b0 < nb; b0 += 64) /* rows of up to 2048 values in one part */
        for (size_t g = 0; g < G; g++) {
            const size_t m = nb - b0 < 64 ? nb - b0 : 64;
            if (m == nb)
                weight_sums(sum, wq + g * ldw, n_rows, nb);
            else
                for (size_t b = 0; b < m; b++) {
                    sum[b] = 0;
                    for (size_t r = 0; r < n_rows; r++)
                        sum[b] += wq[g * ldw + r * nb + b0 + b];
                }
            for (size_t b = 0; b < m; b++)
                for (size_t j = 0; j < QK; j++)
                    acc[g * n + (b0 + b) * QK + j] -= offset * sum[b];
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
    take_offset(acc, wq, ldw, code_offset(fmt), n_rows, G, n);
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
