#include <math.h>

#include "kernels/kernels.h"
#include "kernels/lanes16.h"

/* The sum of squares in 16 lanes, one fused multiply-add a term, then the
 * lanes' tree (lanes16.h): the order of every ISA's rmsnorm, so the same
 * bits on each. */
void rmsnorm_ref(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr)
{
    for (size_t r = 0; r < n; r++) {
        const float *xr = x + r * d;
        float *yr = out + r * d;
        float lane[LANES] = { 0 };
        for (size_t i = 0; i < d; i++)
            lane[i % LANES] = fmaf(xr[i], xr[i], lane[i % LANES]);
        const float inv_rms = 1.0f / sqrtf(lanes16_reduce(lane) / (float)d + eps);
        for (size_t i = 0; i < d; i++)
            yr[i] = xr[i] * inv_rms * w[i];
    }
    if (ctr) {
        ctr->flops_other += 4 * (uint64_t)n * d; /* square-add, scale, weight */
        ctr->weight_bytes_read += d * sizeof(float);
    }
}
