/* attend_flash.c: attention in tiles with an online softmax (seed 000).
 *
 * The rows are consumed ATTEND_TILE at a time. For each tile, the scores are
 * computed, the running max m of each head is raised if needed, what was
 * accumulated so far is rescaled by exp(m_old - m_new), and the tile's rows
 * are added in with weights exp(s - m_new). Nothing of size "all rows" is
 * ever held, and each quantized row is decoded in registers by its codec
 * where it is read: no f32 copy of the cache exists at any point.
 *
 * A tile is one call of the format's tile operations per contiguous run of
 * rows (a tile may span blocks: one run per block it touches): dot_rows for
 * the scores of all G heads, axpy_rows for the weighted sum, so the queries
 * and the accumulators stay in registers across the run's rows (codec.h).
 * The softmax works on the tile's scores, G x 64, with the vectorised
 * Kernels.exp_sum. */
#include <math.h>
#include <string.h>

#include "kernels/attend_rows.h"

/* A run of consecutive rows of one block, inside a tile. */
typedef struct {
    const void *k, *v;
    size_t k_stride, v_stride, n;
    Format k_fmt, v_fmt;
    const unsigned short *k_chan; /* per-channel keys: the block's scales and minimums */
    size_t pos;                   /* position of the run's first row */
} Run;

/* Fold one tile (runs[0..n_runs), n rows in all) into the running state of
 * the group's heads, for the query q at qpos.
 *   a->scores: scratch [G][ATTEND_TILE]; m, l: [G] running max and sum; acc: [G][hd] */
static void fold_tile(const Kernels *k, const AttnArgs *a, const float *q, size_t qpos, const Run *runs,
                      size_t n_runs, size_t n, float *m, float *l, float *acc, Counters *ctr)
{
    const size_t G = a->group, hd = a->head_dim;
    const float scale = 1.0f / sqrtf((float)hd);
    float *s = a->scores;
    for (size_t r = 0, off = 0; r < n_runs; off += runs[r].n, r++)
        attend_score_rows(k, a, q, runs[r].k_fmt, runs[r].k_chan, runs[r].k, runs[r].k_stride, runs[r].n,
                          runs[r].pos, qpos, s + off, ATTEND_TILE);
    for (size_t g = 0; g < G; g++) {
        float *sg = s + g * ATTEND_TILE, tile_max = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            sg[i] *= scale;
            tile_max = sg[i] > tile_max ? sg[i] : tile_max;
        }
        float m_new = tile_max > m[g] ? tile_max : m[g];
        float correction = expf(m[g] - m_new); /* 0 on the first tile: m = -inf */
        if (correction != 1.0f) {
            float *ag = acc + g * hd;
            for (size_t d = 0; d < hd; d++)
                ag[d] *= correction;
        }
        l[g] = l[g] * correction + k->exp_sum(sg, n, m_new);
        m[g] = m_new;
    }
    for (size_t r = 0, off = 0; r < n_runs; off += runs[r].n, r++)
        k->codec[runs[r].v_fmt].axpy_rows(acc, s + off, ATTEND_TILE, G, runs[r].v, runs[r].v_stride, runs[r].n, hd);
    if (ctr)
        ctr->flops_softmax += (uint64_t)G * hd; /* the rescale */
}

void attend_flash(const Kernels *k, const AttnArgs *a, Counters *ctr)
{
    const size_t hd = a->head_dim, G = a->group;
    float m[ATTEND_MAX_GROUP], l[ATTEND_MAX_GROUP];
    Run runs[ATTEND_TILE]; /* a tile spans at most one run per row */

    for (size_t t = 0; t < a->n_q; t++) {
        const size_t qpos = a->pos0 + t;
        const float *q = a->q + t * a->q_stride; /* [G][hd] */
        float *acc = a->out + t * a->out_stride; /* [G][hd], accumulates in place */
        memset(acc, 0, G * hd * sizeof(float));
        for (size_t g = 0; g < G; g++)
            m[g] = -INFINITY, l[g] = 0.0f;

        size_t n_tile = 0, n_runs = 0, seen = 0, lo, hi;
        for (size_t b = 0; b < a->n_blocks; b++) {
            const KvBlock *blk = &a->blocks[b];
            attend_visible(a, blk, qpos, &lo, &hi);
            for (size_t r = lo; r < hi;) {
                const size_t take = hi - r < ATTEND_TILE - n_tile ? hi - r : ATTEND_TILE - n_tile;
                runs[n_runs++] = (Run){ attend_row(blk->k, blk->k_stride, r), attend_row(blk->v, blk->v_stride, r),
                                        blk->k_stride, blk->v_stride, take, blk->k_fmt, blk->v_fmt,
                                        blk->k_chan, blk->pos + r };
                n_tile += take;
                r += take;
                if (n_tile == ATTEND_TILE) {
                    fold_tile(k, a, q, qpos, runs, n_runs, n_tile, m, l, acc, ctr);
                    n_tile = n_runs = 0;
                }
            }
            if (ctr)
                ctr->kv_bytes_read += attend_k_bytes(blk, hi - lo, hd) + (hi - lo) * format_row_bytes(blk->v_fmt, hd);
            seen += hi - lo;
        }
        if (n_tile)
            fold_tile(k, a, q, qpos, runs, n_runs, n_tile, m, l, acc, ctr);
        for (size_t g = 0; g < G; g++) {
            float inv = 1.0f / l[g];
            for (size_t d = 0; d < hd; d++)
                acc[g * hd + d] *= inv;
        }
        attend_count(ctr, G, seen, hd);
    }
}
