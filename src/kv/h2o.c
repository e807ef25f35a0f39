/* h2o.c: heavy-hitter eviction (H2O, Zhang et al. 2023) within a budget.
 *
 * Per (layer, sequence) the cache keeps at most `budget` positions: the
 * `recent` newest, plus the older ones that have drawn the most attention so
 * far (the "heavy hitters"). Attention tells it which: after each pass the
 * forward hands over the last query's softmax weights (the observe hook),
 * summed over every query head of the layer, and the cache adds them to each
 * held position's score. When more than `budget` positions are held, the
 * lowest-scored position outside the recent window goes, until the budget
 * holds again. One choice per layer: all KV heads of a layer keep the same
 * positions, so the layer's rows are still runs of positions (blocks).
 *
 * Rows stay in position order in each head's array; an eviction slides the
 * later rows down. A pass may add `pass` rows before the budget is enforced
 * again, so each array has budget + pass slots (or max_seq_len, if fewer). */
#include "kv/layouts.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    KvCache base;
    RowRuns rows;         /* cap = budget + pass, at most max_seq_len */
    size_t budget, recent, pass;
    double *score;        /* [layer][seq][cap] attention drawn so far, beside each row */
    size_t evicted;
} H2O;

static size_t slot_of(const H2O *c, size_t layer, size_t seq)
{
    return layer * c->base.geo.n_seqs + seq;
}

/* Drop row i of every head of slot s (its score with it). */
static void evict_row(H2O *c, size_t s, size_t i)
{
    RowRuns *r = &c->rows;
    size_t rest = r->count[s] - i - 1;
    for (size_t h = 0; h < r->n_kv_heads; h++) {
        memmove(rows_k(r, s, h, i), rows_k(r, s, h, i + 1), rest * r->k_row);
        memmove(rows_v(r, s, h, i), rows_v(r, s, h, i + 1), rest * r->v_row);
    }
    memmove(&r->pos[s * r->cap + i], &r->pos[s * r->cap + i + 1], rest * sizeof *r->pos);
    memmove(&c->score[s * r->cap + i], &c->score[s * r->cap + i + 1], rest * sizeof *c->score);
    r->count[s]--;
    c->evicted++;
}

/* Evict the lowest-scored rows outside the recent window until slot s
 * holds at most `limit`; returns 0, or -1 when only recent rows are left. */
static int enforce(H2O *c, size_t s, size_t limit)
{
    const RowRuns *r = &c->rows;
    const double *score = c->score + s * r->cap;
    while (r->count[s] > limit) {
        size_t newest = r->len[s], victim = SIZE_MAX;
        for (size_t i = 0; i < r->count[s]; i++) {
            if (r->pos[s * r->cap + i] + c->recent >= newest)
                break; /* the recent window is never evicted */
            if (victim == SIZE_MAX || score[i] < score[victim])
                victim = i;
        }
        if (victim == SIZE_MAX)
            return -1;
        evict_row(c, s, victim);
    }
    return 0;
}

static int h2o_append(KvCache *base, size_t layer, size_t seq, size_t p0, size_t n, const float *k, const float *v,
                      Counters *ctr, Err *e)
{
    H2O *c = (H2O *)base;
    RowRuns *r = &c->rows;
    const KvGeometry *g = &base->geo;
    size_t s = slot_of(c, layer, seq);
    if (p0 != r->len[s])
        return err_set(e, ERR_RUNTIME, "h2o cache: append at position %zu, expected %zu", p0, r->len[s]);
    if (n > c->pass)
        return err_set(e, ERR_RUNTIME, "h2o cache: a pass of %zu tokens exceeds pass=%zu", n, c->pass);
    /* room for the pass: without attention feedback (no observe call came)
     * the lowest scores are ties, and the oldest rows outside the window go */
    if (r->count[s] + n > r->cap && enforce(c, s, r->cap - n) < 0)
        return err_set(e, ERR_RUNTIME, "h2o cache: budget too small for its recent window");
    if (n > g->max_seq_len - p0)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > max_seq_len %zu", p0, n,
                       g->max_seq_len);
    memset(&c->score[s * r->cap + r->count[s]], 0, n * sizeof *c->score);
    rows_append(r, g, s, p0, n, k, v, ctr);
    return 0;
}

static void h2o_observe(KvCache *base, size_t layer, size_t seq, size_t kv_head, const float *w, size_t q_stride,
                        size_t g_stride, size_t G, size_t nq, size_t n)
{
    H2O *c = (H2O *)base;
    size_t s = slot_of(c, layer, seq);
    double *score = c->score + s * c->rows.cap;
    w += (nq - 1) * q_stride; /* the last query's (nq is 1: no observe_queries) */
    for (size_t j = 0; j < n && j < c->rows.count[s]; j++) /* rows were seen in block order = position order */
        for (size_t gi = 0; gi < G; gi++)
            score[j] += w[gi * g_stride + j];
    if (kv_head + 1 < base->geo.n_kv_heads)
        return; /* evict once the whole layer has voted */
    enforce(c, s, c->budget); /* recent is at most the budget: this always succeeds */
    rows_index(&c->rows, s);
}

static size_t h2o_length(const KvCache *base, size_t layer, size_t seq)
{
    const H2O *c = (const H2O *)base;
    return c->rows.len[slot_of(c, layer, seq)];
}

static size_t h2o_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    const H2O *c = (const H2O *)base;
    return c->rows.n_runs[slot_of(c, layer, seq)];
}

static void h2o_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const H2O *c = (const H2O *)base;
    rows_block(&c->rows, slot_of(c, layer, seq), h, i, out);
}

static size_t h2o_bytes_used(const KvCache *base)
{
    return rows_bytes_used(&((const H2O *)base)->rows);
}

static size_t h2o_bytes_reserved(const KvCache *base)
{
    return rows_bytes_reserved(&((const H2O *)base)->rows);
}

static void h2o_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    const H2O *c = (const H2O *)base;
    rows_cells(base, &c->rows, slot_of(c, layer, seq), out, n);
}

static void h2o_drop(KvCache *base, size_t seq)
{
    H2O *c = (H2O *)base;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        rows_clear(&c->rows, slot_of(c, l, seq));
}

static void h2o_reset(KvCache *base)
{
    for (size_t s = 0; s < base->geo.n_seqs; s++)
        h2o_drop(base, s);
    ((H2O *)base)->evicted = 0;
}

static int h2o_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    H2O *c = (H2O *)base;
    const size_t cap = c->rows.cap;
    if (c->rows.len[slot_of(c, 0, dst)])
        return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < base->geo.n_layers; l++) {
        size_t a = slot_of(c, l, src), b = slot_of(c, l, dst);
        rows_copy(&c->rows, a, b, ctr);
        memcpy(&c->score[b * cap], &c->score[a * cap], c->rows.count[a] * sizeof *c->score);
    }
    return 0;
}

static void h2o_stats(const KvCache *base, KvStats *out)
{
    out->evictions = ((const H2O *)base)->evicted;
}

static size_t h2o_max_pass(const KvCache *base)
{
    return ((const H2O *)base)->pass;
}

static void h2o_destroy(KvCache *base)
{
    H2O *c = (H2O *)base;
    rows_free(&c->rows);
    free(c->score);
    free(c);
}

static const KvCacheOps h2o_ops = {
    .name = "h2o",
    .rollback = "its evictions follow attention: a row evicted while rejected tokens were held (their rows, their attention) is gone",
    .append = h2o_append,
    .n_blocks = h2o_n_blocks,
    .block = h2o_block,
    .length = h2o_length,
    .bytes_used = h2o_bytes_used,
    .bytes_reserved = h2o_bytes_reserved,
    .reset = h2o_reset,
    .cells = h2o_cells,
    .fork = h2o_fork,
    .drop = h2o_drop,
    .stats = h2o_stats,
    .observe = h2o_observe,
    .max_pass = h2o_max_pass,
    .destroy = h2o_destroy,
};

KvCache *h2o_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    size_t budget = 256, recent = 64, pass = 64;
    if (spec_take_size(opts, "budget", &budget, e) < 0 || spec_take_size(opts, "recent", &recent, e) < 0 ||
        spec_take_size(opts, "pass", &pass, e) < 0 ||
        spec_check_all_taken(opts, "budget=ROWS, recent=ROWS, pass=P", e) < 0)
        return NULL;
    if (recent > budget) {
        err_set(e, ERR_USAGE, "cache 'h2o': recent=%zu must not exceed budget=%zu", recent, budget);
        return NULL;
    }
    /* budget + pass rows at most, and never more than a sequence reaches */
    const size_t cap = budget + pass < geo->max_seq_len ? budget + pass : geo->max_seq_len;
    if (kv_check_fit(geo, "h2o", cap, "rows per layer, sequence and KV head",
                     kv_head_row_bytes(geo, kv_k_row_bytes(geo, st), kv_v_row_stored(geo, st)), e) < 0)
        return NULL;
    H2O *c = calloc(1, sizeof *c);
    if (!c) {
        err_set(e, ERR_RUNTIME, "h2o cache: out of memory");
        return NULL;
    }
    c->base.ops = &h2o_ops;
    c->base.geo = *geo;
    c->base.lossy = 1;
    c->budget = budget, c->recent = recent, c->pass = pass;
    c->score = calloc(geo->n_layers * geo->n_seqs * cap, sizeof *c->score);
    if (rows_init(&c->rows, geo, st, cap) < 0 || !c->score) {
        h2o_destroy(&c->base);
        err_set(e, ERR_RUNTIME, "h2o cache: out of memory");
        return NULL;
    }
    return &c->base;
}
