/* qdot_vnni.c: the integer dot (kernels.h, QDotFn) of a GQA group's heads
 * (G > 1) with rows of 128 values, the usual head size, by AVX-512 VNNI;
 * one head, and other lengths, go to qdot_avx2.
 *
 * vpdpbusd multiplies 64 unsigned bytes by 64 signed ones and adds each
 * four products into an int32 lane: a whole row is two of them. Every
 * format is laid out so that lanes 4b .. 4b + 3 hold block b's sums (32
 * values) in both vectors:
 *   q4_0: a row's four blocks gathered side by side, one 16-byte quarter
 *         each; the low nibbles (codes 0 .. 15 of each block) in one
 *         vector, the high ones (16 .. 31) in the other.
 *   int4, fp4: the row's 64 bytes as they are; the low nibbles (the even
 *         values) in one vector, the high ones (the odd) in the other.
 *   q8_0: the first 16 codes of each block in one vector, the last 16 in
 *         the other, gathered as q4_0's.
 * The 4-bit codes are made unsigned by an offset, as qdot_avx2 does them
 * (q4_0 as stored, int4 with its sign bit flipped, fp4 looked up as its
 * doubled value plus 12), and x's codes are the signed operand; the offset
 * times each block's sum of x starts the head's sums. q8_0's codes are
 * signed: x + 128 is the unsigned operand, and 128 times the row's codes
 * (one vpdpbusd against 128s, shared by the heads) is taken off where the
 * sums start. x is laid out once a call, in plain C (head_of).
 * The integer sums are exact, and so are the sums of each block's four
 * lanes, taken for four (row, head) units at once by two rounds of
 * shuffles (group_sums); only then is each block's sum turned to a float
 * and scaled by x's block scale times the row's, and the four blocks
 * added, (b0 + b1) + (b2 + b3), for 16 units at once (reduce_groups):
 * qdot_ref.c's order for four blocks, so the bits are the reference's,
 * and a row's score does not depend on where its run was cut. Where each lane was
 * turned to a float and scaled and the 16 lanes of a row and head added
 * by a transposed reduction (reduce16), the dot alone from cache took
 * 1.38x to 1.50x as long at G = 4 (q4_0, q8_0, int4, fp4), 1.10x to 1.35x
 * at G = 2 and 3; whole --int-dot flash steps, cold, 65536 rows, G = 4,
 * 1.11x to 1.13x as long for the 4-bit formats, 1.04x for q8_0.
 *
 * What it bought on an AVX-512 Xeon (65536 rows, this and qdot_avx2
 * called in turn, medians): the dot alone in tiles of 1024 rows, cold, G =
 * 4: 0.66 to 0.74 of qdot_avx2's time (int4 0.66, fp4 0.70, q8_0 0.73);
 * whole --int-dot flash steps, cold, 31 or 41 of each: qdot_avx2's took
 * at G = 2 1.29 to 1.32 times as long (q4_0), 1.27 (int4), 1.28 (fp4),
 * 1.12 (q8_0); at G = 4 1.12, 1.17, 1.14 and 1.10 to 1.12; at G = 8
 * (q4_0) 1.09. One head lost (the dot alone, cold, q4_0 1.06, q8_0 1.10:
 * qdot_avx2 reads such rows in four streams). Without the prefetch of the
 * rows 2 KiB ahead, cold G = 4 took 1.17 times as long; 1 KiB 1.10; 4 to
 * 8 KiB within the noise of 2. Since then the rows are read in four
 * streams here too, each prefetching 512 bytes on (as far ahead in time
 * as one stream's 2 KiB): the one stream took q8_0 1.05x to 1.08x as
 * long at G = 4, 1.08x at G = 2, 1.02x at G = 8; the 4-bit formats 0.97x
 * to 1.04x at G = 4, q4_0 1.03x at G = 8 (whole cold flash steps,
 * alternating, medians).
 *
 * The same bits as qdot_ref (test_qdot_isa). */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/codec_isa.h" /* CODEC_UNROLL, the blocks */
#include "kernels/kernels_isa.h"
#include "kernels/reduce_avx512.h"

#define INLINE static inline __attribute__((always_inline))
#define ROW_VALUES 128
#define NB 4                    /* blocks of 32 a row */
#define X_BYTES (NB * sizeof(BlockQ8_0)) /* x: a q8_0 row of 128 */
#define PREFETCH_BYTES 512      /* ahead of the row read: see the header */
#define STREAMS 4               /* parts of the rows read side by side */

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

static Gather gather_indexes(void)
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
static Head head_of(Format fmt, const unsigned char *x)
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

/* --- the dot ----------------------------------------------------------------- */

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

/* A reduction's results go in units of a row and a head, four to a
 * group: unit u of group k is row k * 4 / GB + u / GB with head u % GB.
 * Group k of the rows from rows: lane 4b + u holds unit u's block b, its
 * integer sum (the four lanes of the block added, exactly) times both
 * scales. Units past nr are zeros (nr a constant where the block is
 * whole). */
INLINE __m512 group_sums(const Format fmt, const size_t GB, const Gather *ix, const Head *h, __m512 dx,
                         const unsigned char *rows, size_t stride, size_t k, size_t nr)
{
    const size_t per = 4 / GB; /* rows a group */
    __m512i v[4];
    __m512 d = _mm512_setzero_ps();
    CODEC_UNROLL
    for (size_t i = 0; i < per; i++) {
        const size_t r = k * per + i;
        if (r >= nr) {
            CODEC_UNROLL
            for (size_t g = 0; g < GB; g++)
                v[i * GB + g] = _mm512_setzero_si512();
            continue;
        }
        const unsigned char *p = rows + r * stride;
        _mm_prefetch((const char *)p + PREFETCH_BYTES, _MM_HINT_T0);
        const Row row = row_of(fmt, ix, p);
        CODEC_UNROLL
        for (size_t g = 0; g < GB; g++)
            v[i * GB + g] = sums_of(fmt, &row, &h[g]);
        /* the row's scales in its units' lanes */
        d = i == 0 ? row.d : _mm512_mask_blend_ps((__mmask16)(((1u << GB) - 1) * 0x1111u << (i * GB)), d, row.d);
    }
    const __m512i s = pair_add(pair_add(v[0], v[1]), pair_add(v[2], v[3]));
    /* qdot_ref.c's product: the sum times (d_x * d_w), fused onto +0 */
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dx, d), _mm512_setzero_ps());
}

/* Lane 4k + u = the sum of group k's four blocks of unit u:
 * (b0 + b1) + (b2 + b3), whatever the block's place. */
INLINE __m512 reduce_groups(const __m512 w[4])
{
    const __m512 a = _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], 0x88), _mm512_shuffle_f32x4(w[0], w[1], 0xdd));
    const __m512 b = _mm512_add_ps(_mm512_shuffle_f32x4(w[2], w[3], 0x88), _mm512_shuffle_f32x4(w[2], w[3], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xdd));
}

/* x's block scales in the units' lanes: lane 4b + u = head u % GB's block b. */
INLINE __m512 unit_scales(const size_t GB, const Head *h)
{
    float dx[4][16], t[16];
    for (size_t g = 0; g < GB; g++)
        _mm512_storeu_ps(dx[g], h[g].dx);
    for (size_t l = 0; l < 16; l++)
        t[l] = dx[l % GB][l / 4 * 4];
    return _mm512_loadu_ps(t);
}

/* A reduction's scores (lane r * GB + g: row r, head g) to y[g * ld + r],
 * r < nr: moved head by head (store_heads). */
INLINE void store_scores(const size_t GB, float *y, size_t ld, __m512 s, size_t nr)
{
    const size_t RB = 16 / GB;
    int32_t from[16]; /* lane g * RB + r takes lane r * GB + g */
    for (size_t l = 0; l < 16; l++)
        from[l] = (int32_t)(l % RB * GB + l / RB);
    store_heads(GB, y, ld, GB == 1 ? s : _mm512_permutexvar_ps(_mm512_loadu_si512(from), s), nr);
}

/* GB heads (a constant), the nr <= 16 / GB rows from r0: y[g * ld + r] =
 * x_g . row r. Each row is decoded once for the GB heads; a row's score
 * does not depend on the rows beside it. */
INLINE void dot_block(const Format fmt, const size_t GB, const Gather *ix, float *y, size_t ld, const Head *h,
                      __m512 dx, const unsigned char *rows, size_t stride, size_t r0, size_t nr,
                      const RowsAhead *ahead)
{
    const size_t RB = 16 / GB;
    rows_ahead_prefetch(ahead, r0, nr);
    const unsigned char *block = rows + r0 * stride;
    __m512 w[4];
    if (nr == RB) {
        CODEC_UNROLL
        for (size_t k = 0; k < 4; k++)
            w[k] = group_sums(fmt, GB, ix, h, dx, block, stride, k, RB);
    } else {
        for (size_t k = 0; k < 4; k++)
            w[k] = group_sums(fmt, GB, ix, h, dx, block, stride, k, nr);
    }
    store_scores(GB, y + r0, ld, reduce_groups(w), nr);
}

/* GB heads over the rows: STREAMS parts of them side by side, a block from
 * each in turn (one stream from one core reads well below the bandwidth,
 * as qdot_avx2 found), then the rows past the parts. */
INLINE void rows_dot(const Format fmt, const size_t GB, const Gather *ix, float *y, size_t ld, const Head *h,
                     const unsigned char *rows, size_t stride, size_t n_rows, const RowsAhead *ahead)
{
    const size_t RB = 16 / GB, span = n_rows / (STREAMS * RB) * RB; /* a part's rows */
    const __m512 dx = unit_scales(GB, h);
    for (size_t i = 0; i < span; i += RB)
        CODEC_UNROLL
        for (size_t s = 0; s < STREAMS; s++)
            dot_block(fmt, GB, ix, y, ld, h, dx, rows, stride, s * span + i, RB, ahead);
    for (size_t r0 = STREAMS * span; r0 < n_rows; r0 += RB)
        dot_block(fmt, GB, ix, y, ld, h, dx, rows, stride, r0, n_rows - r0 < RB ? n_rows - r0 : RB, ahead);
}

/* The heads in blocks of 4, 2 or 1 (a constant each); the first block
 * prefetches the rows ahead. */
INLINE void qdot_128(const Format fmt, float *y, size_t ld, const unsigned char *rows, size_t stride,
                     size_t n_rows, const unsigned char *xq, size_t G, const RowsAhead *ahead)
{
    const Gather ix = gather_indexes();
    for (size_t g0 = 0; g0 < G; ahead = NULL) {
        const size_t GB = G - g0 >= 4 ? 4 : G - g0 >= 2 ? 2 : 1;
        Head h[4];
        for (size_t g = 0; g < GB; g++)
            h[g] = head_of(fmt, xq + (g0 + g) * X_BYTES);
        float *out = y + g0 * ld;
        if (GB == 4)
            rows_dot(fmt, 4, &ix, out, ld, h, rows, stride, n_rows, ahead);
        else if (GB == 2)
            rows_dot(fmt, 2, &ix, out, ld, h, rows, stride, n_rows, ahead);
        else
            rows_dot(fmt, 1, &ix, out, ld, h, rows, stride, n_rows, ahead);
        g0 += GB;
    }
}

void qdot_vnni(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
               size_t G, size_t n, const RowsAhead *ahead)
{
    if (G == 1 || n != ROW_VALUES || !qdot_takes(fmt)) {
        qdot_avx2(y, ld, fmt, rows, stride, n_rows, xq, G, n, ahead);
        return;
    }
    switch (fmt) { /* a constant format in each call: one specialisation each */
    case FMT_Q8_0: qdot_128(FMT_Q8_0, y, ld, rows, stride, n_rows, xq, G, ahead); break;
    case FMT_Q4_0: qdot_128(FMT_Q4_0, y, ld, rows, stride, n_rows, xq, G, ahead); break;
    case FMT_INT4: qdot_128(FMT_INT4, y, ld, rows, stride, n_rows, xq, G, ahead); break;
    default: qdot_128(FMT_FP4, y, ld, rows, stride, n_rows, xq, G, ahead); break;
    }
}
