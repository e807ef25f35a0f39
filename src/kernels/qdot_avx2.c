/* qdot_avx2.c: the integer dot of q8_0, q4_0, int4 and fp4 rows with a q8_0
 * activation (kernels.h, QDotFn) on AVX2, as llama.cpp computes it, its
 * float sums in qdot_ref.c's order, so the bits are the reference's.
 *
 * A block is 32 codes times 32 codes of x. maddubs multiplies unsigned by
 * signed bytes and sums them in pairs, so q8_0's signed code w moves its
 * sign onto x: |w| * (x * sign(w)). The 4-bit formats are made unsigned by
 * an offset instead: u = w + 8 (q4_0's nibble as it stands, int4's with
 * its sign bit flipped), u = w + 12 for fp4 (its E2M1 values doubled, the
 * integers -12 .. 12, looked up by a byte shuffle), and the offset times x
 * is taken off again (XBlocks.off, once a block of x). Eight blocks at a
 * time, each block's pairs are summed to one exact int32 (sums8: lane i
 * block i), turned to floats, and fused with the eight scales d_w * d_x
 * into the row's 8 lanes; the lanes are added pairwise at the end.
 *
 * A matrix's rows are read once, four side by side from four parts of it
 * (qdot_rows): a decode step is bound by how fast the memory delivers them
 * and this turns bytes into sums. A group of G > 1 vectors (GQA heads
 * scoring keys) decodes each block once for all of them
 * (qdot_group_avx2.c). */
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

/* A chunk's bytes of a row prefetched QDOT_LONG_AHEAD on (long rows). */
static inline void prefetch_chunk(const Kind k, const unsigned char *row, size_t b0, size_t cnt)
{
    const char *p = (const char *)block_at(k, row, b0) + QDOT_LONG_AHEAD;
    const size_t bytes = (size_t)(block_at(k, row, b0 + cnt) - block_at(k, row, b0));
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch(p + o, _MM_HINT_T0);
}

/* Four rows against x side by side, QDOT_LANES blocks of each in turn: a
 * row's sums do not depend on the other three (each has its own lanes). */
static inline __attribute__((always_inline)) void rows4(const Kind k, const int pf, float *const y[4],
                                                        const unsigned char *const w[4], XBlocks x, size_t n)
{
    __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (size_t b0 = 0; b0 < x.nb; b0 += QDOT_LANES) {
        const size_t cnt = x.nb - b0 < QDOT_LANES ? x.nb - b0 : QDOT_LANES;
        CODEC_UNROLL
        for (size_t j = 0; j < 4; j++) {
            if (pf)
                prefetch_chunk(k, w[j], b0, cnt);
            __m256i u[QDOT_LANES];
            chunk_codes(k, w[j], b0, cnt, u);
            acc[j] = chunk_fma(k, u, chunk_dw(k, w[j], b0, cnt, n), x, 0, b0, cnt, acc[j]);
        }
    }
    CODEC_UNROLL
    for (size_t j = 0; j < 4; j++)
        *y[j] = lanes_sum(acc[j]);
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
 * streams; long rows (pf) fetch their own as they go (prefetch_chunk), short
 * q8_0 rows Q8_0_OWN_AHEAD bytes on, a row at a time. */
static inline __attribute__((always_inline)) void qdot_rows(const Kind k, const int pf, float *y,
                                                            const unsigned char *rows, size_t stride, size_t n_rows,
                                                            XBlocks x, size_t n, const RowsAhead *ahead)
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
        rows4(k, pf, out, w, x, n);
    }
    rows_ahead_prefetch(ahead, QDOT_STREAMS * span, n_rows - QDOT_STREAMS * span);
    for (size_t r = QDOT_STREAMS * span; r < n_rows; r++) {
        float *const out[4] = { y + r, y + r, y + r, y + r };
        const unsigned char *const w[4] = { rows + r * stride, rows + r * stride, rows + r * stride,
                                            rows + r * stride };
        rows4(k, 0, out, w, x, n);
    }
}

/* qdot_rows for long rows, or short ones with the rows ahead, or its own
 * loop without them: the test inside the rows' loop cost 6% to 9% of a
 * cold G = 1 call over keys (nothing against a long row). */
static inline __attribute__((always_inline)) void qdot_rows_or_ahead(const Kind k, float *y,
                                                                     const unsigned char *rows, size_t stride,
                                                                     size_t n_rows, XBlocks x, size_t n,
                                                                     const RowsAhead *ahead)
{
    if (n >= QDOT_LONG_VALUES)
        qdot_rows(k, 1, y, rows, stride, n_rows, x, n, ahead);
    else if (ahead)
        qdot_rows(k, 0, y, rows, stride, n_rows, x, n, ahead);
    else
        qdot_rows(k, 0, y, rows, stride, n_rows, x, n, NULL);
}


void qdot_avx2(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
               size_t G, size_t n, const RowsAhead *ahead)
{
    const size_t nb = n / QK, nb8 = (nb + QDOT_LANES - 1) / QDOT_LANES * QDOT_LANES;
    const size_t xb = format_block_bytes(FMT_Q8_0);
    const int per_row = fmt == FMT_INT4 || fmt == FMT_FP4;
    if (!qdot_takes(fmt) || G * nb8 > QDOT_MAX_BLOCKS || (per_row && G * nb > QDOT_VEC_BLOCKS)) {
        qdot_ref(y, ld, fmt, rows, stride, n_rows, xq, G, n, ahead);
        return;
    }
    const Kind k = fmt == FMT_Q8_0 ? K_Q8_0 : fmt == FMT_Q4_0 ? K_Q4_0 : fmt == FMT_INT4 ? K_INT4 : K_FP4;
    const unsigned char *x = xq, *w = rows;
    float dx[QDOT_MAX_BLOCKS];      /* [G][nb8], zero past nb */
    int32_t off[QDOT_MAX_BLOCKS];   /* [G][nb8]: offset_of(k) times each block's sum of codes (4-bit formats) */
    __m256i order[QDOT_VEC_BLOCKS]; /* int4, fp4: each block's codes, the even elements, then the odd */
    for (size_t g = 0; g < G; g++)
        for (size_t b = 0; b < nb8; b++) {
            const unsigned char *blk = x + (g * nb + b) * xb;
            int32_t sum = 0;
            if (b < nb)
                for (size_t j = 0; j < QK; j++)
                    sum += (int8_t)blk[2 + j];
            dx[g * nb8 + b] = b < nb ? half_at(blk) : 0.0f;
            off[g * nb8 + b] = k == K_Q8_0 ? 0 : offset_of(k) * sum;
            if (per_row && b < nb)
                order[g * nb + b] = even_then_odd(load32(blk + 2));
        }
    const XBlocks xs = per_row ? (XBlocks){ (const unsigned char *)order, sizeof order[0], dx, off, nb, nb8 }
                               : (XBlocks){ x + 2, xb, dx, off, nb, nb8 };
    if (G > 1) {
        qdot_group_avx2(k, y, ld, w, stride, n_rows, xs, G, n, ahead);
        return;
    }
    switch (k) { /* a constant Kind in each call: one specialisation each */
    case K_Q8_0: qdot_rows_or_ahead(K_Q8_0, y, w, stride, n_rows, xs, n, ahead); break;
    case K_Q4_0: qdot_rows_or_ahead(K_Q4_0, y, w, stride, n_rows, xs, n, ahead); break;
    case K_INT4: qdot_rows_or_ahead(K_INT4, y, w, stride, n_rows, xs, n, ahead); break;
    case K_FP4: qdot_rows_or_ahead(K_FP4, y, w, stride, n_rows, xs, n, ahead); break;
    }
}
