/* qdot_ref.c: the integer kernels on stored codes (kernels.h): the dot of
 * q8_0, q4_0, int4 and fp4 rows with a q8_0 activation (QDotFn), and the
 * sum of 4-bit value rows with integer weights (IAxpyFn). The
 * specification the SIMD versions are held to. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

#define QK 32 /* values per q8_0 and q4_0 block, and per block of an int4 or fp4 row's dot */

static float scale_of(const unsigned char *block)
{
    unsigned short h;
    memcpy(&h, block, sizeof h);
    return fp16_to_f32(h);
}

/* The E2M1 magnitudes doubled: fp4's codes as integers. */
static const int fp4_twice[8] = { 0, 1, 2, 3, 4, 6, 8, 12 };

/* Block b of a stored row as 32 signed integer codes, and its scale (int4,
 * fp4: the row's, after its n / 2 bytes of nibbles; fp4's halved, its
 * codes being the values doubled). */
static float codes_of(Format fmt, const unsigned char *row, size_t n, size_t b, int *out)
{
    if (fmt == FMT_INT4 || fmt == FMT_FP4) { /* byte k: element 2k low, element 2k + 1 high */
        const unsigned char *qs = row + b * (QK / 2);
        for (int j = 0; j < QK; j++) {
            const unsigned c = (qs[j / 2] >> (4 * (j % 2))) & 0x0Fu;
            out[j] = fmt == FMT_INT4 ? (int)(c ^ 8u) - 8 : (c & 8u ? -1 : 1) * fp4_twice[c & 7u];
        }
        return scale_of(row + n / 2) * (fmt == FMT_FP4 ? 0.5f : 1.0f);
    }
    const unsigned char *block = row + b * format_block_bytes(fmt), *qs = block + 2;
    if (fmt == FMT_Q8_0) {
        for (int j = 0; j < QK; j++)
            out[j] = (int8_t)qs[j];
        return scale_of(block);
    }
    for (int j = 0; j < QK / 2; j++) { /* byte j: element j low, element j + 16 high */
        out[j] = (qs[j] & 0x0F) - 8;
        out[j + QK / 2] = (qs[j] >> 4) - 8;
    }
    return scale_of(block);
}

/* The one order of the float sums every QDotFn follows, so that a result
 * is the same bits on every ISA: block b's exact integer sum, times
 * s_b = d_w(b) * d_x(b) (one rounding), is added by one fused
 * multiply-add into lane b % QDOT_LANES (each lane from +0, its blocks in
 * increasing b), and the lanes are added in adjacent pairs:
 * ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). fmaf, not a * b + c:
 * the SIMD kernels fuse, and this file is built without FMA, where a
 * compiler contracting (or not) would change the bits. */
static float lanes_sum(const float lane[QDOT_LANES])
{
    const float a = lane[0] + lane[1], b = lane[2] + lane[3];
    const float c = lane[4] + lane[5], d = lane[6] + lane[7];
    const float ab = a + b, cd = c + d;
    return ab + cd;
}

void qdot_ref(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
              size_t G, size_t n, const RowsAhead *ahead)
{
    (void)ahead; /* plain loops: nothing to overlap */
    const size_t nb = n / QK, xb = format_block_bytes(FMT_Q8_0);
    for (size_t g = 0; g < G; g++)
        for (size_t r = 0; r < n_rows; r++) {
            const unsigned char *w = (const unsigned char *)rows + r * stride;
            const unsigned char *x = (const unsigned char *)xq + g * nb * xb;
            float lane[QDOT_LANES] = { 0 };
            for (size_t b = 0; b < nb; b++, x += xb) {
                int wc[QK];
                const float dw = codes_of(fmt, w, n, b, wc);
                int32_t isum = 0;
                for (int j = 0; j < QK; j++)
                    isum += wc[j] * (int8_t)x[2 + j];
                const float s = dw * scale_of(x);
                lane[b % QDOT_LANES] = fmaf(s, (float)isum, lane[b % QDOT_LANES]);
            }
            y[g * ld + r] = lanes_sum(lane);
        }
}

void iaxpy_ref(int32_t *acc, float *dmax, const float *p, size_t ld, const float *to_int, Format fmt,
               const void *rows, size_t stride, size_t n_rows, size_t G, size_t n)
{
    const size_t nb = n / QK;
    for (size_t r = 0; r < n_rows; r++) {
        const unsigned char *v = (const unsigned char *)rows + r * stride;
        for (size_t b = 0; b < nb; b++) {
            int c[QK];
            const float d = codes_of(fmt, v, n, b, c);
            *dmax = fabsf(d) > *dmax ? fabsf(d) : *dmax;
            for (size_t g = 0; g < G; g++) {
                const int32_t w = iaxpy_weight(p[g * ld + r] * d, to_int[g]);
                int32_t *a = acc + g * n + b * QK;
                for (int j = 0; j < QK; j++)
                    a[j] += w * c[j];
            }
        }
    }
}
