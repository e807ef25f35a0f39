/* qdot_avx2.c: the integer dot of q8_0 and q4_0 rows with a q8_0
 * activation (kernels.h, QDotFn) on AVX2, as llama.cpp computes it.
 *
 * A block is 32 codes: signed bytes times signed bytes, which maddubs (an
 * unsigned times signed byte product, summed in pairs) takes once the sign
 * of w is moved onto x: |w| * (x * sign(w)). The pairs are summed to 8
 * int32 lanes, exactly, turned to floats and scaled by the two blocks'
 * scales into the row's accumulators. A matrix's rows are read once, four
 * side by side from four parts of it (qdot_rows): a decode step is bound
 * by how fast the memory delivers them and this turns bytes into sums. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels_isa.h"

#define QK 32
/* Blocks of x (all G vectors together) whose scales are kept as floats on
 * the stack; more go to the reference (no model here comes near: 4096
 * blocks = 131072 values, the longest row of a matrix). */
#define QDOT_MAX_BLOCKS 4096

static inline float half_at(const unsigned char *p)
{
    unsigned short h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* A block's f16 scale times dxb in all 8 lanes: broadcast as a half, then
 * converted (cheaper than a scalar conversion and a broadcast). */
static inline __m256 block_scale(const unsigned char *blk, __m256 dxb)
{
    short h;
    memcpy(&h, blk, sizeof h);
    return _mm256_mul_ps(_mm256_cvtph_ps(_mm_set1_epi16(h)), dxb);
}

/* A q4_0 block's 16 bytes as 32 unsigned nibbles in [0, 15] (code + 8), in
 * element order: the bytes in both halves (a broadcast load), the upper
 * half shifted down 4 (a per-lane shift: no cross-lane insert, which costs
 * more), then the low 4 bits of each byte. */
static inline __m256i q4_nibbles(const unsigned char *qs)
{
    const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    const __m256i both = _mm256_srlv_epi64(raw, _mm256_set_epi64x(4, 4, 0, 0)); /* high nibbles: elements 16..31 */
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

/* u . x over a block as 8 lanes of exact partial sums, floats: maddubs
 * (unsigned u times signed x, in pairs), then the pairs summed. */
static inline __m256 pair_sums(__m256i u, __m256i x)
{
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
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

/* Rows read side by side: one from each of QDOT_STREAMS far-apart parts of
 * the matrix, so the memory system has that many sequential streams in
 * flight (one stream from one core reads well below the bandwidth). */
#define QDOT_STREAMS 4

/* q8_0 . q8_0 of one row. */
static float row_q8_0(const unsigned char *w, const unsigned char *x, const float *dx, size_t nb)
{
    const size_t wb = format_block_bytes(FMT_Q8_0), xb = format_block_bytes(FMT_Q8_0);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++, w += wb, x += xb)
        acc = _mm256_fmadd_ps(block_scale(w, _mm256_set1_ps(dx[b])), block_dot(q8_codes(w), q8_codes(x)), acc);
    return hsum(acc);
}

/* The same for four rows side by side, each block of x loaded once. */
static void rows4_q8_0(float *y0, float *y1, float *y2, float *y3, const unsigned char *w0, const unsigned char *w1,
                       const unsigned char *w2, const unsigned char *w3, const unsigned char *x, const float *dx,
                       size_t nb)
{
    const size_t wb = format_block_bytes(FMT_Q8_0), xb = format_block_bytes(FMT_Q8_0);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t b = 0; b < nb; b++, w0 += wb, w1 += wb, w2 += wb, w3 += wb, x += xb) {
        const __m256i xv = q8_codes(x);
        const __m256 d = _mm256_set1_ps(dx[b]);
        a0 = _mm256_fmadd_ps(block_scale(w0, d), block_dot(q8_codes(w0), xv), a0);
        a1 = _mm256_fmadd_ps(block_scale(w1, d), block_dot(q8_codes(w1), xv), a1);
        a2 = _mm256_fmadd_ps(block_scale(w2, d), block_dot(q8_codes(w2), xv), a2);
        a3 = _mm256_fmadd_ps(block_scale(w3, d), block_dot(q8_codes(w3), xv), a3);
    }
    *y0 = hsum(a0), *y1 = hsum(a1), *y2 = hsum(a2), *y3 = hsum(a3);
}

/* q4_0 . q8_0 of one block into acc: sum (u - 8) x, as the pair sums of
 * u x (maddubs takes the unsigned nibbles as they are) less those of 8 x,
 * which depend on x alone (eights: once a block for every row). */
static inline __m256 nibble_block(const unsigned char *blk, __m256i xv, __m256i eights, __m256 d, __m256 acc)
{
    const __m256i ux = _mm256_madd_epi16(_mm256_maddubs_epi16(q4_nibbles(blk + 2), xv), _mm256_set1_epi16(1));
    return _mm256_fmadd_ps(block_scale(blk, d), _mm256_cvtepi32_ps(_mm256_sub_epi32(ux, eights)), acc);
}

static inline __m256i eight_sums(__m256i xv)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(8), xv), _mm256_set1_epi16(1));
}

static float row_q4_0(const unsigned char *w, const unsigned char *x, const float *dx, size_t nb)
{
    const size_t wb = format_block_bytes(FMT_Q4_0), xb = format_block_bytes(FMT_Q8_0);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++, w += wb, x += xb) {
        const __m256i xv = q8_codes(x);
        acc = nibble_block(w, xv, eight_sums(xv), _mm256_set1_ps(dx[b]), acc);
    }
    return hsum(acc);
}

static void rows4_q4_0(float *y0, float *y1, float *y2, float *y3, const unsigned char *w0, const unsigned char *w1,
                       const unsigned char *w2, const unsigned char *w3, const unsigned char *x, const float *dx,
                       size_t nb)
{
    const size_t wb = format_block_bytes(FMT_Q4_0), xb = format_block_bytes(FMT_Q8_0);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t b = 0; b < nb; b++, w0 += wb, w1 += wb, w2 += wb, w3 += wb, x += xb) {
        const __m256i xv = q8_codes(x), eights = eight_sums(xv);
        const __m256 d = _mm256_set1_ps(dx[b]);
        a0 = nibble_block(w0, xv, eights, d, a0);
        a1 = nibble_block(w1, xv, eights, d, a1);
        a2 = nibble_block(w2, xv, eights, d, a2);
        a3 = nibble_block(w3, xv, eights, d, a3);
    }
    *y0 = hsum(a0), *y1 = hsum(a1), *y2 = hsum(a2), *y3 = hsum(a3);
}

typedef float (*RowFn)(const unsigned char *w, const unsigned char *x, const float *dx, size_t nb);
typedef void (*Rows4Fn)(float *y0, float *y1, float *y2, float *y3, const unsigned char *w0,
                        const unsigned char *w1, const unsigned char *w2, const unsigned char *w3,
                        const unsigned char *x, const float *dx, size_t nb);

/* Every row against one x: QDOT_STREAMS rows at a time, from that many
 * parts of the matrix; the rows left over one by one. */
static void qdot_rows(float *y, const unsigned char *rows, size_t stride, size_t n_rows, const unsigned char *x,
                      const float *dx, size_t nb, RowFn row, Rows4Fn rows4)
{
    const size_t span = n_rows / QDOT_STREAMS, far = span * stride;
    for (size_t i = 0; i < span; i++) {
        const unsigned char *w = rows + i * stride;
        rows4(y + i, y + span + i, y + 2 * span + i, y + 3 * span + i, w, w + far, w + 2 * far, w + 3 * far, x, dx,
              nb);
    }
    for (size_t r = QDOT_STREAMS * span; r < n_rows; r++)
        y[r] = row(rows + r * stride, x, dx, nb);
}

/* Blocks of the G vectors a group keeps the 8 x sums of (eight_sums) on
 * the stack: 8 KiB, 64 heads of 128 values; more go to the reference. */
#define QDOT_GROUP_BLOCKS 256

/* G > 1 (a GQA group scoring keys): each row's block is loaded, unpacked
 * and its scale converted once, then dotted with the block of up to 4
 * vectors at a time, one accumulator each (4 independent chains). xs: the
 * G vectors' codes (xb bytes a block); dx: [G][nb]. */
static inline __attribute__((always_inline)) void
group_rows(const int q4, float *y, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows,
           const unsigned char *xs, const float *dx, const __m256i *eights, size_t G, size_t nb)
{
    const size_t wb = format_block_bytes(q4 ? FMT_Q4_0 : FMT_Q8_0), xb = format_block_bytes(FMT_Q8_0), xrow = nb * xb;
    for (size_t g0 = 0; g0 < G; g0 += 4) {
        const size_t gn = G - g0 < 4 ? G - g0 : 4;
        for (size_t r = 0; r < n_rows; r++) {
            const unsigned char *w = rows + r * stride;
            __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
            for (size_t b = 0; b < nb; b++) {
                const unsigned char *wblk = w + b * wb;
                const __m256 dw = block_scale(wblk, _mm256_set1_ps(1.0f));
                const __m256i codes = q4 ? q4_nibbles(wblk + 2) : q8_codes(wblk);
                const __m256i mag = q4 ? codes : _mm256_sign_epi8(codes, codes); /* maddubs' unsigned side */
                for (size_t j = 0; j < gn; j++) {
                    const size_t g = g0 + j;
                    const __m256i x = q8_codes(xs + g * xrow + b * xb);
                    __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(mag, q4 ? x : _mm256_sign_epi8(x, codes)),
                                                     _mm256_set1_epi16(1));
                    if (q4)
                        sums = _mm256_sub_epi32(sums, eights[g * nb + b]);
                    const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(dx[g * nb + b]));
                    acc[j] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums), acc[j]);
                }
            }
            for (size_t j = 0; j < gn; j++)
                y[(g0 + j) * ld + r] = hsum(acc[j]);
        }
    }
}

static void qdot_group(float *y, size_t ld, Format fmt, const unsigned char *rows, size_t stride, size_t n_rows,
                       const unsigned char *xs, const float *dx, size_t G, size_t nb)
{
    const size_t xrow = nb * format_block_bytes(FMT_Q8_0), xb = format_block_bytes(FMT_Q8_0);
    if (fmt == FMT_Q8_0) { /* a constant q4 per call: the format's branches leave the loops */
        group_rows(0, y, ld, rows, stride, n_rows, xs, dx, NULL, G, nb);
        return;
    }
    __m256i eights[QDOT_GROUP_BLOCKS]; /* [G][nb]: q4_0 subtracts them (nibble_block) */
    for (size_t i = 0; i < G * nb; i++)
        eights[i] = eight_sums(q8_codes(xs + (i / nb) * xrow + (i % nb) * xb));
    group_rows(1, y, ld, rows, stride, n_rows, xs, dx, eights, G, nb);
}

void qdot_avx2(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
               size_t G, size_t n)
{
    const size_t nb = n / QK, xb = format_block_bytes(FMT_Q8_0);
    if (G * nb > (G > 1 ? QDOT_GROUP_BLOCKS : QDOT_MAX_BLOCKS) || (fmt != FMT_Q8_0 && fmt != FMT_Q4_0)) {
        qdot_ref(y, ld, fmt, rows, stride, n_rows, xq, G, n);
        return;
    }
    const unsigned char *x = xq;
    float dx[QDOT_MAX_BLOCKS]; /* [G][nb] */
    for (size_t b = 0; b < G * nb; b++)
        dx[b] = half_at(x + b * xb);
    if (G > 1)
        qdot_group(y, ld, fmt, rows, stride, n_rows, x, dx, G, nb);
    else if (fmt == FMT_Q4_0)
        qdot_rows(y, rows, stride, n_rows, x, dx, nb, row_q4_0, rows4_q4_0);
    else
        qdot_rows(y, rows, stride, n_rows, x, dx, nb, row_q8_0, rows4_q8_0);
}
