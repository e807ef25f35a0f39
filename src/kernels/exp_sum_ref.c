#include "kernels/kernels.h"
#include "kernels/lanes16.h"

/* exp as the SIMD kernels compute it, summed in their 16 lanes and tree
 * (lanes16.h): the same bits on every ISA. */
float exp_sum_ref(float *x, size_t n, float max)
{
    float lane[LANES] = { 0 };
    for (size_t i = 0; i < n; i++) {
        x[i] = exp_lanes(x[i] - max);
        lane[i % LANES] += x[i];
    }
    return lanes16_reduce(lane);
}
