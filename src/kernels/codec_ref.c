/* codec_ref.c: the reference codecs, plain loops: the specification.
 *
 * How each format rounds (layouts in format.h). "Block" is 32 values for
 * q8_0 and q4_0 and the whole row for int4 and fp4; a trailing partial block
 * is quantized as if zero-padded.
 *
 *   f32   a copy.
 *   f16   IEEE binary16, round to nearest even, subnormals kept.
 *   q8_0  llama.cpp's quantize_row_q8_0_ref: d = absmax / 127, q =
 *         roundf(x * (1/d)) (ties away from zero), d stored as fp16.
 *         Error per value <= d/2, plus 127 * |d - fp16(d)|: the codes are
 *         chosen against d, decoded against its fp16 rounding.
 *   q4_0  llama.cpp's quantize_row_q4_0_ref: d = max / -8, where max is the
 *         signed value of largest magnitude (the first, on ties), q =
 *         min(15, trunc(x * (1/d) + 8.5)), stored q, value (q - 8) * d.
 *         In units of d, x/d lies in [-8, 8] and rounds half up; values of
 *         the sign opposite to max saturate at 7, so their error reaches d
 *         (x/d in (7.5, 8]); every other value is within d/2. Plus
 *         8 * |d - fp16(d)|, as for q8_0.
 *   int4  s = fp16(absmax / 7); q = clamp(roundf(x / s), -8, 7). The codes
 *         are chosen against the stored (fp16) scale. While s is a normal
 *         fp16 (absmax >= 7 * 2^-14, about 4.3e-4) every value is within
 *         s/2 (|x/s| <= 7 * (1 + 2^-11) never reaches 7.5). A subnormal s
 *         is rounded to a multiple of 2^-24, so it may lie up to 2^-25 below
 *         absmax / 7: the largest values can then pass 7.5 s and saturate
 *         at 7, and each value is within max(s/2, absmax - 7s), where
 *         absmax - 7s < 7 * 2^-25 (about 2.1e-7). [1.038e-6, 0, ...] stores
 *         s = 2^-23 (1.19e-7, for absmax/7 = 1.48e-7) and decodes 1.038e-6
 *         as 8.34e-7, 2.04e-7 off (1.7 s). Below absmax 7 * 2^-25, s is 0
 *         and the row decodes to zeros (error absmax).
 *   fp4   s = fp16(absmax / 6); |x/s| rounds to the nearest E2M1 magnitude
 *         (0, 0.5, 1, 1.5, 2, 3, 4, 6), ties to the even code (0.25 -> 0,
 *         0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4),
 *         sign bit from x < 0 (so -0.1 -> -0). The error
 *         is half the gap around x/s: s/4 up to 2, s/2 up to 4, s beyond.
 *         A subnormal s (absmax < 6 * 2^-14) may lie up to 2^-25 below
 *         absmax / 6, as for int4: values past 6 s saturate at 6, off by
 *         at most absmax - 6s < 6 * 2^-25.
 *         (The Marlin design also lists 0.25 and 0.75; E2M1 has no such values.)
 *   u4    the values are already codes (the kivi cache maps keys to code
 *   u2    space per channel): q = clamp(roundf(x), 0, 15) for u4, [0, 3]
 *         for u2, ties away from zero (2.5 -> 3). Within [0, max code] the
 *         error is <= 1/2; beyond, the value saturates at the nearer end.
 *
 * Zeros, tiny, huge, Inf and NaN: none of them crashes, divides by zero or
 * converts an out-of-range float to an integer.
 *   zeros   a block of zeros has scale 0 and decodes to zeros (q4_0 stores
 *           d = -0.0 like llama.cpp and decodes to -0.0, which == 0).
 *   tiny    a scale below fp16's normal range (q8_0: absmax < 127 * 2^-14,
 *           about 0.0078) keeps fewer bits; below 2^-25 it rounds to 0 and
 *           the block decodes to zeros (error <= absmax). llama.cpp alike.
 *   huge    a scale above fp16's largest finite value (absmax above
 *           65504 * 127 for q8_0, * 8 for q4_0, * 7 for int4, * 6 for fp4)
 *           is clamped to 65504 before the codes are chosen, and values
 *           beyond the codes' reach saturate at the extreme code (q8_0
 *           +-127 steps; q4_0 8 on max's side, 7 on the other; int4 7 up,
 *           -8 down; fp4 +-6): the largest value a block can hold. Here
 *           q8_0 and q4_0 part from llama.cpp, whose reference chooses the
 *           codes against the unclamped d and stores fp16(d), rounded to
 *           nearest: for 65504 < |d| < 65520 it stores 65504 as well, but
 *           its codes may differ from these by one step (x/d and x/65504
 *           differ by under 0.031 of a step); for |d| >= 65520 it stores
 *           Inf, and its block decodes to +-Inf (NaN where a code is 0)
 *           where this one stays finite.
 *   Inf     counts as a huge value: scale 65504, the Inf saturates at the
 *           extreme code, the block's finite values round against that
 *           scale (mostly to 0). No Inf or NaN comes back out.
 *   NaN     poisons its block: any NaN makes the scale NaN (fp16 0x7e00)
 *           and every code "zero" (q4_0: 8), so every value of the block (q8_0, q4_0) or
 *           of the row (int4, fp4) decodes to NaN, and so do dot and axpy
 *           results that use them. An honest signal, as in f32.
 *   u4, u2 have no scale to poison: a NaN becomes code 0 (itself alone),
 *   -Inf and negatives code 0, +Inf and huge values the top code. A code
 *   cannot say NaN; the kivi cache, which computes the codes, sees a NaN
 *   key's channel first (its scale and minimum turn NaN).
 *   f16 keeps NaN (quiet), turns |x| >= 65520 into Inf and keeps Inf;
 *   f32 keeps everything.
 *
 * dot accumulates in double, so that the reference is the oracle the SIMD
 * versions (float lanes) are measured against; axpy rounds like plain C,
 * w * v then +=, row after row. Not so f32 and f16, the caches --int-dot
 * leaves in float: their dot sums in the SIMD codecs' lanes and chains
 * (codec_dot_chains) and their axpy fuses w * v into the sum, as every
 * ISA's does, so that one model gives the same bits on every --isa. The
 * tile forms (dot_rows, axpy_rows) are the specification; the per-row
 * forms are tiles of one row. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h"
#include "kernels/lanes16.h"

/* --- fp16 ---------------------------------------------------------------- */

unsigned short fp16_from_f32(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, keeping the payload's top bits */
        return (unsigned short)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 (65504 + half a step) or Inf */
        return (unsigned short)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* >= 2^-14: normal in fp16 */
        uint32_t r = a - (112u << 23);       /* exponent bias 127 -> 15 */
        r += 0xfffu + ((r >> 13) & 1u);      /* round the 13 dropped bits, ties to even */
        return (unsigned short)(sign | (r >> 13)); /* a carry may bump the exponent: right */
    }
    /* subnormal in fp16: the value in units of 2^-24, ties to even */
    const uint32_t e = a >> 23;
    if (e < 102) /* below 2^-25: rounds to zero */
        return (unsigned short)sign;
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e; /* 14 .. 24 */
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u)))
        h++; /* 1023 + 1 is the smallest normal: right again */
    return (unsigned short)(sign | h);
}

float fp16_to_f32(unsigned short h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t x;
    if (e == 31) /* Inf, or NaN made quiet (as F16C and NEON do) */
        x = sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0);
    else if (e == 0) { /* zero or subnormal: m * 2^-24, exact in f32 */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    } else
        x = sign | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static float load_fp16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return fp16_to_f32(h);
}

/* --- shared pieces of the quantizers ------------------------------------- */

/* The block's largest |x| over x[0..m), and whether any x is NaN. */
static float absmax(const float *x, size_t m, int *nan)
{
    float amax = 0.0f;
    *nan = 0;
    for (size_t j = 0; j < m; j++) {
        if (isnan(x[j]))
            *nan = 1;
        else if (fabsf(x[j]) > amax)
            amax = fabsf(x[j]);
    }
    return amax;
}

/* A scale the fp16 field can hold: |d| clamped to 65504, NaN if the block
 * held a NaN. */
static float fit_scale(float d, int nan)
{
    if (nan)
        return NAN;
    if (d > FP16_MAX)
        return FP16_MAX;
    if (d < -FP16_MAX)
        return -FP16_MAX;
    return d;
}

/* v clamped to [lo, hi]; NaN goes to lo (never reached: NaN blocks are
 * caught first, but a float-to-int conversion must never see one). */
static float clampf(float v, float lo, float hi)
{
    return v >= lo ? (v <= hi ? v : hi) : lo;
}

/* --- f32, f16 ------------------------------------------------------------ */

void codec_quantize_f32_ref(void *dst, const float *src, size_t n)
{
    memcpy(dst, src, n * sizeof(float));
}

static float at_f32(const unsigned char *row, size_t n, size_t i)
{
    (void)n;
    float v;
    memcpy(&v, row + i * sizeof v, sizeof v);
    return v;
}

static void quantize_f16(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst;
    for (size_t i = 0; i < n; i++) {
        uint16_t h = fp16_from_f32(src[i]);
        memcpy(p + 2 * i, &h, sizeof h);
    }
}

static float at_f16(const unsigned char *row, size_t n, size_t i)
{
    (void)n;
    return load_fp16(row + 2 * i);
}

/* --- q8_0 ---------------------------------------------------------------- */

void codec_quantize_q8_0_ref(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst;
    for (size_t b = 0; b * QK8_0 < n; b++) {
        const float *x = src + b * QK8_0;
        const size_t m = n - b * QK8_0 < QK8_0 ? n - b * QK8_0 : QK8_0; /* values present */
        int nan;
        const float amax = absmax(x, m, &nan);
        const float d = fit_scale(amax / 127.0f, nan);
        const float id = codec_inverse(d);
        BlockQ8_0 blk;
        blk.d = fp16_from_f32(d);
        for (size_t j = 0; j < QK8_0; j++) {
            float v = j < m ? x[j] * id : 0.0f;
            blk.qs[j] = nan ? 0 : (int8_t)clampf(roundf(v), -127.0f, 127.0f);
        }
        memcpy(p + b * sizeof blk, &blk, sizeof blk);
    }
}

/* q8_0 as llama.cpp's x86 CPU path rounds an activation before its integer
 * dots (quantize_row_q8_0 with AVX): the codes x * (127 / absmax) rounded
 * to nearest, ties to even, where the reference takes x * (1 / d) and
 * rounds ties away from zero; scale, zeros, huge values and NaN as there.
 * Adding and taking off 1.5 * 2^23 rounds a float of magnitude <= 127 to
 * nearest even in every build, without the current rounding mode's help. */
void codec_quantize_q8_0_even(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst;
    for (size_t b = 0; b * QK8_0 < n; b++) {
        const float *x = src + b * QK8_0;
        const size_t m = n - b * QK8_0 < QK8_0 ? n - b * QK8_0 : QK8_0;
        int nan;
        const float amax = absmax(x, m, &nan);
        const float d = fit_scale(amax / 127.0f, nan);
        const float id = amax == 0.0f || d != amax / 127.0f ? codec_inverse(d) : 127.0f / amax;
        BlockQ8_0 blk;
        blk.d = fp16_from_f32(d);
        for (size_t j = 0; j < QK8_0; j++) {
            const float v = clampf(j < m ? x[j] * id : 0.0f, -127.0f, 127.0f) + 12582912.0f;
            blk.qs[j] = nan ? 0 : (int8_t)(v - 12582912.0f);
        }
        memcpy(p + b * sizeof blk, &blk, sizeof blk);
    }
}

static float at_q8_0(const unsigned char *row, size_t n, size_t i)
{
    (void)n;
    const unsigned char *blk = row + (i / QK8_0) * sizeof(BlockQ8_0);
    int8_t q;
    memcpy(&q, blk + offsetof(BlockQ8_0, qs) + i % QK8_0, 1);
    return (float)q * load_fp16(blk);
}

/* --- q4_0 ---------------------------------------------------------------- */

void codec_quantize_q4_0_ref(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst;
    for (size_t b = 0; b * QK4_0 < n; b++) {
        const float *x = src + b * QK4_0;
        const size_t m = n - b * QK4_0 < QK4_0 ? n - b * QK4_0 : QK4_0;
        float amax = 0.0f, max = 0.0f; /* max: the signed value of largest |x| */
        int nan = 0;
        for (size_t j = 0; j < m; j++) {
            if (isnan(x[j]))
                nan = 1;
            else if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        const float d = fit_scale(max / -8.0f, nan);
        const float id = codec_inverse(d);
        BlockQ4_0 blk;
        blk.d = fp16_from_f32(d);
        for (size_t j = 0; j < QK4_0 / 2; j++) {
            unsigned q[2];
            for (size_t h = 0; h < 2; h++) { /* h = 0: element j, h = 1: element j + 16 */
                size_t k = j + h * QK4_0 / 2;
                float v = (k < m ? x[k] : 0.0f) * id + 8.5f;
                /* llama.cpp: MIN(15, (int8_t)v); v >= 0 unless the scale was
                 * clamped, so trunc is floor; clamp first to stay defined */
                q[h] = nan ? 8u : (unsigned)clampf(v, 0.0f, 15.0f);
            }
            blk.qs[j] = (uint8_t)(q[0] | q[1] << 4);
        }
        memcpy(p + b * sizeof blk, &blk, sizeof blk);
    }
}

static float at_q4_0(const unsigned char *row, size_t n, size_t i)
{
    (void)n;
    const unsigned char *blk = row + (i / QK4_0) * sizeof(BlockQ4_0);
    const size_t j = i % QK4_0;
    const unsigned byte = blk[offsetof(BlockQ4_0, qs) + j % (QK4_0 / 2)];
    const int q = (int)(j < QK4_0 / 2 ? byte & 0xfu : byte >> 4) - 8;
    return (float)q * load_fp16(blk);
}

/* --- int4, fp4: per-row scale after the words ----------------------------- */

/* The row's stored scale, as fp16 and as the float the decoder sees. */
static float row_scale(unsigned char *p, size_t n, float s)
{
    uint16_t h = fp16_from_f32(s);
    memcpy(p + 4 * codec_row_words(n), &h, sizeof h);
    return fp16_to_f32(h);
}

/* Nibble i of the row's words. */
static unsigned nibble(const unsigned char *row, size_t i)
{
    uint32_t w;
    memcpy(&w, row + 4 * (i / 8), sizeof w);
    return (w >> (4 * (i % 8))) & 0xfu;
}

/* Pack one nibble per element, element i into word i/8 at bits 4*(i%8). */
static void put_nibbles(unsigned char *p, const unsigned char *nib, size_t n)
{
    for (size_t w = 0; w < codec_row_words(n); w++) {
        uint32_t word = 0;
        for (size_t k = 0; k < 8 && w * 8 + k < n; k++)
            word |= (uint32_t)nib[w * 8 + k] << (4 * k);
        memcpy(p + 4 * w, &word, sizeof word);
    }
}

void codec_quantize_int4_ref(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst, nib[64];
    int nan;
    const float amax = absmax(src, n, &nan);
    const float s = row_scale(p, n, fit_scale(amax / 7.0f, nan));
    for (size_t i0 = 0; i0 < n; i0 += sizeof nib) { /* nib: a slice of the row at a time */
        size_t m = n - i0 < sizeof nib ? n - i0 : sizeof nib;
        for (size_t k = 0; k < m; k++) {
            float q = (nan || s == 0.0f) ? 0.0f : clampf(roundf(src[i0 + k] / s), -8.0f, 7.0f);
            nib[k] = (unsigned char)((int)q & 0xf); /* two's complement nibble */
        }
        put_nibbles(p + 4 * (i0 / 8), nib, m);
    }
}

static float at_int4(const unsigned char *row, size_t n, size_t i)
{
    const int q = (int)(nibble(row, i) ^ 8u) - 8; /* sign-extend the nibble */
    return (float)q * load_fp16(row + 4 * codec_row_words(n));
}

/* |u| to the nearest E2M1 magnitude index, ties to the even index. */
static unsigned fp4_index(float a)
{
    return (unsigned)(a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) +
           (a > 5.0f);
}

void codec_quantize_fp4_ref(void *dst, const float *src, size_t n)
{
    unsigned char *p = dst, nib[64];
    int nan;
    const float amax = absmax(src, n, &nan);
    const float s = row_scale(p, n, fit_scale(amax / 6.0f, nan));
    for (size_t i0 = 0; i0 < n; i0 += sizeof nib) {
        size_t m = n - i0 < sizeof nib ? n - i0 : sizeof nib;
        for (size_t k = 0; k < m; k++) {
            const float x = src[i0 + k];
            unsigned idx = (nan || s == 0.0f) ? 0 : fp4_index(fabsf(x / s));
            nib[k] = (unsigned char)((x < 0.0f ? 8u : 0u) | idx);
        }
        put_nibbles(p + 4 * (i0 / 8), nib, m);
    }
}

static float at_fp4(const unsigned char *row, size_t n, size_t i)
{
    static const float mag[8] = { FP4_MAGNITUDES };
    const unsigned c = nibble(row, i);
    const float v = mag[c & 7u] * load_fp16(row + 4 * codec_row_words(n));
    return c & 8u ? -v : v;
}

/* --- u4, u2: bare unsigned codes, packed low bits first ------------------- */

/* Pack codes of `bits` bits, 32 / bits to a little-endian word, element i
 * in word i / (32/bits) at bits bits * (i % (32/bits)). */
static void put_codes(unsigned char *p, const float *src, size_t n, unsigned bits)
{
    const size_t per = 32 / bits;
    const float top = (float)((1u << bits) - 1);
    for (size_t w = 0; w * per < n; w++) {
        uint32_t word = 0;
        for (size_t k = 0; k < per && w * per + k < n; k++) /* clampf sends NaN to 0 */
            word |= (uint32_t)clampf(roundf(src[w * per + k]), 0.0f, top) << (bits * k);
        memcpy(p + 4 * w, &word, sizeof word);
    }
}

static unsigned get_code(const unsigned char *row, size_t i, unsigned bits)
{
    const size_t per = 32 / bits;
    uint32_t w;
    memcpy(&w, row + 4 * (i / per), sizeof w);
    return (w >> (bits * (i % per))) & ((1u << bits) - 1);
}

void codec_quantize_u4_ref(void *dst, const float *src, size_t n)
{
    put_codes(dst, src, n, 4);
}

void codec_quantize_u2_ref(void *dst, const float *src, size_t n)
{
    put_codes(dst, src, n, 2);
}

static float at_u4(const unsigned char *row, size_t n, size_t i)
{
    (void)n;
    return (float)get_code(row, i, 4);
}

static float at_u2(const unsigned char *row, size_t n, size_t i)
{
    (void)n;
    return (float)get_code(row, i, 2);
}

/* --- the row operations, from one value accessor per format -------------- */

typedef float (*AtFn)(const unsigned char *row, size_t n, size_t i);

static void dequantize_with(AtFn at, float *dst, const void *row, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = at(row, n, i);
}

/* The tile forms are the specification; the per-row forms are a tile of
 * one row (out[g * 1 + 0] = out[g], w[g * 1 + 0] = w[g]). */
static void dot_rows_with(AtFn at, float *out, size_t ld, const float *q, size_t G, const void *rows, size_t stride,
                          size_t n_rows, size_t n)
{
    for (size_t r = 0; r < n_rows; r++) {
        const unsigned char *row = (const unsigned char *)rows + r * stride;
        for (size_t g = 0; g < G; g++) {
            double sum = 0.0;
            for (size_t i = 0; i < n; i++)
                sum += (double)q[g * n + i] * at(row, n, i);
            out[g * ld + r] = (float)sum;
        }
    }
}

static void axpy_rows_with(AtFn at, float *acc, const float *w, size_t ld, size_t G, const void *rows, size_t stride,
                           size_t n_rows, size_t n)
{
    for (size_t r = 0; r < n_rows; r++) {
        const unsigned char *row = (const unsigned char *)rows + r * stride;
        for (size_t g = 0; g < G; g++)
            for (size_t i = 0; i < n; i++)
                acc[g * n + i] += w[g * ld + r] * at(row, n, i);
    }
}

/* f32 and f16: q . row in the order of every ISA's codec (codec_dot_chains,
 * lanes16.h); lanes past n add 0 * 0, as a masked vector lane does. */
static float dot_lanes(AtFn at, const float *q, const unsigned char *row, size_t n, size_t chains)
{
    float acc[4][LANES] = { { 0 } };
    const size_t chunks = (n + LANES - 1) / LANES, grouped = n / (chains * LANES) * chains;
    for (size_t c = 0; c < chunks; c++) {
        float *a = acc[c < grouped ? c % chains : 0];
        for (size_t l = 0; l < LANES; l++) {
            const size_t i = c * LANES + l;
            a[l] = i < n ? fmaf(q[i], at(row, n, i), a[l]) : fmaf(0.0f, 0.0f, a[l]);
        }
    }
    for (size_t k = 1; k < chains; k++)
        for (size_t l = 0; l < LANES; l++)
            acc[0][l] += acc[k][l];
    return lanes16_reduce(acc[0]);
}

static void dot_rows_lanes(AtFn at, float *out, size_t ld, const float *q, size_t G, const void *rows,
                           size_t stride, size_t n_rows, size_t n)
{
    const size_t chains = codec_dot_chains(n, G);
    for (size_t r = 0; r < n_rows; r++)
        for (size_t g = 0; g < G; g++)
            out[g * ld + r] = dot_lanes(at, q + g * n, (const unsigned char *)rows + r * stride, n, chains);
}

/* f32 and f16: w * v fused into the sum, row after row, as the SIMD codecs add. */
static void axpy_rows_fused(AtFn at, float *acc, const float *w, size_t ld, size_t G, const void *rows,
                            size_t stride, size_t n_rows, size_t n)
{
    for (size_t r = 0; r < n_rows; r++) {
        const unsigned char *row = (const unsigned char *)rows + r * stride;
        for (size_t g = 0; g < G; g++)
            for (size_t i = 0; i < n; i++)
                acc[g * n + i] = fmaf(w[g * ld + r], at(row, n, i), acc[g * n + i]);
    }
}

#define REF_OPS_(fmt, dot_with, axpy_with)                                                                  \
    static void dequantize_##fmt(float *dst, const void *row, size_t n)                                     \
    {                                                                                                       \
        dequantize_with(at_##fmt, dst, row, n);                                                             \
    }                                                                                                       \
    static void dot_rows_##fmt(float *out, size_t ld, const float *q, size_t G, const void *rows,           \
                               size_t stride, size_t n_rows, size_t n, const RowsAhead *ahead)              \
    {                                                                                                       \
        (void)ahead; /* plain loops: nothing to overlap */                                                  \
        dot_with(at_##fmt, out, ld, q, G, rows, stride, n_rows, n);                                         \
    }                                                                                                       \
    static void axpy_rows_##fmt(float *acc, const float *w, size_t ld, size_t G, const void *rows,          \
                                size_t stride, size_t n_rows, size_t n)                                     \
    {                                                                                                       \
        axpy_with(at_##fmt, acc, w, ld, G, rows, stride, n_rows, n);                                        \
    }                                                                                                       \
    static void dot_##fmt(float *out, const float *q, size_t G, const void *row, size_t n)                  \
    {                                                                                                       \
        dot_with(at_##fmt, out, 1, q, G, row, 0, 1, n);                                                     \
    }                                                                                                       \
    static void axpy_##fmt(float *acc, const float *w, size_t G, const void *row, size_t n)                 \
    {                                                                                                       \
        axpy_with(at_##fmt, acc, w, 1, G, row, 0, 1, n);                                                    \
    }

#define REF_OPS(fmt) REF_OPS_(fmt, dot_rows_with, axpy_rows_with)

REF_OPS_(f32, dot_rows_lanes, axpy_rows_fused)
REF_OPS_(f16, dot_rows_lanes, axpy_rows_fused)
REF_OPS(q8_0)
REF_OPS(q4_0)
REF_OPS(int4)
REF_OPS(fp4)
REF_OPS(u4)
REF_OPS(u2)


#define ENTRY(F, fmt, quantize)                                                                             \
    [F] = { F, quantize, dequantize_##fmt, dot_##fmt, axpy_##fmt, dot_rows_##fmt, axpy_rows_##fmt }

const FormatOps codec_ref[FMT_COUNT] = {
    ENTRY(FMT_F32, f32, codec_quantize_f32_ref),   ENTRY(FMT_F16, f16, quantize_f16),
    ENTRY(FMT_Q8_0, q8_0, codec_quantize_q8_0_ref), ENTRY(FMT_Q4_0, q4_0, codec_quantize_q4_0_ref),
    ENTRY(FMT_INT4, int4, codec_quantize_int4_ref), ENTRY(FMT_FP4, fp4, codec_quantize_fp4_ref),
    ENTRY(FMT_U4, u4, codec_quantize_u4_ref),     ENTRY(FMT_U2, u2, codec_quantize_u2_ref),
};
