/* attend_naive.c: attention the plain way, and over a materialized view.
 *
 * Naive: every score of the query, one softmax, then the weighted sum; each
 * row is decoded by its format's codec where it is read, a block's visible
 * rows in one tile call. Materialize: first
 * decode every block into an f32 view (the mixed-precision proposal's merged f16 view, here f32),
 * then run naive over the view: the view's traffic is what it costs. */
#include <math.h>
#include <string.h>

#include "kernels/attend_rows.h"

/* Naive attention over `blocks` (a->blocks, or the f32 view when
 * materialized): one dot_rows and one axpy_rows per block, for the whole
 * group and every visible row of the block (codec.h). */
static void naive(const Kernels *k, const AttnArgs *a, const KvBlock *blocks, Counters *ctr, int count_kv)
{
    const size_t hd = a->head_dim, G = a->group;
    const float scale = 1.0f / sqrtf((float)hd);
    AttnArgs view = *a;
    view.blocks = blocks;

    for (size_t t = 0; t < a->n_q; t++) {
        const size_t qpos = a->pos0 + t;
        const float *q = a->q + t * a->q_stride; /* [G][hd] */
        float *out = a->out + t * a->out_stride; /* [G][hd] */
        const size_t n = attend_visible_count(&view, qpos);
        float *s = a->scores; /* [G][n] */
        if (count_kv) /* the stored rows; a materialized view is f32 and keeps the f32 query */
            attend_round_query(k, a, q);

        size_t j = 0, lo, hi;
        for (size_t b = 0; b < a->n_blocks; b++) {
            const KvBlock *blk = &blocks[b];
            attend_visible(&view, blk, qpos, &lo, &hi);
            if (hi > lo)
                attend_score_rows(k, &view, q, blk->k_fmt, blk->k_chan, attend_row(blk->k, blk->k_stride, lo),
                                  blk->k_stride, hi - lo, blk->pos + lo, qpos, s + j, n, NULL);
            j += hi - lo;
            if (ctr && count_kv)
                ctr->kv_bytes_read += attend_k_bytes(blk, hi - lo, hd);
            else if (ctr)
                ctr->view_bytes += (hi - lo) * hd * sizeof(float);
        }

        for (size_t g = 0; g < G; g++) {
            float *sg = s + g * n, mx = attend_scale_max(sg, n, scale), inv;
            if (a->sink) { /* the sink's term joins the denominator; it has no row */
                const float z = a->sink[g];
                mx = z > mx ? z : mx;
                inv = 1.0f / (k->exp_sum(sg, n, mx) + expf(z - mx));
            } else {
                inv = 1.0f / k->exp_sum(sg, n, mx);
            }
            for (size_t i = 0; i < n; i++)
                sg[i] *= inv;
            if (a->probs && t >= a->probs_first)
                memcpy(a->probs + (t - a->probs_first) * a->probs_q_stride + g * a->probs_g_stride, sg,
                       n * sizeof(float));
        }

        memset(out, 0, G * hd * sizeof(float));
        j = 0;
        for (size_t b = 0; b < a->n_blocks; b++) {
            const KvBlock *blk = &blocks[b];
            attend_visible(&view, blk, qpos, &lo, &hi);
            if (hi > lo)
                k->codec[blk->v_fmt].axpy_rows(out, s + j, n, G, attend_row(blk->v, blk->v_stride, lo),
                                               blk->v_stride, hi - lo, hd);
            j += hi - lo;
            if (ctr && count_kv)
                ctr->kv_bytes_read += (hi - lo) * format_row_bytes(blk->v_fmt, hd);
            else if (ctr)
                ctr->view_bytes += (hi - lo) * hd * sizeof(float);
        }
        attend_count(ctr, G, n, hd);
    }
}

/* Decode every block into the f32 view once; the view mirrors the blocks. */
static void materialize(const Kernels *k, const AttnArgs *a, Counters *ctr)
{
    const size_t hd = a->head_dim;
    float *kv = a->view;
    size_t rows = 0;
    for (size_t b = 0; b < a->n_blocks; b++)
        rows += a->blocks[b].n;
    float *vv = a->view + rows * hd;
    for (size_t b = 0; b < a->n_blocks; b++) {
        const KvBlock *blk = &a->blocks[b];
        for (size_t r = 0; r < blk->n; r++)
            block_decode_row(k->codec, blk, r, hd, kv + r * hd, vv + r * hd);
        a->view_blocks[b] = (KvBlock){
            .pos = blk->pos, .n = blk->n, .k = kv, .v = vv,
            .k_stride = hd * sizeof(float), .v_stride = hd * sizeof(float),
            .k_fmt = FMT_F32, .v_fmt = FMT_F32,
        };
        if (ctr) {
            ctr->kv_bytes_read += attend_k_bytes(blk, blk->n, hd) + blk->n * format_row_bytes(blk->v_fmt, hd);
            ctr->view_bytes += blk->n * 2 * hd * sizeof(float);
        }
        kv += blk->n * hd;
        vv += blk->n * hd;
    }
}

void attend_naive(const Kernels *k, const AttnArgs *a, int materialized, Counters *ctr)
{
    if (!materialized) {
        naive(k, a, a->blocks, ctr, 1);
        return;
    }
    materialize(k, a, ctr);
    naive(k, a, a->view_blocks, ctr, 0);
}
