/* qdot_avx2.c: the integer dot of q8_0, q4_0, int4 and fp4 rows with a q8_0
 * activation (kernels.h, QDotFn) on AVX2, as llama.cpp computes it.
 *
 * A block is 32 codes times 32 codes of x. maddubs multiplies unsigned by
 * signed bytes and sums them in pairs, so q8_0's signed code w moves its
 * sign onto x: |w| * (x * sign(w)). The 4-bit formats are made unsigned by
 * an offset instead: u = w + 8 (q4_0's nibble as it stands, int4's with
 * its sign bit flipped), u = w + 12 for fp4 (its E2M1 values doubled, the
 * integers -12 .. 12, looked up by a byte shuffle), and the offset times x
 * is taken off again (offset_sums, once a block of x). The pairs are
 * summed to 8 int32 lanes, exactly, turned to floats and scaled into the
 * row's accumulators: by the block's scale times x's (q8_0, q4_0), or by
 * x's alone with the row's scale applied once at the end (int4, fp4).
 *
 * A matrix's rows are read once, four side by side from four parts of it
 * (qdot_rows): a decode step is bound by how fast the memory delivers them
 * and this turns bytes into sums. A group of G > 1 vectors (GQA heads
 * scoring keys) decodes each block once for all of them
 * (qdot_group_avx2.c).
 * Where four results meet (four rows of a 4-bit format against one x, or
 * one row against four heads), their products are summed into one
 * register (sums4, heads4_sums), so that summing the pairs, converting
 * and scaling are done once for the four. */
#include "kernels/qdot_blocks_avx2.h"

/* Long rows, a weight matrix's (QDOT_LONG_VALUES values or more), fetch
 * their own bytes QDOT_LONG_AHEAD on in each of the four streams as their
 * blocks are read, about a line a step. A one-token matvec, cold (262144
 * rows of 2048 values; 95325 of 5632 for q8_0), alternating with the
 * former build on an AVX-512 Xeon's AVX2 code (15 to 21 calls, medians):
 * the former, which prefetched q8_0 rows 4 KiB on a whole row at a time
 * (as for keys, below) and q4_0 rows not at all, took q8_0 1.16x and
 * 1.26x as long as with no prefetch, and no prefetch took q8_0 1.17x,
 * q4_0 1.18x as long as this; 1536 and 2048 bytes on within the noise of
 * 1024, 512 0.95x and 0.96x. */
#define QDOT_LONG_VALUES 512
#define QDOT_LONG_AHEAD 1024

static inline __attribute__((always_inline)) void prefetch4(const Kind k, const unsigned char *const w[4], size_t b)
{
    CODEC_UNROLL
    for (size_t j = 0; j < 4; j++)
        _mm_prefetch((const char *)block_at(k, w[j], b) + QDOT_LONG_AHEAD, _MM_HINT_T0);
}

/* q8_0's four rows against x side by side: each block of x loaded once
 * (the 4-bit formats: rows4_offset_dot). */
static inline __attribute__((always_inline)) void rows4_dot(const Kind k, const int pf, float *const y[4],
                                                            const unsigned char *const w[4], XBlocks x, size_t nb,
                                                            size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const __m256i e = _mm256_setzero_si256(); /* q8_0 codes carry no offset */
    for (size_t b = 0; b < nb; b++) {
        const __m256i xv = load32(x.codes + b * x.step);
        const __m256 d = _mm256_set1_ps(x.dx[b]);
        const unsigned char *b0 = block_at(k, w[0], b), *b1 = block_at(k, w[1], b);
        const unsigned char *b2 = block_at(k, w[2], b), *b3 = block_at(k, w[3], b);
        if (pf)
            prefetch4(k, w, b);
        a0 = _mm256_fmadd_ps(block_scale(k, b0, d), _mm256_cvtepi32_ps(block_sums(k, b0, xv, e)), a0);
        a1 = _mm256_fmadd_ps(block_scale(k, b1, d), _mm256_cvtepi32_ps(block_sums(k, b1, xv, e)), a1);
        a2 = _mm256_fmadd_ps(block_scale(k, b2, d), _mm256_cvtepi32_ps(block_sums(k, b2, xv, e)), a2);
        a3 = _mm256_fmadd_ps(block_scale(k, b3, d), _mm256_cvtepi32_ps(block_sums(k, b3, xv, e)), a3);
    }
    *y[0] = row_scale(k, w[0], n) * hsum(a0);
    *y[1] = row_scale(k, w[1], n) * hsum(a1);
    *y[2] = row_scale(k, w[2], n) * hsum(a2);
    *y[3] = row_scale(k, w[3], n) * hsum(a3);
}

/* q4_0's block b of four rows' scales, in sums4's lanes. */
static inline __m256 scales4(const unsigned char *const w[4], size_t b)
{
    const size_t at = b * sizeof(BlockQ4_0);
    __m128i h = _mm_cvtsi32_si128(half_bits(w[0] + at));
    h = _mm_insert_epi16(h, half_bits(w[1] + at), 1);
    h = _mm_insert_epi16(h, half_bits(w[2] + at), 2);
    h = _mm_insert_epi16(h, half_bits(w[3] + at), 3);
    const __m128 f = _mm_cvtph_ps(h);
    return _mm256_set_m128(f, f);
}

/* rows4_dot for the 4-bit formats: the four rows' maddubs results, less
 * the offset's, summed by sums4 (the differences' products are at most
 * 12 * 128 in magnitude), so conversion and scaling are done once for
 * the four. */
static inline __attribute__((always_inline)) void rows4_offset_dot(const Kind k, const int pf, float *const y[4],
                                                                   const unsigned char *const w[4], XBlocks x,
                                                                   size_t nb, size_t n)
{
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        const __m256i xv = load32(x.codes + b * x.step);
        const __m256i mo = _mm256_maddubs_epi16(_mm256_set1_epi8((char)offset_of(k)), xv);
        if (pf && b % 2 == 0) /* two blocks of 16 bytes a line */
            prefetch4(k, w, b);
        __m256i m[4];
        CODEC_UNROLL
        for (size_t j = 0; j < 4; j++)
            m[j] = _mm256_sub_epi16(_mm256_maddubs_epi16(offset_codes_of(k, block_at(k, w[j], b)), xv), mo);
        __m256 d = _mm256_set1_ps(x.dx[b]);
        if (k == K_Q4_0)
            d = _mm256_mul_ps(d, scales4(w, b));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums4(m)), acc);
    }
    __m128 sum = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    if (k != K_Q4_0)
        sum = _mm_mul_ps(sum, _mm_setr_ps(row_scale(k, w[0], n), row_scale(k, w[1], n), row_scale(k, w[2], n),
                                          row_scale(k, w[3], n)));
    _mm_store_ss(y[0], sum);
    _mm_store_ss(y[1], _mm_shuffle_ps(sum, sum, 1));
    _mm_store_ss(y[2], _mm_shuffle_ps(sum, sum, 2));
    _mm_store_ss(y[3], _mm_shuffle_ps(sum, sum, 3));
}

/* Four rows' sums take the same steps in their own lanes: a row's result
 * does not depend on the other three. */
static inline __attribute__((always_inline)) void rows4(const Kind k, const int pf, float *const y[4],
                                                        const unsigned char *const w[4], XBlocks x, size_t nb,
                                                        size_t n)
{
    if (offset_codes(k))
        rows4_offset_dot(k, pf, y, w, x, nb, n);
    else
        rows4_dot(k, pf, y, w, x, nb, n);
}

/* q8_0's own rows prefetched this far ahead in each stream (30 rows of 128
 * values). One head's --int-dot flash steps, cold, 65536 rows, on an
 * AVX-512 Xeon (31 to 41 alternating with the former in one process,
 * medians of the ratios): the former took 1.01 to 1.06x as long (five
 * runs; a noisy spell, the steps' own times spread by 30%); 2 to 8 KiB
 * alike, 1 KiB no gain; for q4_0 and int4 rows none (0.95, 1.01). */
#define Q8_0_OWN_AHEAD 4096

/* Every row against one x: QDOT_STREAMS rows at a time, from that many
 * parts of the matrix; the rows left over one by one, each as the four
 * rows of rows4 (a loop for one row summed in another order, and a run cut
 * into calls, a paged cache's, scored otherwise than the whole run). The
 * rows of ahead (or none) are prefetched as they are read, in the same
 * streams; long rows (pf) fetch their own as they go (prefetch4), short
 * q8_0 rows Q8_0_OWN_AHEAD bytes on, a row at a time. */
static inline __attribute__((always_inline)) void qdot_rows(const Kind k, const int pf, float *y,
                                                            const unsigned char *rows, size_t stride, size_t n_rows,
                                                            XBlocks x, size_t nb, size_t n, const RowsAhead *ahead)
{
    const size_t span = n_rows / QDOT_STREAMS;
    for (size_t i = 0; i < span; i++) {
        for (size_t s = 0; s < QDOT_STREAMS; s++) {
            rows_ahead_prefetch(ahead, s * span + i, 1);
            if (k == K_Q8_0 && !pf) { /* every line the row touches */
                const char *own = (const char *)rows + (s * span + i) * stride + Q8_0_OWN_AHEAD;
                for (size_t o = 0; o < stride; o += 64)
                    _mm_prefetch(own + o, _MM_HINT_T0);
                _mm_prefetch(own + stride - 1, _MM_HINT_T0);
            }
        }
        float *const out[4] = { y + i, y + span + i, y + 2 * span + i, y + 3 * span + i };
        const unsigned char *const w[4] = { rows + i * stride, rows + (span + i) * stride,
                                            rows + (2 * span + i) * stride, rows + (3 * span + i) * stride };
        rows4(k, pf, out, w, x, nb, n);
    }
    rows_ahead_prefetch(ahead, QDOT_STREAMS * span, n_rows - QDOT_STREAMS * span);
    for (size_t r = QDOT_STREAMS * span; r < n_rows; r++) {
        float *const out[4] = { y + r, y + r, y + r, y + r };
        const unsigned char *const w[4] = { rows + r * stride, rows + r * stride, rows + r * stride,
                                            rows + r * stride };
        rows4(k, 0, out, w, x, nb, n);
    }
}

/* qdot_rows for long rows, or short ones with the rows ahead, or its own
 * loop without them: the test inside the rows' loop cost 6% to 9% of a
 * cold G = 1 call over keys (nothing against a long row). */
static inline __attribute__((always_inline)) void qdot_rows_or_ahead(const Kind k, float *y,
                                                                     const unsigned char *rows, size_t stride,
                                                                     size_t n_rows, XBlocks x, size_t nb, size_t n,
                                                                     const RowsAhead *ahead)
{
    if (n >= QDOT_LONG_VALUES)
        qdot_rows(k, 1, y, rows, stride, n_rows, x, nb, n, ahead);
    else if (ahead)
        qdot_rows(k, 0, y, rows, stride, n_rows, x, nb, n, ahead);
    else
        qdot_rows(k, 0, y, rows, stride, n_rows, x, nb, n, NULL);
}


void qdot_avx2(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
               size_t G, size_t n, const RowsAhead *ahead)
{
    const size_t nb = n / QK, xb = format_block_bytes(FMT_Q8_0);
    const int per_row = fmt == FMT_INT4 || fmt == FMT_FP4, offset = fmt != FMT_Q8_0;
    const int vectors = per_row || (offset && G > 1); /* x blocks kept as vectors */
    if (!qdot_takes(fmt) || G * nb > (vectors ? QDOT_VEC_BLOCKS : QDOT_MAX_BLOCKS)) {
        qdot_ref(y, ld, fmt, rows, stride, n_rows, xq, G, n, ahead);
        return;
    }
    const Kind k = fmt == FMT_Q8_0 ? K_Q8_0 : fmt == FMT_Q4_0 ? K_Q4_0 : fmt == FMT_INT4 ? K_INT4 : K_FP4;
    const unsigned char *x = xq, *w = rows;
    float dx[QDOT_MAX_BLOCKS];      /* [G][nb] */
    __m256i order[QDOT_VEC_BLOCKS]; /* int4, fp4: each block's codes, the even elements, then the odd */
    __m256i offs[QDOT_VEC_BLOCKS];  /* offset_sums of the heads after the last four (4-bit formats) */
    const size_t rest = G / 4 * 4 * nb; /* the first block of those heads; group4_rows finds its own */
    for (size_t b = 0; b < G * nb; b++) {
        dx[b] = half_at(x + b * xb);
        if (per_row)
            order[b] = even_then_odd(load32(x + b * xb + 2));
        if (offset && G > 1 && b >= rest)
            offs[b] = offset_sums(k, per_row ? order[b] : load32(x + b * xb + 2));
    }
    const XBlocks xs = per_row ? (XBlocks){ (const unsigned char *)order, sizeof order[0], dx }
                               : (XBlocks){ x + 2, xb, dx };
    if (G > 1) {
        qdot_group_avx2(k, y, ld, w, stride, n_rows, xs, offs, G, nb, n, ahead);
        return;
    }
    switch (k) { /* a constant Kind in each call: one specialisation each */
    case K_Q8_0: qdot_rows_or_ahead(K_Q8_0, y, w, stride, n_rows, xs, nb, n, ahead); break;
    case K_Q4_0: qdot_rows_or_ahead(K_Q4_0, y, w, stride, n_rows, xs, nb, n, ahead); break;
    case K_INT4: qdot_rows_or_ahead(K_INT4, y, w, stride, n_rows, xs, nb, n, ahead); break;
    case K_FP4: qdot_rows_or_ahead(K_FP4, y, w, stride, n_rows, xs, nb, n, ahead); break;
    }
}
