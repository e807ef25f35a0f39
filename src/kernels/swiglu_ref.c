#include "kernels/kernels.h"
#include "kernels/lanes16.h"

/* exp_lanes, the SIMD kernels' exp, so every ISA gives the same bits;
 * 0 - g as they negate (exp(+0), not exp(-0), at g = 0: the same 1). */
void swiglu_ref(float *out, const float *gate, const float *up, size_t n, Counters *ctr)
{
    for (size_t i = 0; i < n; i++) {
        const float g = gate[i];
        const float silu = g / (1.0f + exp_lanes(0.0f - g));
        out[i] = silu * up[i];
    }
    if (ctr)
        ctr->flops_ffn += 5 * (uint64_t)n; /* exp, add, divide, two multiplies */
}
