/* qdot_vnni.c: the integer dot (kernels.h, QDotFn) of a GQA group's heads
 * (G > 1) with rows of 128 values, the usual head size, by AVX-512 VNNI;
 * one vector against a weight matrix's long q8_0 or q4_0 rows goes to
 * qmatvec_vnni.c; one head, and other lengths, to qdot_avx2.
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
#include "kernels/qdot_rows_vnni.h"
#include "kernels/reduce_avx512.h"

#define PREFETCH_BYTES 512      /* ahead of the row read: see the header */
#define STREAMS 4               /* parts of the rows read side by side */

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
    if (G == 1 && !ahead && (fmt == FMT_Q8_0 || fmt == FMT_Q4_0) && n % ROW_VALUES == 0 && n >= QMATVEC_VNNI_MIN &&
        n <= QMATVEC_VNNI_MAX && stride == format_row_bytes(fmt, n)) { /* a weight matrix's rows */
        qmatvec_vnni(y, fmt, rows, stride, n_rows, xq, n);
        return;
    }
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
