/* attend_rows.h: which stored rows a query may see (private to attention). */
#ifndef KVSCOPE_KERNELS_ATTEND_ROWS_H
#define KVSCOPE_KERNELS_ATTEND_ROWS_H

#include <math.h>

#include "kernels/kernels.h"

/* Rows [*lo, *hi) of blk visible to a query at position qpos: positions
 * <= qpos and, with a window W, > qpos - W; every row when the attention is
 * bidirectional. Visibility is a run of positions, so within a block it is a
 * run of rows. */
static inline void attend_visible(const AttnArgs *a, const KvBlock *blk, size_t qpos, size_t *lo, size_t *hi)
{
    if (a->bidirectional) {
        *lo = 0;
        *hi = blk->n;
        return;
    }
    size_t first = (a->window && qpos + 1 > a->window) ? qpos + 1 - a->window : 0;
    size_t l = first > blk->pos ? first - blk->pos : 0;
    size_t h = qpos + 1 > blk->pos ? qpos + 1 - blk->pos : 0;
    if (h > blk->n)
        h = blk->n;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

static inline size_t attend_visible_count(const AttnArgs *a, size_t qpos)
{
    size_t n = 0, lo, hi;
    for (size_t b = 0; b < a->n_blocks; b++) {
        attend_visible(a, &a->blocks[b], qpos, &lo, &hi);
        n += hi - lo;
    }
    return n;
}

static inline const void *attend_row(const void *base, size_t stride, size_t r)
{
    return (const char *)base + r * stride;
}

/* With a->q8 (integer key scores): the group's queries q [G][hd] rounded
 * to q8_0 into a->q8, as llama.cpp rounds an activation; once per query
 * token, before attend_score_rows reads its runs of rows. */
static inline void attend_round_query(const Kernels *k, const AttnArgs *a, const float *q)
{
    const size_t hd = a->head_dim, xrow = format_row_bytes(FMT_Q8_0, hd);
    if (!a->q8 || hd % 32)
        return;
    for (size_t g = 0; g < a->group; g++)
        k->codec[FMT_Q8_0].quantize((unsigned char *)a->q8 + g * xrow, q + g * hd, hd);
}

/* Raw scores of n_rows consecutive key rows at positions kpos0.. for the
 * group's G queries q [G][hd] at position qpos: s[g * ld + r] = q_g . key_r,
 * plus the attention structure's bias, ready for the 1/sqrt(hd) scaling.
 * ahead: rows the caller reads next (codec.h's RowsAhead), or NULL.
 *
 * Per-channel keys (k_chan) are scale * code + min channel by channel, so
 * q . key = (q * scale) . code + q . min: the scales are folded into the
 * query once per block (into a->chan_q) and the codes are dotted as any
 * row format; q . min is one number per head, added to every row. */
static inline void attend_score_rows(const Kernels *k, const AttnArgs *a, const float *q, Format k_fmt,
                                     const unsigned short *k_chan, const void *rows, size_t stride,
                                     size_t n_rows, size_t kpos0, size_t qpos, float *s, size_t ld,
                                     const RowsAhead *ahead)
{
    const size_t hd = a->head_dim, G = a->group;
    float q_min[ATTEND_MAX_GROUP];
    if (k_chan) {
        for (size_t g = 0; g < G; g++) {
            q_min[g] = 0.0f;
            for (size_t i = 0; i < hd; i++) {
                a->chan_q[g * hd + i] = q[g * hd + i] * fp16_to_f32(k_chan[i]);
                q_min[g] += q[g * hd + i] * fp16_to_f32(k_chan[hd + i]);
            }
        }
        q = a->chan_q;
    }
    if (a->q8 && !k_chan && qdot_takes(k_fmt) && hd % 32 == 0) {
        k->qdot(s, ld, k_fmt, rows, stride, n_rows, a->q8, G, hd, ahead); /* a->q8: attend_round_query's */
    } else {
        k->codec[k_fmt].dot_rows(s, ld, q, G, rows, stride, n_rows, hd, ahead);
    }
    if (!k_chan && !a->bias)
        return;
    const float unscale = sqrtf((float)hd); /* the bias is on the scaled score */
    for (size_t r = 0; r < n_rows; r++) {
        const float b = a->bias ? attn_bias_at(a->bias, qpos, kpos0 + r) * unscale : 0.0f;
        for (size_t g = 0; g < G; g++)
            s[g * ld + r] += b + (k_chan ? q_min[g] : 0.0f);
    }
}

/* x[i] *= scale for i < n; returns the largest (NaNs skipped; -inf if
 * none). Eight running maxima: one would make every element wait for the
 * previous one's compare (flash, q4_0, 65536 rows: 3.5% of the step). */
static inline float attend_scale_max(float *x, size_t n, float scale)
{
    float mx[8] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t j = 0; j < 8; j++) {
            x[i + j] *= scale;
            mx[j] = x[i + j] > mx[j] ? x[i + j] : mx[j];
        }
    for (; i < n; i++) {
        x[i] *= scale;
        mx[0] = x[i] > mx[0] ? x[i] : mx[0];
    }
    for (size_t j = 1; j < 8; j++)
        mx[0] = mx[j] > mx[0] ? mx[j] : mx[0];
    return mx[0];
}

/* The largest of x[0..n), n > 0 (8 lanes, as attend_scale_max). */
static inline float attend_max(const float *x, size_t n)
{
    float mx[8] = { x[0], x[0], x[0], x[0], x[0], x[0], x[0], x[0] };
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t j = 0; j < 8; j++)
            mx[j] = x[i + j] > mx[j] ? x[i + j] : mx[j];
    for (; i < n; i++)
        mx[0] = x[i] > mx[0] ? x[i] : mx[0];
    for (size_t j = 1; j < 8; j++)
        mx[0] = mx[j] > mx[0] ? mx[j] : mx[0];
    return mx[0];
}

/* Cache bytes attention reads for n rows of blk: the rows, and a
 * per-channel block's scales and minimums. */
static inline size_t attend_k_bytes(const KvBlock *blk, size_t n, size_t hd)
{
    return n * format_row_bytes(blk->k_fmt, hd) + (blk->k_chan && n ? 2 * hd * sizeof *blk->k_chan : 0);
}

/* The cache bytes a query at qpos reads: every visible row of every block. */
static inline void attend_count_read(Counters *ctr, const AttnArgs *a, size_t qpos)
{
    for (size_t b = 0, lo, hi; ctr && b < a->n_blocks; b++) {
        const KvBlock *blk = &a->blocks[b];
        attend_visible(a, blk, qpos, &lo, &hi);
        ctr->kv_bytes_read += attend_k_bytes(blk, hi - lo, a->head_dim) + (hi - lo) * format_row_bytes(blk->v_fmt, a->head_dim);
    }
}

/* The forms, behind attend() (attend.c). */
void attend_naive(const Kernels *k, const AttnArgs *a, int materialized, Counters *ctr);
void attend_flash(const Kernels *k, const AttnArgs *a, Counters *ctr);

/* Flash over n visible rows of query t, from its visible row `first` on,
 * into the part's running state, not normalized: m, l [G] its max and sum
 * of exponentials, acc [G][hd] its weighted sum of values. Reads a->scores
 * (G * min(n, ATTEND_TILE) floats), a->chan_q and a->iv as scratch, a->q8
 * as rounded already (attend_round_query). Counts the rescales only. The
 * part that starts at row 0 (first = 0) holds a->sink's term: its state
 * starts at m = z, l = 1. */
void attend_flash_part(const Kernels *k, const AttnArgs *a, size_t t, size_t first, size_t n, float *m, float *l,
                       float *acc, Counters *ctr);

/* The cost every form shares, per query token that saw n rows. */
static inline void attend_count(Counters *ctr, size_t G, size_t n, size_t hd)
{
    if (!ctr)
        return;
    ctr->flops_qk += 2 * (uint64_t)G * n * hd;
    ctr->flops_av += 2 * (uint64_t)G * n * hd;
    ctr->flops_softmax += 5 * (uint64_t)G * n;
}

#endif
