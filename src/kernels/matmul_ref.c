#include "kernels/kernels.h"
#include "kernels/lanes16.h"

/* W is row-major [out][in]: each output is one dot product with a W row, and
 * the outer loop over W rows streams the weights once whatever n is. Each
 * dot sums in lanes16.h's order (lanes16_dot), the order of the SIMD
 * matmuls, so every table gives the same bits. */
void matmul_ref(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                Counters *ctr)
{
    for (size_t o = 0; o < out; o++) {
        const float *w_row = w + o * in;
        for (size_t r = 0; r < n; r++)
            y[r * out + o] = lanes16_dot(w_row, x + r * in, in);
    }
    if (flops)
        *flops += 2 * (uint64_t)n * out * in;
    if (ctr)
        ctr->weight_bytes_read += (uint64_t)out * in * sizeof(float);
}
