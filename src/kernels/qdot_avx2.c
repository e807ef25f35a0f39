/* qdot_avx2.c: the integer dot of q8_0 and q4_0 rows with a q8_0
 * activation (kernels.h, QDotFn) on AVX2, as llama.cpp computes it.
 *
 * A block is 32 codes: signed bytes times signed bytes, which maddubs (an
 * unsigned times signed byte product, summed in pairs) takes once the sign
 * of w is moved onto x: |w| * (x * sign(w)). The pairs are summed to 8
 * int32 lanes, exactly, turned to floats and scaled by the two blocks'
 * scales into the row's accumulators. Rows are read once, in order: what
 * bounds a decode step is how fast this turns bytes into sums. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels_isa.h"

#define QK 32
/* Blocks of x (all G vectors together) whose scales are kept as floats on
 * the stack; more go to the reference (no model here comes near: 4096
 * blocks = 131072 values, or 32 heads of 128 x 32 blocks). */
#define QDOT_MAX_BLOCKS 4096

static inline float half_at(const unsigned char *p)
{
    unsigned short h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* A q4_0 block's 16 bytes as 32 unsigned nibbles in [0, 15] (code + 8), in
 * element order. */
static inline __m256i q4_nibbles(const unsigned char *qs)
{
    const __m128i raw = _mm_loadu_si128((const __m128i *)qs);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw); /* high nibbles: elements 16..31 */
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

/* 8 lanes of exact partial sums of nibble . x over one block: the nibbles
 * are unsigned already, so maddubs takes them as they are. */
/* u . x over a block as 8 lanes of exact partial sums, floats: maddubs
 * (unsigned u times signed x, in pairs), then the pairs summed. */
static inline __m256 pair_sums(__m256i u, __m256i x)
{
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
}

static inline __m256 nibble_dot(__m256i u, __m256i x)
{
    return pair_sums(u, x);
}

/* 8 lanes of exact partial sums of w . x over one block, as floats. */
static inline __m256 block_dot(__m256i w, __m256i x)
{
    return pair_sums(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

static inline __m256i q8_codes(const unsigned char *block)
{
    return _mm256_loadu_si256((const __m256i *)(block + 2));
}

static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* q4_0 rows: sum (u - 8) x = sum u x - 8 sum x, the second part a float
 * per block of x computed once (xcorr), the first straight from maddubs. */
static void qdot_q4_0(float *y, const unsigned char *rows, size_t stride, size_t n_rows, const unsigned char *x,
                      const float *dx, const float *xcorr, size_t nb)
{
    const size_t wb = format_block_bytes(FMT_Q4_0), xb = format_block_bytes(FMT_Q8_0);
    for (size_t r = 0; r < n_rows; r++) {
        const unsigned char *w = rows + r * stride;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        float corr = 0.0f;
        size_t b = 0;
        for (; b + 1 < nb; b += 2) {
            const unsigned char *w0 = w + b * wb, *w1 = w0 + wb;
            const float d0 = half_at(w0), d1 = half_at(w1);
            const __m256i x0 = _mm256_loadu_si256((const __m256i *)(x + b * xb + 2));
            const __m256i x1 = _mm256_loadu_si256((const __m256i *)(x + (b + 1) * xb + 2));
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d0 * dx[b]), nibble_dot(q4_nibbles(w0 + 2), x0), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d1 * dx[b + 1]), nibble_dot(q4_nibbles(w1 + 2), x1), acc1);
            corr += d0 * xcorr[b] + d1 * xcorr[b + 1];
        }
        if (b < nb) {
            const unsigned char *w0 = w + b * wb;
            const float d0 = half_at(w0);
            const __m256i x0 = _mm256_loadu_si256((const __m256i *)(x + b * xb + 2));
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d0 * dx[b]), nibble_dot(q4_nibbles(w0 + 2), x0), acc0);
            corr += d0 * xcorr[b];
        }
        y[r] = hsum(_mm256_add_ps(acc0, acc1)) + corr;
    }
}

static void qdot_q8_0(float *y, const unsigned char *rows, size_t stride, size_t n_rows, const unsigned char *x,
                      const float *dx, size_t nb)
{
    const size_t wb = format_block_bytes(FMT_Q8_0), xb = format_block_bytes(FMT_Q8_0);
    for (size_t r = 0; r < n_rows; r++) {
        const unsigned char *w = rows + r * stride;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        size_t b = 0;
        for (; b + 1 < nb; b += 2) { /* two blocks at a time: two independent chains */
            const unsigned char *w0 = w + b * wb, *w1 = w0 + wb;
            const __m256i x0 = _mm256_loadu_si256((const __m256i *)(x + b * xb + 2));
            const __m256i x1 = _mm256_loadu_si256((const __m256i *)(x + (b + 1) * xb + 2));
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half_at(w0) * dx[b]), block_dot(q8_codes(w0), x0), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(half_at(w1) * dx[b + 1]), block_dot(q8_codes(w1), x1), acc1);
        }
        if (b < nb) {
            const unsigned char *w0 = w + b * wb;
            const __m256i x0 = _mm256_loadu_si256((const __m256i *)(x + b * xb + 2));
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half_at(w0) * dx[b]), block_dot(q8_codes(w0), x0), acc0);
        }
        y[r] = hsum(_mm256_add_ps(acc0, acc1));
    }
}

/* G > 1 (a GQA group scoring keys): each row's block is loaded and
 * unpacked once, then dotted with the block of up to 4 vectors at a time,
 * one accumulator each (4 independent chains). xs: the G vectors' codes
 * (xb bytes a block); dx, xcorr: [G][nb]. */
static void qdot_group(float *y, size_t ld, Format fmt, const unsigned char *rows, size_t stride, size_t n_rows,
                       const unsigned char *xs, const float *dx, const float *xcorr, size_t G, size_t nb)
{
    const size_t wb = format_block_bytes(fmt), xb = format_block_bytes(FMT_Q8_0), xrow = nb * xb;
    const int q4 = fmt == FMT_Q4_0;
    for (size_t g0 = 0; g0 < G; g0 += 4) {
        const size_t gn = G - g0 < 4 ? G - g0 : 4;
        for (size_t r = 0; r < n_rows; r++) {
            const unsigned char *w = rows + r * stride;
            __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
            float corr[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
            for (size_t b = 0; b < nb; b++) {
                const unsigned char *wblk = w + b * wb;
                const float dw = half_at(wblk);
                const __m256i codes = q4 ? q4_nibbles(wblk + 2) : q8_codes(wblk);
                const __m256i mag = q4 ? codes : _mm256_sign_epi8(codes, codes); /* maddubs' unsigned side */
                for (size_t j = 0; j < gn; j++) {
                    const size_t g = g0 + j;
                    const __m256i x = _mm256_loadu_si256((const __m256i *)(xs + g * xrow + b * xb + 2));
                    const __m256 p = pair_sums(mag, q4 ? x : _mm256_sign_epi8(x, codes));
                    acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * dx[g * nb + b]), p, acc[j]);
                    if (q4)
                        corr[j] += dw * xcorr[g * nb + b];
                }
            }
            for (size_t j = 0; j < gn; j++)
                y[(g0 + j) * ld + r] = hsum(acc[j]) + corr[j];
        }
    }
}

void qdot_avx2(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
               size_t G, size_t n)
{
    const size_t nb = n / QK, xb = format_block_bytes(FMT_Q8_0);
    if (G * nb > QDOT_MAX_BLOCKS || (fmt != FMT_Q8_0 && fmt != FMT_Q4_0)) {
        qdot_ref(y, ld, fmt, rows, stride, n_rows, xq, G, n);
        return;
    }
    const unsigned char *x = xq;
    float dx[QDOT_MAX_BLOCKS], xcorr[QDOT_MAX_BLOCKS]; /* [G][nb]; xcorr: -8 * (sum of the block's codes) * scale */
    for (size_t b = 0; b < G * nb; b++) {
        dx[b] = half_at(x + b * xb);
        if (fmt == FMT_Q4_0) {
            int sum = 0;
            for (size_t j = 0; j < QK; j++)
                sum += (int8_t)x[b * xb + 2 + j];
            xcorr[b] = -8.0f * (float)sum * dx[b];
        }
    }
    if (G > 1)
        qdot_group(y, ld, fmt, rows, stride, n_rows, x, dx, xcorr, G, nb);
    else if (fmt == FMT_Q4_0)
        qdot_q4_0(y, rows, stride, n_rows, x, dx, xcorr, nb);
    else
        qdot_q8_0(y, rows, stride, n_rows, x, dx, nb);
}
