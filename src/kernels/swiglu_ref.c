#include <math.h>

#include "kernels/kernels.h"

void swiglu_ref(float *out, const float *gate, const float *up, size_t n, Counters *ctr)
{
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
    if (ctr)
        ctr->flops_ffn += 5 * (uint64_t)n; /* exp, add, divide, two multiplies */
}
