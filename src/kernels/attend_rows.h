/* attend_rows.h: which stored rows a query may see (private to attention). */
#ifndef KVSCOPE_KERNELS_ATTEND_ROWS_H
#define KVSCOPE_KERNELS_ATTEND_ROWS_H

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

/* The forms, behind attend() (attend.c). */
void attend_naive(const Kernels *k, const AttnArgs *a, int materialized, Counters *ctr);
void attend_flash(const Kernels *k, const AttnArgs *a, Counters *ctr);

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
