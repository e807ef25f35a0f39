#include <math.h>

#include "kernels/kernels.h"

float exp_sum_ref(float *x, size_t n, float max)
{
    float sum = 0.0f;
    for (size_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    return sum;
}
