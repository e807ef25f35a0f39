#include "kernels/kernels.h"

/* W is row-major [out][in]: each output is one dot product with a W row, and
 * the outer loop over W rows streams the weights once whatever n is. */
void matmul_ref(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                Counters *ctr)
{
    for (size_t o = 0; o < out; o++) {
        const float *w_row = w + o * in;
        for (size_t r = 0; r < n; r++) {
            const float *x_row = x + r * in;
            float acc = 0.0f;
            for (size_t i = 0; i < in; i++)
                acc += w_row[i] * x_row[i];
            y[r * out + o] = acc;
        }
    }
    if (flops)
        *flops += 2 * (uint64_t)n * out * in;
    if (ctr)
        ctr->weight_bytes_read += (uint64_t)out * in * sizeof(float);
}
