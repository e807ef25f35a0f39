/* iaxpy_codes_avx2.h: the codes of iaxpy_avx2.c's 4-bit value rows as its
 * passes take them (unsigned, in 16-bit lanes), the order its registers
 * keep a block's sums in, and the multiply-add of a row pair. Included by
 * that file alone, in both its builds (AVX2; AVX-512 with VNNI), after
 * its QK and INLINE. */
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

/* The chunk's 16-bit weights lie in pairs (round_weights): rows 2p and
 * 2p + 1's weights of block b side by side at wq[2p * WPR + 2b], the
 * second 0 where row 2p is the chunk's last. One such pair, in every
 * 32-bit lane. */
INLINE __m256i weight_pair(const int16_t *w)
{
    int32_t pair;
    memcpy(&pair, w, sizeof pair);
    return _mm256_set1_epi32(pair);
}

/* s[k] += the pairs p[k] times the weight pair w, k < 4. */
INLINE void add_pairs(__m256i s[4], const __m256i p[4], __m256i w)
{
    CODEC_UNROLL
    for (size_t k = 0; k < 4; k++)
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
        s[k] = _mm256_dpwssd_epi32(s[k], p[k], w);
#else
        s[k] = _mm256_add_epi32(s[k], _mm256_madd_epi16(p[k], w));
#endif
}
