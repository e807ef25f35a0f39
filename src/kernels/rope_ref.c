#include <math.h>

#include "kernels/kernels_isa.h"

/* The angle is computed in double from the absolute position, so position
 * 5000 rotates as exactly as position 5: no accumulated drift. Each value
 * is written twice, once per element of its pair, for the SIMD versions. */
void rope_tables(float *cos2, float *sin2, size_t head_dim, size_t pos, double theta)
{
    for (size_t i = 0; i < head_dim; i += 2) {
        double angle = (double)pos * pow(theta, -(double)i / (double)head_dim);
        cos2[i] = cos2[i + 1] = (float)cos(angle);
        sin2[i] = sin2[i + 1] = (float)sin(angle);
    }
}

void rope_ref(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr)
{
    for (size_t h = 0; h < n_heads; h++) {
        float *v = vec + h * head_dim;
        for (size_t i = 0; i < head_dim; i += 2) {
            double freq = pow(theta, -(double)i / (double)head_dim);
            double angle = (double)pos * freq;
            float c = (float)cos(angle), s = (float)sin(angle);
            float a = v[i], b = v[i + 1];
            /* as fmaddsub rounds it (rope_avx2): a c fused with the
             * rounded b s, so every ISA gives the same bits */
            v[i] = fmaf(a, c, -(b * s));
            v[i + 1] = fmaf(b, c, a * s);
        }
    }
    if (ctr)
        ctr->flops_other += 3 * (uint64_t)n_heads * head_dim; /* 6 per pair */
}
