/* qdot_group_avx2.c: the integer dot of a GQA group's G > 1 query heads,
 * rounded to q8_0, with key rows of q8_0, q4_0, int4 or fp4 (QDotFn's
 * group form, qdot_avx2.c), AVX2: each row's blocks are loaded and
 * unpacked once for the group, then dotted with every head's, each head's
 * float sums in qdot_ref.c's order (chunk_fma), so the bits are the
 * reference's whatever G and the rows' count. */
#include "kernels/qdot_blocks_avx2.h"

/* Every row against the G heads: QDOT_LANES blocks of the row at a time,
 * unpacked once, then fused into each head's lanes. */
static inline __attribute__((always_inline)) void qdot_group(const Kind k, float *y, size_t ld,
                                                             const unsigned char *rows, size_t stride,
                                                             size_t n_rows, XBlocks x, size_t G, size_t n,
                                                             const RowsAhead *ahead)
{
    __m256 acc[ATTEND_MAX_GROUP];
    for (size_t r = 0; r < n_rows; r++) {
        rows_ahead_prefetch(ahead, r, 1);
        const unsigned char *w = rows + r * stride;
        for (size_t g = 0; g < G; g++)
            acc[g] = _mm256_setzero_ps();
        for (size_t b0 = 0; b0 < x.nb; b0 += QDOT_LANES) {
            const size_t cnt = x.nb - b0 < QDOT_LANES ? x.nb - b0 : QDOT_LANES;
            __m256i u[QDOT_LANES];
            chunk_codes(k, w, b0, cnt, u);
            const __m256 dw = chunk_dw(k, w, b0, cnt, n);
            for (size_t g = 0; g < G; g++)
                acc[g] = chunk_fma(k, u, dw, x, g, b0, cnt, acc[g]);
        }
        for (size_t g = 0; g < G; g++)
            y[g * ld + r] = lanes_sum(acc[g]);
    }
}

void qdot_group_avx2(Kind k, float *y, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows,
                     XBlocks x, size_t G, size_t n, const RowsAhead *ahead)
{
    if (G > ATTEND_MAX_GROUP) { /* no caller has more heads to a group */
        for (size_t g = 0; g < G; g += ATTEND_MAX_GROUP) {
            XBlocks part = x;
            part.codes += g * x.nb * x.step;
            part.dx += g * x.nb8;
            part.off += g * x.nb8;
            const size_t m = G - g < ATTEND_MAX_GROUP ? G - g : ATTEND_MAX_GROUP;
            qdot_group_avx2(k, y + g * ld, ld, rows, stride, n_rows, part, m, n, ahead);
        }
        return;
    }
    switch (k) { /* a constant Kind in each call: one specialisation each */
    case K_Q8_0: qdot_group(K_Q8_0, y, ld, rows, stride, n_rows, x, G, n, ahead); break;
    case K_Q4_0: qdot_group(K_Q4_0, y, ld, rows, stride, n_rows, x, G, n, ahead); break;
    case K_INT4: qdot_group(K_INT4, y, ld, rows, stride, n_rows, x, G, n, ahead); break;
    case K_FP4: qdot_group(K_FP4, y, ld, rows, stride, n_rows, x, G, n, ahead); break;
    }
}
