/* qdot_ref.c: the integer dot of q8_0 and q4_0 rows with a q8_0 activation
 * (kernels.h, QDotFn): the specification the SIMD versions are held to. */
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

#define QK 32 /* values per q8_0 and q4_0 block */

static float scale_of(const unsigned char *block)
{
    unsigned short h;
    memcpy(&h, block, sizeof h);
    return fp16_to_f32(h);
}

/* The codes of a stored block as 32 signed integers. */
static void codes_of(Format fmt, const unsigned char *block, int *out)
{
    const unsigned char *qs = block + 2;
    if (fmt == FMT_Q8_0) {
        for (int j = 0; j < QK; j++)
            out[j] = (int8_t)qs[j];
        return;
    }
    for (int j = 0; j < QK / 2; j++) { /* byte j: element j low, element j + 16 high */
        out[j] = (qs[j] & 0x0F) - 8;
        out[j + QK / 2] = (qs[j] >> 4) - 8;
    }
}

void qdot_ref(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
              size_t G, size_t n)
{
    const size_t nb = n / QK, wb = format_block_bytes(fmt), xb = format_block_bytes(FMT_Q8_0);
    for (size_t g = 0; g < G; g++)
        for (size_t r = 0; r < n_rows; r++) {
            const unsigned char *w = (const unsigned char *)rows + r * stride;
            const unsigned char *x = (const unsigned char *)xq + g * nb * xb;
            float sum = 0.0f;
            for (size_t b = 0; b < nb; b++, w += wb, x += xb) {
                int wc[QK];
                codes_of(fmt, w, wc);
                int32_t isum = 0;
                for (int j = 0; j < QK; j++)
                    isum += wc[j] * (int8_t)x[2 + j];
                sum += scale_of(w) * scale_of(x) * (float)isum;
            }
            y[g * ld + r] = sum;
        }
}
