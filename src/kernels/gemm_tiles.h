/* gemm_tiles.h: the training's matrix products (kernels.h, GemmFn) as
 * register tiles, written once for the SIMD files that include it
 * (gemm_avx2.c, gemm_avx512.c, each built with its own flags) after
 * defining:
 *
 *   V, VW             a vector of VW floats
 *   VM                a lane mask (v_mask(left): lanes below left, 1..VW)
 *   v_zero, v_set1, v_load, v_store, v_load_m (masked lanes read as 0,
 *   never touched in memory), v_store_m, v_fma (a * b + c), v_add, v_hsum
 *   NT_R, NT_C        gemm_nt's tile: rows of a by rows of b, one
 *                     accumulator each (NT_R * NT_C <= 16)
 *   NN_R, NN_C        gemm_nn's and gemm_tn's tile: rows of y by vectors of
 *                     its columns (NN_R * NN_C <= 16, NN_C <= 4)
 *   GEMM_NAME(x)      the function's name for this ISA
 *
 * Every element is reached by the same operations whatever tile it falls
 * in (edge tiles are the same code with fewer rows or columns; a short
 * vector is masked, its lanes' arithmetic unchanged), which is what makes
 * a split of y bit-identical to the whole (kernels.h). */
#define GT_INLINE static inline __attribute__((always_inline))

/* --- gemm_nt: dots of rows of a with rows of b ---------------------------- */

/* y[r][c] = a row r . b row c for r < R, c < C: each chunk of k loaded once
 * for the whole tile; the k tail one masked step. */
GT_INLINE void nt_tile(const size_t R, const size_t C, float *y, size_t ldy, const float *a, size_t lda,
                       const float *b, size_t ldb, size_t k, size_t k_main, VM tail)
{
    V acc[NT_R][NT_C];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
        for (size_t c = 0; c < C; c++)
            acc[r][c] = v_zero();
    for (size_t p = 0; p < k_main; p += VW) {
        V av[NT_R];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
            av[r] = v_load(a + r * lda + p);
#pragma GCC unroll 8
        for (size_t c = 0; c < C; c++) {
            const V bv = v_load(b + c * ldb + p);
#pragma GCC unroll 8
            for (size_t r = 0; r < R; r++)
                acc[r][c] = v_fma(av[r], bv, acc[r][c]);
        }
    }
    if (k_main < k) {
        V av[NT_R];
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++)
            av[r] = v_load_m(a + r * lda + k_main, tail);
#pragma GCC unroll 8
        for (size_t c = 0; c < C; c++) {
            const V bv = v_load_m(b + c * ldb + k_main, tail);
#pragma GCC unroll 8
            for (size_t r = 0; r < R; r++)
                acc[r][c] = v_fma(av[r], bv, acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
        for (size_t c = 0; c < C; c++)
            y[r * ldy + c] = v_hsum(acc[r][c]);
}

/* Tiles of NT_C rows of b (kept in L1) against every NT_R rows of a. */
void GEMM_NAME(gemm_nt)(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n,
                        size_t k, size_t m)
{
    const size_t k_main = k / VW * VW;
    const VM tail = v_mask(k - k_main ? k - k_main : VW);
    size_t j = 0;
    for (; j + NT_C <= m; j += NT_C) {
        size_t i = 0;
        for (; i + NT_R <= n; i += NT_R)
            nt_tile(NT_R, NT_C, y + i * ldy + j, ldy, a + i * lda, lda, b + j * ldb, ldb, k, k_main, tail);
        for (; i < n; i++)
            nt_tile(1, NT_C, y + i * ldy + j, ldy, a + i * lda, lda, b + j * ldb, ldb, k, k_main, tail);
    }
    for (; j < m; j++) {
        size_t i = 0;
        for (; i + NT_R <= n; i += NT_R)
            nt_tile(NT_R, 1, y + i * ldy + j, ldy, a + i * lda, lda, b + j * ldb, ldb, k, k_main, tail);
        for (; i < n; i++)
            nt_tile(1, 1, y + i * ldy + j, ldy, a + i * lda, lda, b + j * ldb, ldb, k, k_main, tail);
    }
}

/* --- gemm_nn, gemm_tn: rows of b scaled and added ------------------------- */

/* y[r][c * VW ..] += sum over p of a(r, p) * b[p][c * VW ..] for r < R and
 * C vectors of columns, the last masked by `last` when `masked`; a(r, p) =
 * a[r * ai + p * ap] (gemm_nn: ai = lda, ap = 1; gemm_tn: ai = 1, ap = lda). */
GT_INLINE void nn_tile(const size_t R, const size_t C, const int masked, float *y, size_t ldy, const float *a,
                       size_t ai, size_t ap, const float *b, size_t ldb, size_t k, VM last)
{
    V acc[NN_R][NN_C];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
        for (size_t c = 0; c < C; c++)
            acc[r][c] = v_zero();
    for (size_t p = 0; p < k; p++) {
        const float *bp = b + p * ldb;
        V bv[NN_C];
#pragma GCC unroll 8
        for (size_t c = 0; c < C; c++)
            bv[c] = masked && c == C - 1 ? v_load_m(bp + c * VW, last) : v_load(bp + c * VW);
#pragma GCC unroll 8
        for (size_t r = 0; r < R; r++) {
            const V s = v_set1(a[r * ai + p * ap]);
#pragma GCC unroll 8
            for (size_t c = 0; c < C; c++)
                acc[r][c] = v_fma(s, bv[c], acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; r++)
#pragma GCC unroll 8
        for (size_t c = 0; c < C; c++) {
            float *yp = y + r * ldy + c * VW;
            if (masked && c == C - 1)
                v_store_m(yp, v_add(v_load_m(yp, last), acc[r][c]), last);
            else
                v_store(yp, v_add(v_load(yp), acc[r][c]));
        }
}

/* Strips of NN_C vectors of columns (their k rows of b reused by every
 * NN_R rows of y), then one strip of the vectors left, the last masked. */
GT_INLINE void nn_strip(const size_t C, const int masked, float *y, size_t ldy, const float *a, size_t ai, size_t ap,
                        const float *b, size_t ldb, size_t n, size_t k, VM last)
{
    size_t i = 0;
    for (; i + NN_R <= n; i += NN_R)
        nn_tile(NN_R, C, masked, y + i * ldy, ldy, a + i * ai, ai, ap, b, ldb, k, last);
    for (; i < n; i++)
        nn_tile(1, C, masked, y + i * ldy, ldy, a + i * ai, ai, ap, b, ldb, k, last);
}

GT_INLINE void nn_all(float *y, size_t ldy, const float *a, size_t ai, size_t ap, const float *b, size_t ldb,
                      size_t n, size_t k, size_t m)
{
    size_t j = 0;
    for (; j + NN_C * VW <= m; j += NN_C * VW)
        nn_strip(NN_C, 0, y + j, ldy, a, ai, ap, b + j, ldb, n, k, v_mask(VW));
    if (j == m)
        return;
    const size_t left = m - j, vecs = (left + VW - 1) / VW;
    const VM last = v_mask(left - (vecs - 1) * VW);
    switch (vecs) { /* constants, so each strip's accumulators stay in registers */
    case 1:
        nn_strip(1, 1, y + j, ldy, a, ai, ap, b + j, ldb, n, k, last);
        break;
    case 2:
        nn_strip(2, 1, y + j, ldy, a, ai, ap, b + j, ldb, n, k, last);
        break;
#if NN_C > 2
    case 3:
        nn_strip(3, 1, y + j, ldy, a, ai, ap, b + j, ldb, n, k, last);
        break;
#endif
#if NN_C > 3
    case 4:
        nn_strip(4, 1, y + j, ldy, a, ai, ap, b + j, ldb, n, k, last);
        break;
#endif
    default: /* vecs < NN_C: not reached */
        break;
    }
}

void GEMM_NAME(gemm_nn)(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n,
                        size_t k, size_t m)
{
    nn_all(y, ldy, a, lda, 1, b, ldb, n, k, m);
}

void GEMM_NAME(gemm_tn)(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n,
                        size_t k, size_t m)
{
    nn_all(y, ldy, a, 1, lda, b, ldb, n, k, m);
}
