/* qdot_rows_vnni.h: the pieces of an integer dot by AVX-512 VNNI that
 * qdot_vnni.c (a GQA group's keys, rows of 128) and qmatvec_vnni.c (one
 * vector against a weight matrix's long rows) share: four blocks of 32
 * values (a key row, or a quarter of a long row's group of blocks) laid
 * out so that lanes 4b .. 4b + 3 hold block b's sums, and x laid out to
 * match. Private to those files, built with their flags; qdot_vnni.c's
 * header says how each format's codes meet x's. */
#ifndef KVSCOPE_KERNELS_QDOT_ROWS_VNNI_H
#define KVSCOPE_KERNELS_QDOT_ROWS_VNNI_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h" /* CODEC_UNROLL, the blocks */
#include "kernels/kernels_isa.h"

#define INLINE static inline __attribute__((always_inline))
#define ROW_VALUES 128
#define NB 4                    /* blocks of 32 a row */
#define X_BYTES (NB * sizeof(BlockQ8_0)) /* x: a q8_0 row of 128 */

typedef struct {
    __m512i lo, hi; /* x's codes in the rows' byte order: signed, or q8_0's plus 128 */
    __m512i start;  /* where the sums start: minus the offset times each block's sum of x, or 0 */
    __m512 dx;      /* x's block scales, lanes 4b .. 4b + 3 (fp4's halved: its codes are the values doubled) */
} Head;

/* Word permutes gathering 16-byte quarters: quarter b of the result takes
 * words first[b] .. first[b] + 7 of the two sources (a, b: words 0 .. 31,
 * then 32 .. 63). */
INLINE __m512i quarters_index(int f0, int f1, int f2, int f3)
{
    const int first[NB] = { f0, f1, f2, f3 };
    int16_t t[32];
    for (int j = 0; j < 32; j++)
        t[j] = (int16_t)(first[j / 8] + j % 8);
    return _mm512_loadu_si512(t);
}

/* Words w0 .. w3 of the two sources, each in the 4 words of a quarter's
 * low half (the scales of the four blocks, for cvtph: lanes 4b .. 4b + 3). */
INLINE __m512i scales_index(int w0, int w1, int w2, int w3)
{
    const int w[NB] = { w0, w1, w2, w3 };
    int16_t t[32];
    for (int j = 0; j < 32; j++)
        t[j] = (int16_t)(j < 16 ? w[j / 4] : 0);
    return _mm512_loadu_si512(t);
}

INLINE __m512 scales_of(__m512i words)
{
    return _mm512_cvtph_ps(_mm512_castsi512_si256(words));
}

/* --- the rows ---------------------------------------------------------------- */

/* A row's two code vectors (lanes 4b .. 4b + 3 of block b) and its scales. */
typedef struct {
    __m512i lo, hi;
    __m512 d;
    __m512i start; /* q8_0: minus 128 times the row's codes; the others 0 */
} Row;

/* The permutes' indexes, made once a call (GCC builds them on the stack
 * where they are written inline). */
typedef struct {
    __m512i q4_codes, q4_scales;          /* q4_0: from bytes 0 .. 71 */
    __m512i q8_first, q8_second, q8_scales; /* q8_0: from bytes 0 .. 127, 8 .. 135, 0 .. 127 */
} Gather;

static inline Gather gather_indexes(void)
{
    return (Gather){ quarters_index(1, 10, 19, 28), scales_index(0, 9, 18, 27), quarters_index(1, 18, 35, 52),
                     quarters_index(5, 22, 39, 56), scales_index(0, 17, 34, 51) };
}

/* q4_0: 4 blocks of 18 bytes (scale, 16 bytes of nibbles); a block's qs
 * start at word 9b + 1. */
INLINE Row row_q4_0(const Gather *ix, const unsigned char *p)
{
    const __m512i a = _mm512_loadu_si512(p), b = _mm512_maskz_loadu_epi8(0xff, p + 64);
    const __m512i qs = _mm512_permutex2var_epi16(a, ix->q4_codes, b);
    const __m512i low = _mm512_set1_epi8(0x0f);
    return (Row){ _mm512_and_si512(qs, low), _mm512_and_si512(_mm512_srli_epi16(qs, 4), low),
                  scales_of(_mm512_permutexvar_epi16(ix->q4_scales, a)), _mm512_setzero_si512() };
}

/* q8_0: 4 blocks of 34 bytes (scale, 32 codes); block b's codes start at
 * word 17b + 1, its second 16 at 17b + 9. The first halves come from bytes
 * 0 .. 127, the second from 8 .. 135 (the row's end, never past it): index
 * (17b + 9) - 4. */
INLINE Row row_q8_0(const Gather *ix, const unsigned char *p)
{
    const __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 64);
    const __m512i c = _mm512_loadu_si512(p + 8), e = _mm512_loadu_si512(p + 72);
    const __m512i first = _mm512_permutex2var_epi16(a, ix->q8_first, b);
    const __m512i second = _mm512_permutex2var_epi16(c, ix->q8_second, e);
    const __m512i c128 = _mm512_set1_epi8((char)0x80);
    const __m512i sum128 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), c128, first), c128, second);
    return (Row){ first, second, scales_of(_mm512_permutex2var_epi16(a, ix->q8_scales, b)),
                  _mm512_sub_epi32(_mm512_setzero_si512(), sum128) };
}

/* int4, fp4: 64 bytes of nibbles (byte k: values 2k and 2k + 1), then the
 * row's fp16 scale. */
INLINE Row row_nibbles(const Format fmt, const unsigned char *p)
{
    /* fp4's code -> its doubled E2M1 value + 12, in each 16-byte lane */
    const __m512i fp4_plus12 =
        _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
    const __m512i low = _mm512_set1_epi8(0x0f);
    __m512i w = _mm512_loadu_si512(p);
    if (fmt == FMT_INT4) /* the signed nibble plus 8 */
        w = _mm512_xor_si512(w, _mm512_set1_epi8((char)0x88));
    __m512i lo = _mm512_and_si512(w, low), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
    if (fmt == FMT_FP4) {
        lo = _mm512_shuffle_epi8(fp4_plus12, lo);
        hi = _mm512_shuffle_epi8(fp4_plus12, hi);
    }
    uint16_t h;
    memcpy(&h, p + ROW_VALUES / 2, sizeof h);
    return (Row){ lo, hi, _mm512_cvtph_ps(_mm256_set1_epi16((short)h)), _mm512_setzero_si512() };
}

INLINE Row row_of(const Format fmt, const Gather *ix, const unsigned char *p)
{
    return fmt == FMT_Q8_0 ? row_q8_0(ix, p) : fmt == FMT_Q4_0 ? row_q4_0(ix, p) : row_nibbles(fmt, p);
}

/* --- x --------------------------------------------------------------------- */

/* A head's x (a q8_0 row of 128) laid out as the rows of fmt are. */
static inline Head head_of(Format fmt, const unsigned char *x)
{
    const int offset = fmt == FMT_FP4 ? 12 : fmt == FMT_Q8_0 ? 0 : 8;
    const int nibbles = fmt == FMT_INT4 || fmt == FMT_FP4; /* even and odd values apart */
    int8_t lo[64], hi[64];
    int32_t start[16] = { 0 };
    float dx[16];
    for (size_t b = 0; b < NB; b++) {
        const unsigned char *blk = x + b * sizeof(BlockQ8_0);
        const int8_t *code = (const int8_t *)(const void *)(blk + offsetof(BlockQ8_0, qs));
        uint16_t h;
        memcpy(&h, blk, sizeof h);
        const float d = fp16_to_f32(h) * (fmt == FMT_FP4 ? 0.5f : 1.0f);
        int32_t sum = 0;
        for (size_t j = 0; j < 16; j++) {
            lo[16 * b + j] = nibbles ? code[2 * j] : code[j];
            hi[16 * b + j] = nibbles ? code[2 * j + 1] : code[16 + j];
            if (fmt == FMT_Q8_0) { /* x + 128, unsigned */
                lo[16 * b + j] = (int8_t)((uint8_t)lo[16 * b + j] ^ 0x80u);
                hi[16 * b + j] = (int8_t)((uint8_t)hi[16 * b + j] ^ 0x80u);
            }
            sum += code[j] + code[16 + j];
        }
        start[4 * b] = -offset * sum;
        for (size_t k = 0; k < 4; k++)
            dx[4 * b + k] = d;
    }
    return (Head){ _mm512_loadu_si512(lo), _mm512_loadu_si512(hi), _mm512_loadu_si512(start), _mm512_loadu_ps(dx) };
}

/* Row and head: the integer sums, lanes 4b .. 4b + 3 of block b. */
INLINE __m512i sums_of(const Format fmt, const Row *r, const Head *h)
{
    const __m512i s0 = fmt == FMT_Q8_0 ? r->start : h->start;
    const __m512i u0 = fmt == FMT_Q8_0 ? h->lo : r->lo, v0 = fmt == FMT_Q8_0 ? r->lo : h->lo;
    const __m512i u1 = fmt == FMT_Q8_0 ? h->hi : r->hi, v1 = fmt == FMT_Q8_0 ? r->hi : h->hi;
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s0, u0, v0), u1, v1);
}

/* In each quarter: [a0 + a1, a2 + a3, b0 + b1, b2 + b3]. */
INLINE __m512i pair_add(__m512i a, __m512i b)
{
    const __m512 x = _mm512_castsi512_ps(a), y = _mm512_castsi512_ps(b);
    return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(x, y, 0x88)),
                            _mm512_castps_si512(_mm512_shuffle_ps(x, y, 0xdd)));
}

/* One vector x (G = 1) against rows of n values, n a multiple of 128 from
 * QMATVEC_VNNI_MIN to QMATVEC_VNNI_MAX, q8_0 or q4_0, stride the row's
 * bytes: y[r] = x . row r, qdot_ref's bits
 * (qmatvec_vnni.c). */
#define QMATVEC_VNNI_MIN 512
#define QMATVEC_VNNI_MAX 16384 /* x's layout on the stack: 128 groups of 256 bytes */
void qmatvec_vnni(float *y, Format fmt, const unsigned char *rows, size_t stride, size_t n_rows,
                  const unsigned char *xq, size_t n);

#endif
