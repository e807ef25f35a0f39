/* gemm_ref.c: the training's matrix products, plainly (kernels.h, GemmFn):
 * the specification the SIMD versions are tested against. */
#include "kernels/kernels.h"

/* y[n][m] = a[n][k] . b[m][k]^T: each element one dot product. */
void gemm_nt_ref(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++) {
            const float *ar = a + i * lda, *br = b + j * ldb;
            float acc = 0.0f;
            for (size_t p = 0; p < k; p++)
                acc += ar[p] * br[p];
            y[i * ldy + j] = acc;
        }
}

/* y[n][m] += a[n][k] . b[k][m]: row i of y gains a[i][p] times row p of b. */
void gemm_nn_ref(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m)
{
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < k; p++) {
            const float s = a[i * lda + p], *br = b + p * ldb;
            float *yr = y + i * ldy;
            for (size_t j = 0; j < m; j++)
                yr[j] += s * br[j];
        }
}

/* y[n][m] += a[k][n]^T . b[k][m]: row i of y gains a[p][i] times row p of b. */
void gemm_tn_ref(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m)
{
    for (size_t p = 0; p < k; p++)
        for (size_t i = 0; i < n; i++) {
            const float s = a[p * lda + i], *br = b + p * ldb;
            float *yr = y + i * ldy;
            for (size_t j = 0; j < m; j++)
                yr[j] += s * br[j];
        }
}
