/* iaxpy_pass512.h: iaxpy_avx2.c's pass (a block of the rows added for GB
 * heads), its rounding of the weights and q4_0's reading of scales in
 * 512-bit registers, for its VNNI build alone (included by it where
 * AVX-512 BW and VNNI are on; it uses that file's helpers).
 *
 * A row pair's block goes in one vector: the pair's 16 bytes each are
 * interleaved byte by byte (a0 b0 a1 b1 ...) and widened to words, so
 * that the low nibbles of word pair j are code j of each row, the high
 * nibbles code j + 16 (q4_0) or 2j and 2j + 1 (int4, fp4) likewise. One
 * vpdpwssd then multiplies a head's two weights with both and adds them
 * into its 16 sums: two a head and block, where 256 bits take four, and
 * the pair is unpacked in five operations for all the heads.
 *
 * The sums are the integers the 256-bit pass makes. */

/* The pair's codes of block b: lo[j] = (a_j, b_j) of the low nibbles, hi
 * of the high ones, unsigned as codes() makes them. */
INLINE void codes_pair(Format fmt, const unsigned char *ra, const unsigned char *rb, size_t b, __m512i *lo,
                       __m512i *hi)
{
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)nibbles_of(fmt, ra, b));
    const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)nibbles_of(fmt, rb, b));
    const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(a, c)),
                                               _mm_unpackhi_epi8(a, c), 1);
    __m512i x = _mm512_cvtepu8_epi16(ab);
    if (fmt == FMT_INT4) /* the sign bit of both nibbles flipped: the value + 8 */
        x = _mm512_xor_si512(x, _mm512_set1_epi16(0x88));
    if (fmt == FMT_FP4) /* complemented, so that lanes' zero high bytes look up 0 */
        x = _mm512_xor_si512(x, _mm512_set1_epi16(0xff));
    *lo = _mm512_and_si512(x, _mm512_set1_epi16(0x0f));
    *hi = _mm512_srli_epi16(x, 4);
    if (fmt == FMT_FP4) { /* complemented nibble -> doubled E2M1 value + 12, codes()'s table */
        const __m512i t = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 6, 8, 9, 10, 11, 12, 24, 20, 18, 16, 15, 14, 13, 12));
        *lo = _mm512_shuffle_epi8(t, *lo);
        *hi = _mm512_shuffle_epi8(t, *hi);
    }
}

/* The dword indexes that split a block's 32 sums into evens and odds. */
INLINE __m512i evens_index(void)
{
    return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}

/* acc's 32 sums of a block into the pass's order: v[0] the values of the
 * low nibbles, v[1] the high: q4_0's first and second halves, int4's and
 * fp4's evens and odds. */
INLINE void load_block512(Format fmt, const int32_t *a, __m512i v[2])
{
    const __m512i n0 = _mm512_loadu_si512(a), n1 = _mm512_loadu_si512(a + 16);
    if (fmt == FMT_Q4_0) {
        v[0] = n0;
        v[1] = n1;
        return;
    }
    const __m512i ev = evens_index();
    v[0] = _mm512_permutex2var_epi32(n0, ev, n1);
    v[1] = _mm512_permutex2var_epi32(n0, _mm512_add_epi32(ev, _mm512_set1_epi32(1)), n1);
}

/* The inverse of load_block512. */
INLINE void store_block512(Format fmt, int32_t *a, const __m512i v[2])
{
    if (fmt == FMT_Q4_0) {
        _mm512_storeu_si512(a, v[0]);
        _mm512_storeu_si512(a + 16, v[1]);
        return;
    }
    /* value 2i from v[0] lane i, 2i + 1 from v[1] lane i */
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    _mm512_storeu_si512(a, _mm512_permutex2var_epi32(v[0], lo, v[1]));
    _mm512_storeu_si512(a + 16, _mm512_permutex2var_epi32(v[0], _mm512_add_epi32(lo, _mm512_set1_epi32(8)), v[1]));
}

/* The row pair (ra, rb) of block b added to GB heads' sums a[2g], a[2g + 1]
 * with their weight pairs. */
INLINE void add_pair512(Format fmt, const size_t GB, __m512i *a, const int16_t *wq, size_t ldw, size_t slot,
                        const unsigned char *ra, const unsigned char *rb, size_t b)
{
    __m512i lo, hi;
    codes_pair(fmt, ra, rb, b, &lo, &hi);
    CODEC_UNROLL
    for (size_t g = 0; g < GB; g++) {
        int32_t pair;
        memcpy(&pair, wq + g * ldw + slot, sizeof pair);
        const __m512i w = _mm512_set1_epi32(pair);
        a[2 * g] = _mm512_dpwssd_epi32(a[2 * g], lo, w);
        a[2 * g + 1] = _mm512_dpwssd_epi32(a[2 * g + 1], hi, w);
    }
}

/* pass() of iaxpy_avx2.c, one block (b0) at a time: BB blocks one after the
 * other, each over all the rows, its sums in registers meanwhile. The rows
 * that prefetch and the rows that do not are two loops: in one, with the
 * prefetch's test inside, GCC copied all 8 sums of four heads to other
 * registers and back every row pair (72 moves in iaxpy_q4_0_4, now 8;
 * one loop body in a function called with and without the bytes to
 * prefetch brought them back, 115):
 * --int-dot flash steps, cold, the one loop took q4_0 1.03x to 1.08x as
 * long at G = 4, 1.08x at G = 2, int4 and fp4 1.01x to 1.02x. */
INLINE void pass512(Format fmt, const size_t GB, const size_t BB, int32_t *acc, const int16_t *wq, size_t ldw,
                    const int32_t *off, const unsigned char *rows, size_t stride, size_t n_rows, size_t n, size_t b0,
                    const unsigned char *pf, size_t pf_bytes, const Unpack mode, __m256i *kept)
{
    (void)mode; /* four heads a pass: nothing kept for other heads (pass()'s Unpack) */
    (void)kept;
    const size_t wpr = iaxpy_weights_per_row(fmt, n), bw = wpr > 1; /* bw: the weights go by block */
    for (size_t b = b0; b < b0 + BB; b++) {
        __m512i a[2 * PASS_HEADS];
        CODEC_UNROLL
        for (size_t g = 0; g < GB; g++) {
            load_block512(fmt, acc + g * n + b * QK, a + 2 * g);
            const __m512i o = _mm512_set1_epi32(off[g * wpr + bw * b]);
            a[2 * g] = _mm512_sub_epi32(a[2 * g], o);
            a[2 * g + 1] = _mm512_sub_epi32(a[2 * g + 1], o);
        }
        size_t r = 0;
        if (b == b0 && pf_bytes)
            for (; r + 2 <= n_rows; r += 2) {
                const unsigned char *ra = rows + r * stride;
                for (size_t o = r * stride; o < (r + 2) * stride && o < pf_bytes; o += 64)
                    _mm_prefetch((const char *)pf + o, _MM_HINT_T0);
                add_pair512(fmt, GB, a, wq, ldw, r * wpr + 2 * bw * b, ra, ra + stride, b);
            }
        else
            for (; r + 2 <= n_rows; r += 2) {
                const unsigned char *ra = rows + r * stride;
                add_pair512(fmt, GB, a, wq, ldw, r * wpr + 2 * bw * b, ra, ra + stride, b);
            }
        if (r < n_rows) /* an odd row: paired with itself (nothing past the rows is read) and a weight of 0 */
            add_pair512(fmt, GB, a, wq, ldw, r * wpr + 2 * bw * b, rows + r * stride, rows + r * stride, b);
        CODEC_UNROLL
        for (size_t g = 0; g < GB; g++)
            store_block512(fmt, acc + g * n + b * QK, a + 2 * g);
    }
}

/* round_weights() 16 weights a vector, the same integers: lane l takes the
 * row and block whose weight pair_slot puts at l, its p and scale brought
 * there by permutes; the rows past a multiple of 16 / WPR one by one
 * (round_rest); off as round_weights() makes it. */
INLINE void round_weights512(const size_t WPR, int16_t *wq, int32_t *off, int offset, const float *p,
                             const float *d, float k, size_t m)
{
    if (k == 0.0f) { /* iaxpy_weight's rule, whatever the scales */
        memset(wq, 0, (m + 1) / 2 * 2 * WPR * sizeof *wq);
        memset(off, 0, WPR * sizeof *off);
        return;
    }
    const size_t rows = 16 / WPR; /* a vector's, even */
    int32_t row_of[16], scale_of[16];
    for (size_t l = 0; l < 16; l++) { /* pair_slot inverted */
        const size_t r = l / (2 * WPR) * 2 + l % 2, b = l % (2 * WPR) / 2;
        row_of[l] = (int32_t)r;
        scale_of[l] = (int32_t)(r * WPR + b);
    }
    const __m512i pi = _mm512_loadu_si512(row_of), di = _mm512_loadu_si512(scale_of);
    const __m512 kv = _mm512_set1_ps(k), lo = _mm512_set1_ps(-32767.0f), hi = _mm512_set1_ps(32767.0f);
    size_t r = 0;
    for (; r + rows <= m; r += rows) {
        const __m512 pv = _mm512_permutexvar_ps(pi, _mm512_maskz_loadu_ps((__mmask16)((1u << rows) - 1), p + r));
        const __m512 u = _mm512_mul_ps(pv, _mm512_permutexvar_ps(di, _mm512_loadu_ps(d + r * WPR)));
        const __m512i x = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(u, kv), lo), hi));
        _mm256_storeu_si256((__m256i *)(void *)(wq + r * WPR), _mm512_cvtsepi32_epi16(x));
    }
    round_rest(WPR, wq, p, d, k, r, m);
    weight_offsets(off, offset, wq, m, WPR);
}

/* scales_of_8() for 4 rows of q4_0's 128 values (72 bytes; the scales in
 * a row's first 64, words 0, 9, 18 and 27): each two rows' picked by one
 * permute, where scales_of_8 inserts them word by word. */
INLINE void scales_q4_0_128(float *d, __m256 *top, const unsigned char *rows, size_t stride)
{
    const __m512i pick = _mm512_zextsi128_si512(_mm_setr_epi16(0, 9, 18, 27, 32, 41, 50, 59)); /* b: a's, 32 + b's */
    __m128i two[2];
    for (size_t k = 0; k < 2; k++) {
        const unsigned char *a = rows + 2 * k * stride;
        two[k] = _mm512_castsi512_si128(_mm512_permutex2var_epi16(_mm512_loadu_si512(a), pick,
                                                                  _mm512_loadu_si512(a + stride)));
    }
    const __m512 x = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(two[0]), two[1], 1));
    _mm512_storeu_ps(d, x);
    const __m512 mag = _mm512_abs_ps(x);
    /* a NaN scale left out, as the reference leaves it */
    *top = _mm256_max_ps(_mm512_castps512_ps256(mag), *top);
    *top = _mm256_max_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(mag), 1)), *top);
}

/* read_scales(), q4_0's rows of 128 values 4 at a time (scales_q4_0_128). */
INLINE void read_scales512(const size_t WPR, float *d, __m256 *top, float *top_tail, Format fmt,
                           const unsigned char *chunk, size_t stride, size_t n, size_t r, size_t m)
{
    if (fmt == FMT_Q4_0 && WPR == 4)
        for (; r + 4 <= m; r += 4)
            scales_q4_0_128(d + r * WPR, top, chunk + r * stride, stride);
    read_scales(WPR, d, top, top_tail, fmt, chunk, stride, n, r, m);
}
