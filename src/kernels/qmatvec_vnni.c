/* qmatvec_vnni.c: one vector x rounded to q8_0 against a weight matrix's
 * long rows of q8_0 or q4_0 (a decode step's matvec, kernels.h QDotFn with
 * G = 1) by AVX-512 VNNI, its float sums in qdot_ref.c's order, so the
 * bits are the reference's (test_qdot_isa).
 *
 *   y[r] = sum over blocks b of d_w(r, b) * d_x(b) * (row r's codes . x's)
 *
 * A row is read a group of four blocks at a time (qdot_rows_vnni.h: two
 * vpdpbusd leave block b's exact partial sums in lanes 4b .. 4b + 3), four
 * rows side by side from four parts of the matrix. Two rounds of pair_add
 * finish the four rows' sixteen block sums at once (lane 4b + r: row r's
 * block b, exact integers); they are turned to floats and fused, times
 * d_w * d_x, into one of two accumulators: groups 0, 2, 4, .. hold blocks
 * with b % 8 < 4, the odd groups the rest, so lane b % 8 of each row takes
 * its blocks in increasing b from +0, as qdot_ref.c's. The eight lanes are
 * added in adjacent pairs at the end.
 *
 * Where qdot_avx2's maddubs loop spends some 8 vector operations a block
 * (its codes, two multiply-adds, a share of the horizontal integer sums),
 * this spends about 3. */
#include "kernels/qdot_rows_vnni.h"

#define QMV_STREAMS 4     /* rows read side by side, from that many parts of the matrix */
#define QMV_AHEAD 2048 /* bytes each stream prefetches ahead: 2 KiB beat 1 KiB in 6 of 8 alternating one-thread
                        * q4_0 steps (a busy machine), 512 B lost to 1 KiB in 4 of 4 */

/* Four rows against x: y[j] = x . w[j] (w[j] may repeat, with y[j]). */
static inline __attribute__((always_inline)) void rows4(const Format fmt, const Gather *ix, float *const y[4],
                                                        const unsigned char *const w[4], const Head *hx,
                                                        size_t groups, size_t group_bytes)
{
    __m512 acc[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() }; /* lane 4 (b % 4) + r: lane b % 8 of row r */
    for (size_t q = 0; q < groups; q++) {
        __m512i v[4];
        __m512 d = _mm512_setzero_ps();
        CODEC_UNROLL
        for (size_t r = 0; r < 4; r++) {
            const unsigned char *p = w[r] + q * group_bytes;
            _mm_prefetch((const char *)p + QMV_AHEAD, _MM_HINT_T0);
            const Row row = row_of(fmt, ix, p);
            v[r] = sums_of(fmt, &row, &hx[q]);
            d = r == 0 ? row.d : _mm512_mask_blend_ps((__mmask16)(0x1111u << r), d, row.d);
        }
        const __m512i s = pair_add(pair_add(v[0], v[1]), pair_add(v[2], v[3])); /* lane 4b + r */
        acc[q & 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(hx[q].dx, d), acc[q & 1]);
    }
    /* quarters of acc[0]: lanes 0 .. 3, of acc[1]: lanes 4 .. 7; each quarter's lane r is row r */
    const __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(acc[0], acc[1], 0x88),
                                   _mm512_shuffle_f32x4(acc[0], acc[1], 0xdd)); /* l0+l1, l2+l3, l4+l5, l6+l7 */
    const __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(t, t, 0x88), _mm512_shuffle_f32x4(t, t, 0xdd));
    const __m128 sum = _mm_add_ps(_mm512_castps512_ps128(u), _mm512_extractf32x4_ps(u, 1));
    float out[4];
    _mm_storeu_ps(out, sum);
    for (size_t j = 0; j < 4; j++)
        *y[j] = out[j];
}

static inline __attribute__((always_inline)) void matvec(const Format fmt, float *y, const unsigned char *rows,
                                                         size_t stride, size_t n_rows, const Head *hx,
                                                         size_t groups)
{
    const Gather ix = gather_indexes();
    const size_t group_bytes = stride / groups, span = n_rows / QMV_STREAMS;
    for (size_t i = 0; i < span; i++) {
        float *const out[4] = { y + i, y + span + i, y + 2 * span + i, y + 3 * span + i };
        const unsigned char *const w[4] = { rows + i * stride, rows + (span + i) * stride,
                                            rows + (2 * span + i) * stride, rows + (3 * span + i) * stride };
        rows4(fmt, &ix, out, w, hx, groups, group_bytes);
    }
    for (size_t r = QMV_STREAMS * span; r < n_rows; r++) {
        float *const out[4] = { y + r, y + r, y + r, y + r };
        const unsigned char *const w[4] = { rows + r * stride, rows + r * stride, rows + r * stride,
                                            rows + r * stride };
        rows4(fmt, &ix, out, w, hx, groups, group_bytes);
    }
}

void qmatvec_vnni(float *y, Format fmt, const unsigned char *rows, size_t stride, size_t n_rows,
                  const unsigned char *xq, size_t n)
{
    Head hx[QMATVEC_VNNI_MAX / ROW_VALUES]; /* x laid out once, a group of four blocks each */
    const size_t groups = n / ROW_VALUES;
    for (size_t q = 0; q < groups; q++)
        hx[q] = head_of(fmt, xq + q * X_BYTES);
    if (fmt == FMT_Q8_0) /* a constant format in each: one specialisation each */
        matvec(FMT_Q8_0, y, rows, stride, n_rows, hx, groups);
    else
        matvec(FMT_Q4_0, y, rows, stride, n_rows, hx, groups);
}
