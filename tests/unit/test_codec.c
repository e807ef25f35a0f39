/* test_codec.c: the format codecs (codec_ref.c and the SIMD tables).
 *
 * (a) every format's round trip stays within the bound its rounding rule
 *     implies, value by value; (b) q8_0, q4_0, int4, fp4, u4 and u2 give the
 *     exact bytes worked out by hand below, and the code formats (u4, u2)
 *     keep every code and clamp the rest; (c) zeros, constant rows, huge values,
 *     Inf and NaN behave as codec_ref.c documents; (d) every SIMD table this
 *     CPU runs agrees with the reference at awkward lengths, and the test
 *     prints which tables it ran and which it skipped, and why; (e) so do
 *     the tile forms (dot_rows, axpy_rows) at awkward lengths, groups and
 *     row counts, and the per-row forms equal a tile of one row. */
#include "testutil.h"

#include <float.h>
#include <string.h>

#include "kernels/codec.h"
#include "kernels/codec_isa.h"
#include "kernels/format.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* --- tolerances ------------------------------------------------------------ */

/* Unit roundoff of float: half an ulp of 1. */
#define U_F32 0x1p-24

/* f16 round trip: half an ulp (2^-11 relative) for normal values, half the
 * smallest subnormal (2^-25) below them. */
#define F16_REL 0x1p-11
#define F16_ABS 0x1p-25

/* The quantizers compute x * (1/d) or x / s in float before rounding to a
 * code, which can move a value sitting on a rounding boundary by a few
 * ulps of a number <= 127: allow 1e-4 of a step beyond the rule. */
#define STEP_SLACK 1e-4

/* dot: the reference sums in double; a SIMD version sums n products in
 * float lanes (at least 4 lanes, FMA), then adds its lanes. Each partial
 * sum takes at most n/4 + log2(lanes) + 2 roundings, so its error is below
 * (n/4 + 16) * u * sum |q_i * v_i| (the standard gamma_k bound, with room). */
#define DOT_ROUNDINGS(n) ((double)(n) / 4.0 + 16.0)

/* axpy: the reference rounds w * v, then the sum; FMA rounds once, and a
 * block-scaled format (q8_0, q4_0) first rounds w times the block's scale
 * (one multiply per block, not per value). From the exact sum the
 * reference is at most u|w v| + u|acc + w v| away, the SIMD version 2u|w v|
 * + u|acc + w v|: apart by at most 4 roundings of |acc| + |w * v|. A tile
 * of R rows adds R such terms: apart by at most 4R roundings of |acc| +
 * sum_r |w_r * v_r|. */
#define AXPY_ROUNDINGS 4.0

/* --- data ------------------------------------------------------------------- */

static const size_t lens[] = { 1, 7, 8, 31, 32, 33, 127, 128, 129, 4096 };
#define N_LENS (sizeof lens / sizeof lens[0])
static const size_t groups[] = { 1, 3, 4, 8, 12, 70 }; /* 12, 70: the paths past 8 heads and 64 */
#define N_GROUPS (sizeof groups / sizeof groups[0])

/* The tile forms: row lengths (64 and 128: the rows whose q the SIMD
 * tables keep in registers; 128 with 16 rows or more: AVX-512's gathered
 * q4_0 rows; 300: more chunks than a block holds), groups
 * (blocks of 4, 2 and 1 heads: 3 = 2 + 1, 5 = 4 + 1, 12 = 4 + 4 + 4) and
 * row counts (1; 7, fewer than a block of rows; 64, the flash tile; 65, a
 * pass of 64 rows and one more). */
static const size_t tile_lens[] = { 1, 7, 16, 31, 33, 64, 128, 129, 300 };
static const size_t tile_groups[] = { 1, 2, 3, 4, 5, 8, 12 };
static const size_t tile_rows[] = { 1, 7, 64, 65 };
#define N_OF(a) (sizeof a / sizeof a[0])

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s;
}

/* Uniform in [-1, 1). */
static float unit(uint32_t *s)
{
    return (float)((double)(lcg(s) >> 8) / 8388608.0 - 1.0);
}

/* Deterministic test values: each run of 32 has its own magnitude (so the
 * per-block scales differ), now and then a value of ten times the rest. */
static void fill(float *x, size_t n, uint32_t seed)
{
    static const float mags[] = { 1.0f, 0.05f, 3.0f, 20.0f, 0.4f };
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        float m = mags[(i / 32 + seed) % 5];
        x[i] = unit(&s) * m * (lcg(&s) % 53 == 0 ? 10.0f : 1.0f);
    }
}

static void fill_plain(float *x, size_t n, uint32_t seed)
{
    uint32_t s = seed * 2246822519u + 7;
    for (size_t i = 0; i < n; i++)
        x[i] = unit(&s);
}

/* The code formats take values already in code space: fold x into
 * [-1, top + 1), so that both rounding and clamping at either end occur. */
static void to_code_space(Format f, float *x, size_t n)
{
    if (!format_is_per_channel(f))
        return;
    const float span = (f == FMT_U4 ? 15.0f : 3.0f) + 2.0f;
    for (size_t i = 0; i < n; i++)
        x[i] = fmodf(fabsf(x[i]) * 7.3f, span) - 1.0f;
}

static float f16_round(float x)
{
    return fp16_to_f32(fp16_from_f32(x));
}

static int same_float(float a, float b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* --- round-trip bounds, value by value ---------------------------------------- */

/* b[i] = the largest |x[i] - decode(encode(x))[i]| the rounding rule of f
 * allows, for rows of finite values within the formats' range. Also the
 * step (scale) of each value, to report errors in steps. */
static void bounds(Format f, const float *x, size_t n, double *b, double *step)
{
    if (format_is_per_channel(f)) { /* codes: round to nearest, clamp to [0, top]; the step is 1 */
        const double top = f == FMT_U4 ? 15.0 : 3.0;
        for (size_t i = 0; i < n; i++) {
            b[i] = fmax(0.5, fmax(-(double)x[i], (double)x[i] - top));
            step[i] = 1.0;
        }
        return;
    }
    if (f == FMT_F32 || f == FMT_F16) {
        for (size_t i = 0; i < n; i++) {
            b[i] = f == FMT_F32 ? 0.0 : fmax(fabs((double)x[i]) * F16_REL, F16_ABS);
            step[i] = fmax(fabs((double)x[i]), 1e-30);
        }
        return;
    }
    const size_t bs = (f == FMT_Q8_0 || f == FMT_Q4_0) ? 32 : n; /* values per scale */
    for (size_t b0 = 0; b0 < n; b0 += bs) {
        const size_t m = n - b0 < bs ? n - b0 : bs;
        float amax = 0.0f, max = 0.0f;
        for (size_t j = 0; j < m; j++)
            if (fabsf(x[b0 + j]) > amax) {
                amax = fabsf(x[b0 + j]);
                max = x[b0 + j];
            }
        for (size_t j = 0; j < m; j++) {
            const double v = x[b0 + j];
            double d, bound;
            if (f == FMT_Q8_0) { /* codes against d, decoded with fp16(d) */
                float df = amax / 127.0f;
                d = df;
                bound = d * (0.5 + STEP_SLACK) + 127.0 * fabs(d - f16_round(df));
            } else if (f == FMT_Q4_0) { /* x/d in [-8, 8]; (7.5, 8] saturates at 7 */
                float df = max / -8.0f;
                d = fabs((double)df);
                double u = df != 0.0f ? v / df : 0.0;
                bound = d * (fmax(0.5, u - 7.0) + STEP_SLACK) + 8.0 * fabs(df - f16_round(df));
            } else { /* int4, fp4: codes against the stored scale s */
                const float s = f16_round(amax / (f == FMT_INT4 ? 7.0f : 6.0f));
                d = s;
                const double u = s != 0.0f ? fabs(v / s) : 0.0;
                double half;
                if (f == FMT_INT4)
                    half = fmax(0.5, u - 7.0);
                else
                    half = u <= 2.0 ? 0.25 : u <= 4.0 ? 0.5 : u <= 6.0 ? 1.0 : u - 6.0;
                bound = s != 0.0f ? s * (half + STEP_SLACK) : fabs(v);
            }
            b[b0 + j] = bound;
            step[b0 + j] = d > 0 ? d : 1e-30;
        }
    }
}

/* Quantize x with `quant`, decode with the reference, check every value
 * against its bound. Returns the worst error in steps of the format. */
static double check_round_trip(Format f, void (*quant)(void *, const float *, size_t), const float *x, size_t n,
                               const char *who)
{
    unsigned char *row = malloc(format_row_bytes(f, n));
    float *y = malloc(n * sizeof *y);
    double *b = malloc(n * sizeof *b), *step = malloc(n * sizeof *step);
    quant(row, x, n);
    codec_ref[f].dequantize(y, row, n);
    bounds(f, x, n, b, step);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double err = fabs((double)x[i] - (double)y[i]);
        if (!(err <= b[i]))
            fail_msg("%s %s n=%zu: x[%zu] = %.9g decodes to %.9g (error %.3g > bound %.3g)", who, format_name(f), n,
                     i, x[i], y[i], err, b[i]);
        if (err / step[i] > worst)
            worst = err / step[i];
    }
    free(row);
    free(y);
    free(b);
    free(step);
    return worst;
}

static void test_round_trip_bounds(void **state)
{
    (void)state;
    printf("  round trip, worst error (f16: relative; others: in steps of the scale):\n");
    for (int f = 0; f < FMT_COUNT; f++) {
        assert_int_equal(format_is_quantized((Format)f), f != FMT_F32 && f != FMT_F16);
        assert_int_equal(format_is_per_channel((Format)f), f == FMT_U4 || f == FMT_U2);
        if (format_is_per_channel((Format)f))
            continue; /* these values lie mostly outside code space: test_code_formats */
        double worst = 0.0;
        for (size_t k = 0; k < N_LENS; k++) {
            float *x = malloc(lens[k] * sizeof *x);
            fill(x, lens[k], (uint32_t)(k * 7 + (size_t)f));
            double w = check_round_trip((Format)f, codec_ref[f].quantize, x, lens[k], "ref");
            worst = w > worst ? w : worst;
            free(x);
        }
        printf("    %-5s %.4f\n", format_name((Format)f), worst);
    }
}

/* --- fp16 ------------------------------------------------------------------- */

static void test_fp16_conversions(void **state)
{
    (void)state;
    /* every half survives the trip through float; NaNs come back quiet */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fp16_to_f32((unsigned short)h);
        unsigned short back = fp16_from_f32(f);
        if (isnan(f))
            assert_int_equal(back, h | 0x200u);
        else
            assert_int_equal(back, h);
    }
    /* rounding: ties to even, overflow, subnormals */
    assert_int_equal(fp16_from_f32(1.0f + 0x1p-11f), 0x3c00);      /* tie, even stays */
    assert_int_equal(fp16_from_f32(1.0f + 3 * 0x1p-11f), 0x3c02);  /* tie, odd rounds up */
    assert_int_equal(fp16_from_f32(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    assert_int_equal(fp16_from_f32(65504.0f), 0x7bff);
    assert_int_equal(fp16_from_f32(65519.0f), 0x7bff);
    assert_int_equal(fp16_from_f32(65520.0f), 0x7c00);             /* tie into Inf */
    assert_int_equal(fp16_from_f32(-1e30f), 0xfc00);
    assert_int_equal(fp16_from_f32(INFINITY), 0x7c00);
    assert_int_equal(fp16_from_f32(0x1p-24f), 0x0001);             /* smallest subnormal */
    assert_int_equal(fp16_from_f32(0x1p-25f), 0x0000);             /* tie to even: 0 */
    assert_int_equal(fp16_from_f32(0x1.000002p-25f), 0x0001);
    assert_int_equal(fp16_from_f32(1.5f * 0x1p-24f), 0x0002);      /* tie to even: 2 */
    assert_int_equal(fp16_from_f32(0x1.ff8p-15f), 0x03ff);         /* largest subnormal, 1023 * 2^-24 */
    assert_int_equal(fp16_from_f32(0x1.ffcp-15f), 0x0400);         /* 1023.5: tie, up to the smallest normal */
    assert_int_equal(fp16_from_f32(0x1.ffap-15f), 0x03ff);
    assert_int_equal(fp16_from_f32(-0.0f), 0x8000);
    assert_int_equal(fp16_from_f32(NAN) & 0x7e00, 0x7e00);
    assert_true(isinf(fp16_to_f32(0xfc00)) && fp16_to_f32(0xfc00) < 0);
    assert_true(fp16_to_f32(0x0001) == 0x1p-24f);
}

/* --- (b) exact bytes, worked by hand ----------------------------------------- */

static void expect_bytes(const unsigned char *got, const unsigned char *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, got[i], want[i]);
}

static void test_q8_0_bytes(void **state)
{
    (void)state;
    float x[64];
    unsigned char got[68], want[68];

    /* Block 0: x[j] = j. absmax 31, d = 31/127 = 0.24409449 (float);
     * fp16(d): 0.24409 = 2^-3 * 1.95276, mantissa 0.95276 * 1024 = 975.6 ->
     * 976, so d16 = 2^-3 * (1 + 976/1024) = 0.244140625, bits (12 << 10) |
     * 976 = 0x33d0, stored d0 33. Codes q[j] = roundf(j * 127/31) =
     * roundf(4.0968 * j): 0 4 8 12 16 20 25 29 33 37 41 45 49 53 57 61 66 70
     * 74 78 82 86 90 94 98 102 107 111 115 119 123 127 (j*127/31 is never
     * k + 1/2, so no ties). */
    static const int8_t q0[32] = { 0,  4,  8,  12, 16, 20, 25, 29, 33,  37,  41,  45,  49,  53,  57,  61,
                                   66, 70, 74, 78, 82, 86, 90, 94, 98, 102, 107, 111, 115, 119, 123, 127 };
    /* Block 1: absmax 127 (x = -127), so d = 1 exactly: fp16 0x3c00, stored
     * 00 3c, and q = roundf(x), ties away from zero: 2.5 -> 3, -2.5 -> -3,
     * 0.4 -> 0, 0.6 -> 1, -0.6 -> -1, 126.5 -> 127; then x = j - 16 for
     * j = 7 .. 31, codes -9 .. 15. */
    static const float x1[7] = { -127.0f, 2.5f, -2.5f, 0.4f, 0.6f, -0.6f, 126.5f };
    static const int8_t q1[7] = { -127, 3, -3, 0, 1, -1, 127 };
    for (int j = 0; j < 32; j++) {
        x[j] = (float)j;
        x[32 + j] = j < 7 ? x1[j] : (float)(j - 16);
    }
    want[0] = 0xd0;
    want[1] = 0x33;
    memcpy(want + 2, q0, 32);
    want[34] = 0x00;
    want[35] = 0x3c;
    for (int j = 0; j < 32; j++)
        want[36 + j] = (unsigned char)(j < 7 ? q1[j] : (int8_t)(j - 16));
    assert_int_equal(format_row_bytes(FMT_Q8_0, 64), 68);
    codec_ref[FMT_Q8_0].quantize(got, x, 64);
    expect_bytes(got, want, 68, "q8_0");

    float y[64];
    codec_ref[FMT_Q8_0].dequantize(y, got, 64);
    assert_true(y[31] == 127.0f * 0.244140625f); /* 31.005859375: the fp16 scale shows */
    assert_true(y[32] == -127.0f && y[33] == 3.0f);

    /* Where kvscope parts from llama.cpp (codec_ref.c, huge): d = 65512,
     * between 65504 and 65520. Both store fp16 65504 (0x7bff), but llama.cpp
     * picks x's code against d (x/d = 100.49 -> 100), kvscope against the
     * clamped 65504 (x/65504 = 100.502 -> 101). */
    const float d = 65512.0f, xh[2] = { 127.0f * d, 100.49f * d };
    BlockQ8_0 blk;
    codec_ref[FMT_Q8_0].quantize(&blk, xh, 2);
    assert_int_equal(blk.d, 0x7bff);
    assert_int_equal(fp16_from_f32(d), 0x7bff);
    assert_int_equal((int)roundf(xh[1] * (1.0f / d)), 100);
    assert_int_equal(blk.qs[1], 101);
    assert_int_equal(fp16_from_f32(65520.0f), 0x7c00); /* llama.cpp's scale from here on: Inf */
}

static void test_q4_0_bytes(void **state)
{
    (void)state;
    float x[64];
    unsigned char got[36];

    /* Block 0: x[j] = j. max = 31 (positive), d = 31 / -8 = -3.875, exact in
     * fp16: 3.875 = 2^1 * 1.9375, mantissa 0.9375 * 1024 = 960 = 0x3c0,
     * exponent 1 + 15 = 16, sign set: 0x8000 | 16 << 10 | 0x3c0 = 0xc3c0,
     * stored c0 c3. q[j] = min(15, trunc(j / -3.875 + 8.5)) = trunc(8.5 -
     * 0.258 j): j = 0, 1 -> 8; 2..5 -> 7; 6..9 -> 6; 10..13 -> 5; 14..17 ->
     * 4; 18..21 -> 3; 22..25 -> 2; 26..29 -> 1; 30, 31 -> 0. Byte j = q[j] |
     * q[j+16] << 4: 48 48 37 37 37 37 26 26 26 26 15 15 15 15 04 04. */
    static const unsigned char want0[18] = { 0xc0, 0xc3, 0x48, 0x48, 0x37, 0x37, 0x37, 0x37, 0x26,
                                             0x26, 0x26, 0x26, 0x15, 0x15, 0x15, 0x15, 0x04, 0x04 };
    /* Block 1: x[j] = (j - 16) / 2, from -8 to 7.5. The largest magnitude is
     * -8, so max = -8 and d = -8 / -8 = 1: stored 00 3c. q = trunc(x +
     * 8.5): x + 8.5 = j/2 + 0.5 rounds half up, so -7.5 -> q 1 (value -7),
     * and x = 7.5 -> 16, clamped to 15 (value 7): q[j] = (j + 1) / 2 for
     * j < 16, 8 + (j - 15) / 2 after, with q[31] = 15. Bytes q[j] | q[j+16]
     * << 4: 80 91 91 a2 a2 b3 b3 c4 c4 d5 d5 e6 e6 f7 f7 f8. */
    static const unsigned char want1[18] = { 0x00, 0x3c, 0x80, 0x91, 0x91, 0xa2, 0xa2, 0xb3, 0xb3,
                                             0xc4, 0xc4, 0xd5, 0xd5, 0xe6, 0xe6, 0xf7, 0xf7, 0xf8 };
    for (int j = 0; j < 32; j++) {
        x[j] = (float)j;
        x[32 + j] = (float)(j - 16) * 0.5f;
    }
    assert_int_equal(format_row_bytes(FMT_Q4_0, 64), 36);
    codec_ref[FMT_Q4_0].quantize(got, x, 64);
    expect_bytes(got, want0, 18, "q4_0 block 0");
    expect_bytes(got + 18, want1, 18, "q4_0 block 1");

    float y[64];
    codec_ref[FMT_Q4_0].dequantize(y, got, 64);
    assert_true(y[0] == 0.0f && y[2] == 3.875f && y[31] == 31.0f);
    assert_true(y[32] == -8.0f && y[33] == -7.0f && y[63] == 7.0f); /* -7.5 up to -7; 7.5 saturates at 7 */
}

static void test_int4_fp4_bytes(void **state)
{
    (void)state;
    unsigned char got[10];
    float y[10];
    assert_int_equal(format_row_bytes(FMT_INT4, 10), 10); /* 2 words + the scale */

    /* int4: absmax 7, s = 1 (fp16 0x3c00). q = roundf(x), ties away from 0:
     * 7, -7 (nibble 9), 3.5 -> 4, -3.5 -> -4 (c), 1, 0, 0.49 -> 0, -0.5 ->
     * -1 (f) | 2.5 -> 3, -6.6 -> -7 (9). Element k of a word sits at bits
     * 4k: word 0 = 0xf001c497 (bytes 97 c4 01 f0), word 1 = 0x93. */
    static const float xi[10] = { 7.0f, -7.0f, 3.5f, -3.5f, 1.0f, 0.0f, 0.49f, -0.5f, 2.5f, -6.6f };
    static const unsigned char wi[10] = { 0x97, 0xc4, 0x01, 0xf0, 0x93, 0x00, 0x00, 0x00, 0x00, 0x3c };
    codec_ref[FMT_INT4].quantize(got, xi, 10);
    expect_bytes(got, wi, 10, "int4");
    codec_ref[FMT_INT4].dequantize(y, got, 10);
    static const float yi[10] = { 7, -7, 4, -4, 1, 0, 0, -1, 3, -7 };
    for (int i = 0; i < 10; i++)
        assert_true(y[i] == yi[i]);

    /* int4 with a subnormal scale: absmax/7 = 1.48e-7 is stored as 2^-23
     * (fp16 0x0002), so 1.038e-6 / s = 8.7 saturates at 7: off by 2.04e-7,
     * more than s/2 but under 7 * 2^-25 (codec_ref.c) */
    const float xs[10] = { 1.038e-6f };
    static const unsigned char ws[10] = { 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00 };
    codec_ref[FMT_INT4].quantize(got, xs, 10);
    expect_bytes(got, ws, 10, "int4, subnormal scale");
    codec_ref[FMT_INT4].dequantize(y, got, 10);
    assert_true(y[0] == 7 * 0x1p-23f);
    assert_true(xs[0] - y[0] > 0x1p-23 / 2 && xs[0] - y[0] < 7 * 0x1p-25);

    /* fp4: absmax 6, s = 1. Nearest E2M1 magnitude, ties to the even code:
     * 6 -> 7, -6 -> f, 0.25 -> 0 (0), 0.75 -> 2 (1.0), 1.25 -> 2 (1.0),
     * -1.75 -> c (-2), 2.5 -> 4 (2), 3.5 -> 6 (4) | 5 -> 6 (4), -0.1 -> 8
     * (-0). Word 0 = 0x64c220f7 (f7 20 c2 64), word 1 = 0x86. */
    static const float xf[10] = { 6.0f, -6.0f, 0.25f, 0.75f, 1.25f, -1.75f, 2.5f, 3.5f, 5.0f, -0.1f };
    static const unsigned char wf[10] = { 0xf7, 0x20, 0xc2, 0x64, 0x86, 0x00, 0x00, 0x00, 0x00, 0x3c };
    codec_ref[FMT_FP4].quantize(got, xf, 10);
    expect_bytes(got, wf, 10, "fp4");
    codec_ref[FMT_FP4].dequantize(y, got, 10);
    static const float yf[10] = { 6, -6, 0, 1, 1, -2, 2, 4, 4, 0 };
    for (int i = 0; i < 10; i++)
        assert_true(y[i] == yf[i]);
}

/* --- (c) zeros, constants, huge, Inf, NaN ------------------------------------ */

/* Encode x with the reference, decode with every table's dequantize and dot
 * (q = all ones, G = 1) and check the reference's values; all tables must
 * agree value for value (NaN for NaN). */
typedef struct {
    const char *name;
    const FormatOps *ops;
    int ok;
    const char *why; /* when !ok */
} Isa;

static size_t isa_list(Isa *out)
{
    size_t k = 0;
#if defined(__x86_64__)
    unsigned a, b, c, d;
    const int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    out[k++] = (Isa){ "avx2", codec_avx2, avx2, "CPU lacks avx2, fma or f16c" };
    out[k++] = (Isa){ "avx512", codec_avx512,
                      avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"),
                      "CPU lacks avx512f, bw, vl or dq" };
#elif defined(__aarch64__)
    out[k++] = (Isa){ "neon", codec_neon, 1, "" };
#endif
    return k;
}

/* Decode `row` (n values of f) with every ISA table; all must match the
 * reference's y exactly (NaN for NaN), and dot / axpy must be NaN exactly
 * where the reference's are. */
static void all_tables_agree(Format f, const unsigned char *row, size_t n, const float *y, const char *what)
{
    Isa isa[4];
    size_t ni = isa_list(isa);
    /* ones: calloc, or gcc (aarch64, -O2) cannot see that the loop below fills it */
    float *z = malloc(n * sizeof *z), *ones = calloc(n, sizeof *ones), *acc = malloc(n * sizeof *acc);
    for (size_t i = 0; i < n; i++)
        ones[i] = 1.0f;
    float ref_dot;
    codec_ref[f].dot(&ref_dot, ones, 1, row, n);
    for (size_t k = 0; k < ni; k++) {
        if (!isa[k].ok)
            continue;
        isa[k].ops[f].dequantize(z, row, n);
        for (size_t i = 0; i < n; i++)
            if (!same_float(z[i], y[i]))
                fail_msg("%s %s %s: value %zu is %.9g, the reference %.9g", isa[k].name, format_name(f), what, i,
                         z[i], y[i]);
        float dot;
        isa[k].ops[f].dot(&dot, ones, 1, row, n);
        assert_int_equal(isnan(dot) != 0, isnan(ref_dot) != 0);
        memset(acc, 0, n * sizeof *acc);
        const float w = 1.0f;
        isa[k].ops[f].axpy(acc, &w, 1, row, n);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(isnan(acc[i]) != 0, isnan(y[i]) != 0);
    }
    free(z);
    free(ones);
    free(acc);
}

/* Encode x (n values) with the reference into a fresh row, decode into y. */
static unsigned char *encode(Format f, const float *x, size_t n, float *y)
{
    unsigned char *row = malloc(format_row_bytes(f, n));
    codec_ref[f].quantize(row, x, n);
    codec_ref[f].dequantize(y, row, n);
    return row;
}

/* The code formats: bare unsigned codes, packed low bits first, with no
 * scale. Values already in code space round to the nearest code (ties away
 * from zero) and clamp to [0, 15] or [0, 3]; NaN becomes 0. */
static void test_code_formats(void **state)
{
    (void)state;
    assert_int_equal(format_row_bytes(FMT_U4, 10), 8);  /* 2 words, no scale */
    assert_int_equal(format_row_bytes(FMT_U2, 10), 4);  /* 1 word */
    assert_int_equal(format_row_bytes(FMT_U2, 17), 8);
    assert_int_equal(format_row_extra(FMT_U4) + format_row_extra(FMT_U2), 0);
    Format f;
    assert_int_equal(format_parse("u4", &f), 0);
    assert_int_equal(f, FMT_U4);
    assert_null(strstr(format_row_names, "u4")); /* not offered where rows stand alone */

    /* u4: 3, 15, 2.5 -> 3, 14.6 -> 15, 15.4 -> 15, 16 -> 15, -0.4 -> 0, -3 ->
     * 0 | NaN -> 0, 7. Code k of a word at bits 4k: word 0 = 0x00fff3f3
     * (bytes f3 f3 ff 00), word 1 = 0x70 (70 00 00 00). */
    static const float x4[10] = { 3.0f, 15.0f, 2.5f, 14.6f, 15.4f, 16.0f, -0.4f, -3.0f, NAN, 7.0f };
    static const unsigned char w4[8] = { 0xf3, 0xf3, 0xff, 0x00, 0x70, 0x00, 0x00, 0x00 };
    static const float y4[10] = { 3, 15, 3, 15, 15, 15, 0, 0, 0, 7 };
    /* u2: 0, 1, 2, 3, 1.5 -> 2, 0.49 -> 0, 3.6 -> 3, Inf -> 3, -Inf -> 0, 0.5
     * -> 1. Code k at bits 2k: word = 0 | 1 << 2 | 2 << 4 | 3 << 6 | 2 << 8
     * | 0 << 10 | 3 << 12 | 3 << 14 | 0 << 16 | 1 << 18 = 0x4f2e4 (e4 f2 04 00). */
    static const float x2[10] = { 0.0f, 1.0f, 2.0f, 3.0f, 1.5f, 0.49f, 3.6f, INFINITY, -INFINITY, 0.5f };
    static const unsigned char w2[4] = { 0xe4, 0xf2, 0x04, 0x00 };
    static const float y2[10] = { 0, 1, 2, 3, 2, 0, 3, 3, 0, 1 };
    const struct { Format f; const float *x, *y; const unsigned char *w; size_t bytes; } cases[2] = {
        { FMT_U4, x4, y4, w4, 8 }, { FMT_U2, x2, y2, w2, 4 } };
    for (int c = 0; c < 2; c++) {
        unsigned char got[8];
        float y[10];
        codec_ref[cases[c].f].quantize(got, cases[c].x, 10);
        expect_bytes(got, cases[c].w, cases[c].bytes, format_name(cases[c].f));
        codec_ref[cases[c].f].dequantize(y, got, 10);
        for (int i = 0; i < 10; i++)
            assert_true(y[i] == cases[c].y[i]);
        all_tables_agree(cases[c].f, got, 10, y, "hand-made codes");
    }

    /* every code survives the trip exactly, at every length */
    for (int c = 0; c < 2; c++) {
        const float top = cases[c].f == FMT_U4 ? 15.0f : 3.0f;
        for (size_t k = 0; k < N_LENS; k++) {
            const size_t n = lens[k];
            float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
            for (size_t i = 0; i < n; i++)
                x[i] = (float)((i * 7 + k) % (size_t)(top + 1));
            unsigned char *row = encode(cases[c].f, x, n, y);
            assert_true(memcmp(x, y, n * sizeof *x) == 0); /* tests/cross has no assert_memory_equal */
            all_tables_agree(cases[c].f, row, n, y, "every code");
            free(row);
            free(x);
            free(y);
        }
    }
}

static void test_zeros(void **state)
{
    (void)state;
    const size_t n = 40; /* a full block and a partial one */
    float x[40] = { 0 }, y[40];
    for (int f = 0; f < FMT_COUNT; f++) {
        unsigned char *row = encode((Format)f, x, n, y);
        for (size_t i = 0; i < n; i++)
            assert_true(y[i] == 0.0f); /* q4_0 gives -0.0, which == 0 */
        /* every byte zero, but q4_0: d = 0 / -8 = -0.0 (80 00... stored 00
         * 80) and codes 8 (0x88), as llama.cpp does */
        for (size_t i = 0; i < format_row_bytes((Format)f, n); i++) {
            unsigned want = 0;
            if (f == FMT_Q4_0)
                want = i % 18 == 0 ? 0x00 : i % 18 == 1 ? 0x80 : 0x88;
            assert_int_equal(row[i], want);
        }
        all_tables_agree((Format)f, row, n, y, "zeros");
        free(row);
    }
}

static void test_constant_rows(void **state)
{
    (void)state;
    const size_t n = 100;
    float x[100], y[100];
    double b[100], step[100];
    static const float consts[] = { 0.3f, -2.5f, 1000.0f };
    for (size_t c = 0; c < sizeof consts / sizeof consts[0]; c++) {
        for (size_t i = 0; i < n; i++)
            x[i] = consts[c];
        for (int f = 0; f < FMT_COUNT; f++) {
            unsigned char *row = encode((Format)f, x, n, y);
            bounds((Format)f, x, n, b, step);
            for (size_t i = 0; i < n; i++) {
                assert_true(fabs((double)y[i] - x[i]) <= b[i]);
                assert_true(y[i] == y[0]); /* one code, one scale: one value */
            }
            all_tables_agree((Format)f, row, n, y, "constant");
            free(row);
        }
    }
}

/* Largest value each format can hold: the extreme code times the clamped
 * scale 65504 (q4_0: -8 * -65504). */
static double largest(Format f)
{
    switch (f) {
    case FMT_Q8_0: return 127.0 * 65504.0;
    case FMT_Q4_0: return 8.0 * 65504.0;
    case FMT_INT4: return 7.0 * 65504.0;
    case FMT_FP4: return 6.0 * 65504.0;
    default: return INFINITY;
    }
}

static void test_huge_and_inf(void **state)
{
    (void)state;
    const size_t n = 96; /* three q8_0 / q4_0 blocks */
    float x[96], y[96];
    for (int kind = 0; kind < 2; kind++) { /* 0: huge finite values, 1: Inf */
        fill_plain(x, n, 3);
        const float big = kind ? INFINITY : 1e30f;
        x[3] = big;       /* block 0 */
        x[40] = -big;     /* block 1 */
        x[70] = 5e6f;     /* block 2: beyond f16, but q8_0's scale 39370 still fits */
        for (int f = 0; f < FMT_COUNT; f++) {
            unsigned char *row = encode((Format)f, x, n, y);
            if (f == FMT_F32) {
                assert_true(y[3] == big && y[40] == -big);
            } else if (f == FMT_F16) { /* beyond 65504: Inf */
                assert_true(isinf(y[3]) && y[3] > 0 && isinf(y[40]) && y[40] < 0 && isinf(y[70]));
            } else if (format_is_per_channel((Format)f)) { /* no scale: the ends of code space */
                assert_true(y[3] == (f == FMT_U4 ? 15.0f : 3.0f) && y[40] == 0.0f && y[70] == y[3]);
            } else {
                for (size_t i = 0; i < n; i++)
                    assert_true(isfinite(y[i]));
                /* the extreme values saturate at the largest value the block holds */
                const double L = largest((Format)f);
                assert_true(y[3] > 0 && y[3] >= L * 7.0 / 8.0 && y[3] <= L);
                assert_true(y[40] < 0 && -y[40] >= L * 7.0 / 8.0 && -y[40] <= L * 8.0 / 7.0);
                if (f == FMT_Q8_0) /* the third block is untouched: 5e6 / 127 fits fp16 */
                    assert_true(fabs(y[70] - 5e6) <= 5e6 / 127.0);
                if (f == FMT_Q8_0 || f == FMT_Q4_0) /* the Inf does not reach other blocks */
                    assert_true(fabs(y[80] - x[80]) <= 5e6 / 8.0);
            }
            all_tables_agree((Format)f, row, n, y, kind ? "inf" : "huge");
            free(row);
        }
    }
}

static void test_nan(void **state)
{
    (void)state;
    const size_t n = 72; /* blocks 0 and 1 whole, block 2 partial */
    float x[72], y[72];
    double b[72], step[72];
    fill_plain(x, n, 4);
    bounds(FMT_Q8_0, x, n, b, step); /* before the NaN */
    x[5] = NAN;
    for (int f = 0; f < FMT_COUNT; f++) {
        unsigned char *row = encode((Format)f, x, n, y);
        for (size_t i = 0; i < n; i++) {
            if (f == FMT_F32 || f == FMT_F16) /* only the NaN itself */
                assert_int_equal(isnan(y[i]) != 0, i == 5);
            else if (format_is_per_channel((Format)f)) /* a code cannot say NaN: 0, alone */
                assert_true(!isnan(y[i]) && (i != 5 || y[i] == 0.0f));
            else if (f == FMT_Q8_0 || f == FMT_Q4_0) /* its block */
                assert_int_equal(isnan(y[i]) != 0, i < 32);
            else /* the row */
                assert_true(isnan(y[i]));
        }
        if (f == FMT_Q8_0) { /* scale 0x7e00, codes 0; block 1 as without the NaN */
            assert_int_equal(row[0], 0x00);
            assert_int_equal(row[1], 0x7e);
            for (size_t i = 32; i < n; i++)
                assert_true(fabs((double)y[i] - x[i]) <= b[i]);
        }
        all_tables_agree((Format)f, row, n, y, "nan");
        free(row);
    }
}

/* --- (d) every SIMD table against the reference ------------------------------ */

typedef struct {
    double dot;   /* worst |isa - ref| / DOT bound */
    double axpy;  /* worst |isa - ref| / AXPY bound */
    double dot_rel; /* worst |isa - ref| / sum |q v| */
    double quant; /* worst round-trip error of the ISA's quantize, in steps */
} Worst;

static void check_isa_format(const Isa *isa, Format f, Worst *wst)
{
    const FormatOps *ops = &isa->ops[f], *ref = &codec_ref[f];
    for (size_t k = 0; k < N_LENS; k++) {
        const size_t n = lens[k], rb = format_row_bytes(f, n);
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
        fill(x, n, (uint32_t)(100 + k));
        to_code_space(f, x, n);
        /* the row at an odd address: rows of int4 / fp4 (4k + 2 bytes) and
         * f16 caches are not 4-aligned, and the decoders must not care */
        unsigned char *buf = malloc(rb + 1), *row = buf + 1;
        ref->quantize(row, x, n);

        /* dequantize: bit for bit */
        ref->dequantize(y, row, n);
        ops->dequantize(z, row, n);
        for (size_t i = 0; i < n; i++)
            if (!same_float(z[i], y[i]))
                fail_msg("%s %s n=%zu: dequantize[%zu] = %.9g, ref %.9g", isa->name, format_name(f), n, i, z[i],
                         y[i]);

        for (size_t gi = 0; gi < N_GROUPS; gi++) {
            const size_t G = groups[gi];
            if (G > 8 && n > 129 && G * n > 200000)
                continue; /* enough: the long rows ran with G <= 12 */
            float *q = malloc(G * n * sizeof *q), *o1 = malloc(G * sizeof *o1), *o2 = malloc(G * sizeof *o2);
            float *a1 = malloc(G * n * sizeof *a1), *a2 = malloc(G * n * sizeof *a2), *w = malloc(G * sizeof *w);
            fill_plain(q, G * n, (uint32_t)(G * 31 + k));
            fill_plain(w, G, (uint32_t)(G + 5));
            fill_plain(a1, G * n, (uint32_t)(G + k + 9));
            memcpy(a2, a1, G * n * sizeof *a1);

            /* dot */
            ref->dot(o1, q, G, row, n);
            ops->dot(o2, q, G, row, n);
            for (size_t g = 0; g < G; g++) {
                double mag = 0.0;
                for (size_t i = 0; i < n; i++)
                    mag += fabs((double)q[g * n + i] * y[i]);
                const double tol = DOT_ROUNDINGS(n) * U_F32 * mag, diff = fabs((double)o2[g] - o1[g]);
                if (!(diff <= tol))
                    fail_msg("%s %s n=%zu G=%zu: dot[%zu] = %.9g, ref %.9g (diff %.3g > tol %.3g)", isa->name,
                             format_name(f), n, G, g, o2[g], o1[g], diff, tol);
                if (tol > 0 && diff / tol > wst->dot)
                    wst->dot = diff / tol;
                if (mag > 0 && diff / mag > wst->dot_rel)
                    wst->dot_rel = diff / mag;
            }

            /* axpy */
            float *a0 = malloc(G * n * sizeof *a0);
            memcpy(a0, a1, G * n * sizeof *a1);
            ref->axpy(a1, w, G, row, n);
            ops->axpy(a2, w, G, row, n);
            for (size_t g = 0; g < G; g++)
                for (size_t i = 0; i < n; i++) {
                    const size_t e = g * n + i;
                    const double tol = AXPY_ROUNDINGS * U_F32 * (fabs((double)a0[e]) + fabs((double)w[g] * y[i]));
                    const double diff = fabs((double)a2[e] - a1[e]);
                    if (!(diff <= tol))
                        fail_msg("%s %s n=%zu G=%zu: axpy[%zu][%zu] = %.9g, ref %.9g", isa->name, format_name(f),
                                 n, G, g, i, a2[e], a1[e]);
                    if (tol > 0 && diff / tol > wst->axpy)
                        wst->axpy = diff / tol;
                }
            free(a0);
            free(q);
            free(o1);
            free(o2);
            free(a1);
            free(a2);
            free(w);
        }

        /* quantize: the ISA's bytes decode (with the reference) within the
         * format's bound; f16's and q8_0's must be the reference's bytes */
        double wq = check_round_trip(f, ops->quantize, x, n, isa->name);
        wst->quant = wq > wst->quant ? wq : wst->quant;
        unsigned char *mine = malloc(rb);
        ops->quantize(mine, x, n);
        if (f == FMT_F16 || f == FMT_Q8_0 || ops->quantize == ref->quantize)
            expect_bytes(mine, row, rb, "quantize");
        free(mine);
        free(buf);
        free(x);
        free(y);
        free(z);
    }
}

/* --- (e) the tile forms against the reference --------------------------------- */

typedef struct {
    double dot, axpy; /* worst |isa - ref| / bound */
    size_t cases;
} TileWorst;

/* n_rows rows of n values in format f, `stride` bytes apart from an odd
 * address (rows of int4 / fp4 and f16 are not 4-aligned in caches), each
 * with its own values; y: their decoded values [n_rows][n]. nan_row: a row
 * holding one NaN (or n_rows for none). */
static unsigned char *tile_rows_make(Format f, size_t n, size_t n_rows, size_t stride, size_t nan_row, float *y,
                                     unsigned char **buf)
{
    *buf = calloc(n_rows * stride + 1, 1);
    unsigned char *rows = *buf + 1;
    float *x = malloc(n * sizeof *x);
    for (size_t r = 0; r < n_rows; r++) {
        fill(x, n, (uint32_t)(7 * r + n));
        to_code_space(f, x, n);
        if (r == nan_row)
            x[n / 2] = NAN;
        codec_ref[f].quantize(rows + r * stride, x, n);
        codec_ref[f].dequantize(y + r * n, rows + r * stride, n);
    }
    free(x);
    return rows;
}

/* One (format, n, G, n_rows): dot_rows and axpy_rows of `ops` against the
 * reference's, within the bounds above; the scores are written at ld =
 * n_rows + 3 and the gaps between heads must stay untouched. */
static void check_tile(const char *name, const FormatOps *ops, Format f, size_t n, size_t G, size_t n_rows,
                       TileWorst *tw)
{
    const FormatOps *ref = &codec_ref[f];
    const size_t stride = format_row_bytes(f, n) + 5, ld = n_rows + 3;
    unsigned char *buf;
    float *y = malloc(n_rows * n * sizeof *y);
    const unsigned char *rows = tile_rows_make(f, n, n_rows, stride, n_rows, y, &buf);
    float *q = malloc(G * n * sizeof *q), *w = malloc(G * ld * sizeof *w);
    float *o1 = malloc(G * ld * sizeof *o1), *o2 = malloc(G * ld * sizeof *o2);
    float *a0 = malloc(G * n * sizeof *a0), *a1 = malloc(G * n * sizeof *a1), *a2 = malloc(G * n * sizeof *a2);
    fill_plain(q, G * n, (uint32_t)(G * 131 + n));
    fill_plain(w, G * ld, (uint32_t)(G + n_rows));
    fill_plain(a0, G * n, (uint32_t)(G + n + 17));
    for (size_t e = 0; e < G * ld; e++)
        o1[e] = o2[e] = -12345.0f; /* the gaps must keep it */

    ref->dot_rows(o1, ld, q, G, rows, stride, n_rows, n, NULL);
    ops->dot_rows(o2, ld, q, G, rows, stride, n_rows, n, NULL);
    for (size_t g = 0; g < G; g++) {
        for (size_t r = 0; r < n_rows; r++) {
            double mag = 0.0;
            for (size_t i = 0; i < n; i++)
                mag += fabs((double)q[g * n + i] * y[r * n + i]);
            const size_t e = g * ld + r;
            const double tol = DOT_ROUNDINGS(n) * U_F32 * mag, diff = fabs((double)o2[e] - o1[e]);
            if (!(diff <= tol))
                fail_msg("%s %s n=%zu G=%zu rows=%zu: dot_rows[%zu][%zu] = %.9g, ref %.9g (diff %.3g > tol %.3g)",
                         name, format_name(f), n, G, n_rows, g, r, o2[e], o1[e], diff, tol);
            if (tol > 0 && diff / tol > tw->dot)
                tw->dot = diff / tol;
        }
        for (size_t r = n_rows; r < ld; r++)
            if (o2[g * ld + r] != -12345.0f)
                fail_msg("%s %s n=%zu G=%zu rows=%zu: dot_rows wrote out[%zu * ld + %zu], past the rows", name,
                         format_name(f), n, G, n_rows, g, r);
    }

    memcpy(a1, a0, G * n * sizeof *a0);
    memcpy(a2, a0, G * n * sizeof *a0);
    ref->axpy_rows(a1, w, ld, G, rows, stride, n_rows, n);
    ops->axpy_rows(a2, w, ld, G, rows, stride, n_rows, n);
    for (size_t g = 0; g < G; g++)
        for (size_t i = 0; i < n; i++) {
            const size_t e = g * n + i;
            double mag = fabs((double)a0[e]);
            for (size_t r = 0; r < n_rows; r++)
                mag += fabs((double)w[g * ld + r] * y[r * n + i]);
            const double tol = AXPY_ROUNDINGS * (double)n_rows * U_F32 * mag, diff = fabs((double)a2[e] - a1[e]);
            if (!(diff <= tol))
                fail_msg("%s %s n=%zu G=%zu rows=%zu: axpy_rows[%zu][%zu] = %.9g, ref %.9g (diff %.3g > tol %.3g)",
                         name, format_name(f), n, G, n_rows, g, i, a2[e], a1[e], diff, tol);
            if (tol > 0 && diff / tol > tw->axpy)
                tw->axpy = diff / tol;
        }

    /* the per-row forms are a tile of one row: the same bits */
    if (n_rows == 1) {
        float *o3 = malloc(G * sizeof *o3), *o4 = malloc(G * sizeof *o4), *w1 = malloc(G * sizeof *w1);
        ops->dot(o3, q, G, rows, n);
        ops->dot_rows(o4, 1, q, G, rows, stride, 1, n, NULL);
        for (size_t g = 0; g < G; g++)
            w1[g] = w[g * ld];
        memcpy(a1, a0, G * n * sizeof *a0);
        memcpy(a2, a0, G * n * sizeof *a0);
        ops->axpy(a1, w1, G, rows, n);
        ops->axpy_rows(a2, w1, 1, G, rows, stride, 1, n);
        assert_true(memcmp(o3, o4, G * sizeof *o3) == 0);
        assert_true(memcmp(a1, a2, G * n * sizeof *a1) == 0);
        free(o3);
        free(o4);
        free(w1);
    }
    tw->cases++;
    free(buf);
    free(y);
    free(q);
    free(w);
    free(o1);
    free(o2);
    free(a0);
    free(a1);
    free(a2);
}

/* A NaN in one row of a tile: the scores and sums are NaN exactly where
 * the reference's are (that row's score; the sums it reaches), the other
 * rows' scores stay finite. */
static void check_tile_nan(const char *name, const FormatOps *ops, Format f)
{
    const size_t n = 40, n_rows = 9, G = 4, nan_row = 5, stride = format_row_bytes(f, n);
    unsigned char *buf;
    float y[9 * 40], q[4 * 40], w[4 * 9], o1[4 * 9], o2[4 * 9], a1[4 * 40] = { 0 }, a2[4 * 40] = { 0 };
    const unsigned char *rows = tile_rows_make(f, n, n_rows, stride, nan_row, y, &buf);
    fill_plain(q, G * n, 11);
    fill_plain(w, G * n_rows, 12);
    codec_ref[f].dot_rows(o1, n_rows, q, G, rows, stride, n_rows, n, NULL);
    ops->dot_rows(o2, n_rows, q, G, rows, stride, n_rows, n, NULL);
    for (size_t e = 0; e < G * n_rows; e++) {
        if ((isnan(o1[e]) != 0) != (isnan(o2[e]) != 0))
            fail_msg("%s %s: dot_rows[%zu][%zu] = %g, ref %g", name, format_name(f), e / n_rows, e % n_rows, o2[e],
                     o1[e]);
        /* codes cannot hold a NaN (it encodes as 0): every score stays finite */
        assert_int_equal(isnan(o2[e]) != 0, !format_is_per_channel(f) && e % n_rows == nan_row);
    }
    codec_ref[f].axpy_rows(a1, w, n_rows, G, rows, stride, n_rows, n);
    ops->axpy_rows(a2, w, n_rows, G, rows, stride, n_rows, n);
    for (size_t e = 0; e < G * n; e++)
        if ((isnan(a1[e]) != 0) != (isnan(a2[e]) != 0))
            fail_msg("%s %s: axpy_rows[%zu][%zu] = %g, ref %g", name, format_name(f), e / n, e % n, a2[e], a1[e]);
    free(buf);
}

static void check_isa_tiles(const Isa *isa, Format f, TileWorst *tw)
{
    for (size_t li = 0; li < N_OF(tile_lens); li++)
        for (size_t gi = 0; gi < N_OF(tile_groups); gi++)
            for (size_t ri = 0; ri < N_OF(tile_rows); ri++)
                check_tile(isa->name, &isa->ops[f], f, tile_lens[li], tile_groups[gi], tile_rows[ri], tw);
    check_tile(isa->name, &isa->ops[f], f, 4096, 4, 7, tw); /* long rows: the blocks of chunks repeat */
    check_tile(isa->name, &isa->ops[f], f, 128, 70, 9, tw); /* a large group */
    check_tile_nan(isa->name, &isa->ops[f], f);
}

/* f16 in hardware against the reference: all 65536 halves decoded, and the
 * conversion of rounding edges, specials and random bit patterns. */
static void check_isa_f16(const Isa *isa)
{
    const size_t n = 65536;
    uint16_t *h = malloc(n * sizeof *h), *h1 = malloc(n * sizeof *h1), *h2 = malloc(n * sizeof *h2);
    float *y1 = malloc(n * sizeof *y1), *y2 = malloc(n * sizeof *y2), *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        h[i] = (uint16_t)i;
    codec_ref[FMT_F16].dequantize(y1, h, n);
    isa->ops[FMT_F16].dequantize(y2, h, n);
    for (size_t i = 0; i < n; i++)
        if (!same_float(y1[i], y2[i]))
            fail_msg("%s f16: half 0x%04zx decodes to %.9g, ref %.9g", isa->name, i, y2[i], y1[i]);

    uint32_t s = 12345;
    static const float edges[] = { 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65519.0f, 65520.0f, 1e30f,
                                   0x1p-24f, 0x1p-25f, 0x1.000002p-25f, 1.5f * 0x1p-24f, 0x1.ffcp-15f, -0.0f };
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = lcg(&s);
        memcpy(&x[i], &bits, sizeof bits);
        if (i % 3 == 0) /* plenty within fp16's range too */
            x[i] = unit(&s) * (float)(1u << (i % 17)) / 256.0f;
    }
    memcpy(x, edges, sizeof edges);
    x[20] = INFINITY;
    x[21] = -INFINITY;
    x[22] = NAN;
    codec_ref[FMT_F16].quantize(h1, x, n);
    isa->ops[FMT_F16].quantize(h2, x, n);
    for (size_t i = 0; i < n; i++)
        if (h1[i] != h2[i])
            fail_msg("%s f16: %.9g encodes to 0x%04x, ref 0x%04x", isa->name, x[i], h2[i], h1[i]);
    free(h);
    free(h1);
    free(h2);
    free(y1);
    free(y2);
    free(x);
}

/* Every table's q8_0 quantizer against the reference's bytes where they
 * part most easily: ties (x / d = k + 1/2, away from zero), a scale past
 * fp16's range, a NaN, zeros, and a short last block. */
static void test_q8_0_bytes_every_table(void **state)
{
    (void)state;
    enum { N = 5 * QK8_0 + 5 };
    float x[N] = { 0 };
    static const float ties[8] = { -127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 126.5f, -126.5f, 1.5f };
    for (int j = 0; j < QK8_0; j++) {
        x[j] = j < 8 ? ties[j] : (float)(j - 16) + 0.5f; /* block 0: d = 1, every code a tie */
        x[QK8_0 + j] = 127.0f * 65512.0f * (j == 0 ? 1.0f : (float)(j - 16) / 17.0f); /* block 1: d > 65504 */
        x[2 * QK8_0 + j] = (float)j * 0.37f - 3.0f;                                   /* block 2: a NaN */
        x[4 * QK8_0 + j] = (float)(j * j) / 7.0f - 40.0f;                              /* block 4; block 3 zeros */
    }
    x[QK8_0 + 1] = 100.49f * 65512.0f; /* 101 against the clamped scale, 100 against d (test_q8_0_bytes) */
    x[2 * QK8_0 + 5] = NAN;
    for (int j = 0; j < 5; j++)
        x[5 * QK8_0 + j] = (float)j - 2.5f;
    unsigned char want[6 * sizeof(BlockQ8_0)], got[6 * sizeof(BlockQ8_0)];
    const size_t rb = format_row_bytes(FMT_Q8_0, N);
    codec_ref[FMT_Q8_0].quantize(want, x, N);
    Isa isa[4];
    size_t ni = isa_list(isa), ran = 0;
    for (size_t k = 0; k < ni; k++)
        if (isa[k].ok) {
            memset(got, 0xa5, sizeof got);
            isa[k].ops[FMT_Q8_0].quantize(got, x, N);
            expect_bytes(got, want, rb, isa[k].name);
            ran++;
        }
    printf("  q8_0 quantize: %zu SIMD table(s) wrote the reference's %zu bytes\n", ran, rb);
}

static void test_isa_tables(void **state)
{
    (void)state;
    Isa isa[4];
    size_t ni = isa_list(isa);
    if (ni == 0)
        printf("  no SIMD codec tables on this architecture\n");
    for (size_t k = 0; k < ni; k++) {
        if (!isa[k].ok) {
            printf("  codec %-6s skipped: %s\n", isa[k].name, isa[k].why);
            continue;
        }
        printf("  codec %-6s ran; worst dot error / bound, dot error / sum|q v|, axpy / bound, quantize (steps):\n",
               isa[k].name);
        for (int f = 0; f < FMT_COUNT; f++) {
            Worst wst = { 0 };
            check_isa_format(&isa[k], (Format)f, &wst);
            printf("    %-5s dot %.3f  %.2e  axpy %.3f  quantize %.4f\n", format_name((Format)f), wst.dot,
                   wst.dot_rel, wst.axpy, wst.quant);
        }
        check_isa_f16(&isa[k]);
    }
}

/* The reference's tiles are its per-row forms row after row, bit for bit
 * (the oracle's indexing: ld, stride, the heads' runs). */
static void check_ref_tile(Format f, size_t n, size_t G, size_t n_rows)
{
    const FormatOps *ref = &codec_ref[f];
    const size_t stride = format_row_bytes(f, n) + 3, ld = n_rows + 2;
    unsigned char *buf;
    float *y = malloc(n_rows * n * sizeof *y);
    const unsigned char *rows = tile_rows_make(f, n, n_rows, stride, n_rows, y, &buf);
    float *q = malloc(G * n * sizeof *q), *w = malloc(G * ld * sizeof *w), *o1 = malloc(G * ld * sizeof *o1);
    float *o2 = malloc(G * sizeof *o2), *w1 = malloc(G * sizeof *w1);
    float *a1 = calloc(G * n, sizeof *a1), *a2 = calloc(G * n, sizeof *a2);
    fill_plain(q, G * n, 3);
    fill_plain(w, G * ld, 4);
    ref->dot_rows(o1, ld, q, G, rows, stride, n_rows, n, NULL);
    ref->axpy_rows(a1, w, ld, G, rows, stride, n_rows, n);
    for (size_t r = 0; r < n_rows; r++) {
        ref->dot(o2, q, G, rows + r * stride, n);
        for (size_t g = 0; g < G; g++) {
            assert_true(memcmp(&o1[g * ld + r], &o2[g], sizeof *o2) == 0);
            w1[g] = w[g * ld + r];
        }
        ref->axpy(a2, w1, G, rows + r * stride, n);
    }
    assert_true(memcmp(a1, a2, G * n * sizeof *a1) == 0);
    free(buf);
    free(y);
    free(q);
    free(w);
    free(o1);
    free(o2);
    free(w1);
    free(a1);
    free(a2);
}

/* A SIMD table's tiles give the same bits however the rows are cut into
 * calls (a paged cache's runs): each row's dot sum, and the order in which
 * rows are added, must not depend on where a call starts or ends (nor on
 * rows to prefetch: the whole run's call has them, the cut calls not). */
static void check_isa_cuts(const Isa *isa, Format f, size_t n, size_t G)
{
    enum { ROWS = 65 };
    const FormatOps *ops = &isa->ops[f];
    const size_t stride = format_row_bytes(f, n), ld = ROWS + 1, sizes[] = { 1, 7, 2, 9, 4, 13, 3 };
    unsigned char *buf;
    float *y = malloc(ROWS * n * sizeof *y);
    const unsigned char *rows = tile_rows_make(f, n, ROWS, stride, ROWS, y, &buf);
    float *q = malloc(G * n * sizeof *q), *w = malloc(G * ld * sizeof *w);
    float *o1 = calloc(G * ld, sizeof *o1), *o2 = calloc(G * ld, sizeof *o2);
    float *a1 = calloc(G * n, sizeof *a1), *a2 = calloc(G * n, sizeof *a2);
    fill_plain(q, G * n, 5);
    fill_plain(w, G * ld, 6);
    const RowsAhead ahead = { rows, stride, format_row_bytes(f, n) }; /* prefetching changes no score */
    ops->dot_rows(o1, ld, q, G, rows, stride, ROWS, n, &ahead);
    ops->axpy_rows(a1, w, ld, G, rows, stride, ROWS, n);
    for (size_t r = 0, k = 0; r < ROWS; k++) {
        const size_t take = ROWS - r < sizes[k % N_OF(sizes)] ? ROWS - r : sizes[k % N_OF(sizes)];
        ops->dot_rows(o2 + r, ld, q, G, rows + r * stride, stride, take, n, NULL);
        ops->axpy_rows(a2, w + r, ld, G, rows + r * stride, stride, take, n);
        r += take;
    }
    for (size_t g = 0; g < G; g++)
        if (memcmp(o1 + g * ld, o2 + g * ld, ROWS * sizeof *o1))
            fail_msg("%s %s dot_rows, n %zu, G %zu: cut into calls, head %zu's scores change", isa->name,
                     format_name(f), n, G, g);
    if (memcmp(a1, a2, G * n * sizeof *a1))
        fail_msg("%s %s axpy_rows, n %zu, G %zu: cut into calls, the sums change", isa->name, format_name(f), n, G);
    free(buf);
    free(y);
    free(q);
    free(w);
    free(o1);
    free(o2);
    free(a1);
    free(a2);
}

static void test_tiles_cut_anywhere(void **state)
{
    (void)state;
    Isa isa[4];
    const size_t ni = isa_list(isa), lengths[] = { 32, 33, 80, 128, 176, 256 }; /* 80, 176: chunks past whole fours (AVX2, AVX-512); 128, 256: 16 chunks */
    for (size_t k = 0; k < ni; k++)
        for (int f = 0; isa[k].ok && f < FMT_COUNT; f++)
            for (size_t l = 0; l < N_OF(lengths); l++)
                for (size_t G = 1; G <= 5; G++)
                    check_isa_cuts(&isa[k], (Format)f, lengths[l], G);
}

/* The tile forms: the reference's against its per-row forms, then every
 * SIMD table this CPU runs against the reference's. */
static void test_tiles(void **state)
{
    (void)state;
    for (int f = 0; f < FMT_COUNT; f++)
        for (size_t ri = 0; ri < N_OF(tile_rows); ri++) {
            check_ref_tile((Format)f, 33, 3, tile_rows[ri]);
            check_ref_tile((Format)f, 128, 1, tile_rows[ri]);
        }
    printf("  tiles ref    agree with its per-row forms\n");
    Isa isa[4];
    size_t ni = isa_list(isa);
    if (ni == 0)
        printf("  no SIMD codec tables on this architecture\n");
    for (size_t k = 0; k < ni; k++) {
        if (!isa[k].ok) {
            printf("  tiles %-6s skipped: %s\n", isa[k].name, isa[k].why);
            continue;
        }
        printf("  tiles %-6s ran; worst dot_rows error / bound, axpy_rows error / bound:\n", isa[k].name);
        for (int f = 0; f < FMT_COUNT; f++) {
            TileWorst tw = { 0 };
            check_isa_tiles(&isa[k], (Format)f, &tw);
            printf("    %-5s dot_rows %.3f  axpy_rows %.3f  (%zu cases)\n", format_name((Format)f), tw.dot, tw.axpy,
                   tw.cases);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_conversions),
        cmocka_unit_test(test_round_trip_bounds),
        cmocka_unit_test(test_q8_0_bytes),
        cmocka_unit_test(test_q4_0_bytes),
        cmocka_unit_test(test_int4_fp4_bytes),
        cmocka_unit_test(test_code_formats),
        cmocka_unit_test(test_zeros),
        cmocka_unit_test(test_constant_rows),
        cmocka_unit_test(test_huge_and_inf),
        cmocka_unit_test(test_nan),
        cmocka_unit_test(test_q8_0_bytes_every_table),
        cmocka_unit_test(test_isa_tables),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_tiles_cut_anywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
