#include <math.h>

#include "kernels/kernels.h"

void rmsnorm_ref(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr)
{
    for (size_t r = 0; r < n; r++) {
        const float *xr = x + r * d;
        float *yr = out + r * d;
        float ss = 0.0f;
        for (size_t i = 0; i < d; i++)
            ss += xr[i] * xr[i];
        float inv_rms = 1.0f / sqrtf(ss / (float)d + eps);
        for (size_t i = 0; i < d; i++)
            yr[i] = xr[i] * inv_rms * w[i];
    }
    if (ctr) {
        ctr->flops_other += 4 * (uint64_t)n * d; /* square-add, scale, weight */
        ctr->weight_bytes_read += d * sizeof(float);
    }
}
