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
 * again, so each array has budget + pass slots. */
#include "kv/layouts.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    KvCache base;
    KvStorage st;
    size_t budget, recent, pass, cap; /* cap = budget + pass */
    size_t k_row, v_row;
    unsigned char *k, *v; /* [layer][seq][kv_head][cap] rows */
    size_t *pos;          /* [layer][seq][cap] position of each held row */
    double *score;        /* [layer][seq][cap] attention drawn so far */
    size_t *count;        /* [layer][seq] rows held */
    size_t *len;          /* [layer][seq] positions appended */
    size_t *n_runs;       /* [layer][seq] blocks */
    size_t *run_start;    /* [layer][seq][cap] first row index of each block */
    size_t evicted;
} H2O;

static size_t slot_of(const H2O *c, size_t layer, size_t seq)
{
    return layer * c->base.geo.n_seqs + seq;
}

static unsigned char *row_k(const H2O *c, size_t slot, size_t h, size_t i)
{
    return c->k + ((slot * c->base.geo.n_kv_heads + h) * c->cap + i) * c->k_row;
}

static unsigned char *row_v(const H2O *c, size_t slot, size_t h, size_t i)
{
    return c->v + ((slot * c->base.geo.n_kv_heads + h) * c->cap + i) * c->v_row;
}

/* Recompute where the runs of consecutive positions start. */
static void index_runs(H2O *c, size_t slot)
{
    const size_t *pos = c->pos + slot * c->cap;
    size_t *start = c->run_start + slot * c->cap, n = 0;
    for (size_t i = 0; i < c->count[slot]; i++)
        if (i == 0 || pos[i] != pos[i - 1] + 1)
            start[n++] = i;
    c->n_runs[slot] = n;
}

/* Drop row i of every head of slot s. */
static void evict_row(H2O *c, size_t s, size_t i)
{
    const KvGeometry *g = &c->base.geo;
    size_t rest = c->count[s] - i - 1;
    for (size_t h = 0; h < g->n_kv_heads; h++) {
        memmove(row_k(c, s, h, i), row_k(c, s, h, i + 1), rest * c->k_row);
        memmove(row_v(c, s, h, i), row_v(c, s, h, i + 1), rest * c->v_row);
    }
    memmove(&c->pos[s * c->cap + i], &c->pos[s * c->cap + i + 1], rest * sizeof *c->pos);
    memmove(&c->score[s * c->cap + i], &c->score[s * c->cap + i + 1], rest * sizeof *c->score);
    c->count[s]--;
    c->evicted++;
}

/* Evict the lowest-scored rows outside the recent window until slot s
 * holds at most `limit`; returns 0, or -1 when only recent rows are left. */
static int enforce(H2O *c, size_t s, size_t limit)
{
    const double *score = c->score + s * c->cap;
    while (c->count[s] > limit) {
        size_t newest = c->len[s], victim = SIZE_MAX;
        for (size_t i = 0; i < c->count[s]; i++) {
            if (c->pos[s * c->cap + i] + c->recent >= newest)
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
    const KvGeometry *g = &base->geo;
    size_t s = slot_of(c, layer, seq);
    if (p0 != c->len[s])
        return err_set(e, ERR_RUNTIME, "h2o cache: append at position %zu, expected %zu", p0, c->len[s]);
    if (n > c->pass)
        return err_set(e, ERR_RUNTIME, "h2o cache: a pass of %zu tokens exceeds pass=%zu", n, c->pass);
    /* room for the pass: without attention feedback (no observe call came)
     * the lowest scores are ties, and the oldest rows outside the window go */
    if (c->count[s] + n > c->cap && enforce(c, s, c->cap - n) < 0)
        return err_set(e, ERR_RUNTIME, "h2o cache: budget too small for its recent window");
    if (n > g->max_seq_len - p0)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > max_seq_len %zu", p0, n,
                       g->max_seq_len);
    size_t at = c->count[s];
    for (size_t h = 0; h < g->n_kv_heads; h++) {
        kv_encode_rows(row_k(c, s, h, at), c->k_row, k, n, h, g, &c->st.codec[c->st.k_fmt]);
        if (kv_stores_v(g)) /* an MLA latent cache keeps K rows only */
            kv_encode_rows(row_v(c, s, h, at), c->v_row, v, n, h, g, &c->st.codec[c->st.v_fmt]);
    }
    for (size_t t = 0; t < n; t++) {
        c->pos[s * c->cap + at + t] = p0 + t;
        c->score[s * c->cap + at + t] = 0;
    }
    c->count[s] += n;
    c->len[s] += n;
    index_runs(c, s);
    if (ctr)
        ctr->kv_bytes_written += n * g->n_kv_heads * (c->k_row + c->v_row);
    return 0;
}

static void h2o_observe(KvCache *base, size_t layer, size_t seq, size_t kv_head, const float *w, size_t q_stride,
                        size_t g_stride, size_t G, size_t nq, size_t n)
{
    H2O *c = (H2O *)base;
    size_t s = slot_of(c, layer, seq);
    double *score = c->score + s * c->cap;
    w += (nq - 1) * q_stride; /* the last query's (nq is 1: no observe_queries) */
    for (size_t j = 0; j < n && j < c->count[s]; j++) /* rows were seen in block order = position order */
        for (size_t gi = 0; gi < G; gi++)
            score[j] += w[gi * g_stride + j];
    if (kv_head + 1 < base->geo.n_kv_heads)
        return; /* evict once the whole layer has voted */
    enforce(c, s, c->budget); /* recent is at most the budget: this always succeeds */
    index_runs(c, s);
}

static size_t h2o_length(const KvCache *base, size_t layer, size_t seq)
{
    const H2O *c = (const H2O *)base;
    return c->len[slot_of(c, layer, seq)];
}

static size_t h2o_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    const H2O *c = (const H2O *)base;
    return c->n_runs[slot_of(c, layer, seq)];
}

static void h2o_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const H2O *c = (const H2O *)base;
    size_t s = slot_of(c, layer, seq), first = c->run_start[s * c->cap + i];
    size_t end = i + 1 < c->n_runs[s] ? c->run_start[s * c->cap + i + 1] : c->count[s];
    *out = (KvBlock){
        .pos = c->pos[s * c->cap + first], .n = end - first,
        .k = row_k(c, s, h, first), .v = row_v(c, s, h, first),
        .k_stride = c->k_row, .v_stride = c->v_row,
        .k_fmt = c->st.k_fmt, .v_fmt = c->st.v_fmt,
    };
}

static size_t h2o_bytes_used(const KvCache *base)
{
    const H2O *c = (const H2O *)base;
    size_t rows = 0;
    for (size_t s = 0; s < base->geo.n_layers * base->geo.n_seqs; s++)
        rows += c->count[s];
    return rows * base->geo.n_kv_heads * (c->k_row + c->v_row);
}

static size_t h2o_bytes_reserved(const KvCache *base)
{
    const H2O *c = (const H2O *)base;
    const KvGeometry *g = &base->geo;
    return g->n_layers * g->n_seqs * g->n_kv_heads * c->cap * (c->k_row + c->v_row);
}

static void h2o_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    const H2O *c = (const H2O *)base;
    size_t s = slot_of(c, layer, seq), len = c->len[s];
    kv_cells_prefix(base, len, out, n);
    for (size_t i = 0; i < len && i < n; i++)
        out[i].state = CELL_EVICTED;
    for (size_t i = 0; i < c->count[s]; i++) {
        size_t p = c->pos[s * c->cap + i];
        if (p < n)
            out[p].state = (unsigned char)(base->lossy && (c->st.k_fmt != FMT_F32 || c->st.v_fmt != FMT_F32)
                                               ? CELL_LOSSY : CELL_EXACT);
    }
}

static void h2o_drop(KvCache *base, size_t seq)
{
    H2O *c = (H2O *)base;
    for (size_t l = 0; l < base->geo.n_layers; l++) {
        size_t s = slot_of(c, l, seq);
        c->count[s] = c->len[s] = c->n_runs[s] = 0;
    }
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
    const KvGeometry *g = &base->geo;
    if (c->len[slot_of(c, 0, dst)])
        return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < g->n_layers; l++) {
        size_t a = slot_of(c, l, src), b = slot_of(c, l, dst);
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            memcpy(row_k(c, b, h, 0), row_k(c, a, h, 0), c->count[a] * c->k_row);
            memcpy(row_v(c, b, h, 0), row_v(c, a, h, 0), c->count[a] * c->v_row);
        }
        memcpy(&c->pos[b * c->cap], &c->pos[a * c->cap], c->count[a] * sizeof *c->pos);
        memcpy(&c->score[b * c->cap], &c->score[a * c->cap], c->count[a] * sizeof *c->score);
        c->count[b] = c->count[a], c->len[b] = c->len[a];
        index_runs(c, b);
        if (ctr)
            ctr->bytes_copied += c->count[a] * g->n_kv_heads * (c->k_row + c->v_row);
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
    free(c->k), free(c->v), free(c->pos), free(c->score), free(c->count), free(c->len);
    free(c->n_runs), free(c->run_start);
    free(c);
}

static const KvCacheOps h2o_ops = {
    .name = "h2o",
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
    if (kv_check_fit(geo, "h2o", budget + pass, "rows per layer, sequence and KV head",
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
    c->st = *st;
    c->budget = budget, c->recent = recent, c->pass = pass, c->cap = budget + pass;
    c->k_row = kv_k_row_bytes(geo, st), c->v_row = kv_v_row_stored(geo, st);
    size_t slots = geo->n_layers * geo->n_seqs;
    c->k = calloc(slots * geo->n_kv_heads * c->cap, c->k_row);
    c->v = kv_calloc(slots * geo->n_kv_heads * c->cap, c->v_row);
    c->pos = calloc(slots * c->cap, sizeof *c->pos);
    c->score = calloc(slots * c->cap, sizeof *c->score);
    c->count = calloc(slots, sizeof *c->count);
    c->len = calloc(slots, sizeof *c->len);
    c->n_runs = calloc(slots, sizeof *c->n_runs);
    c->run_start = calloc(slots * c->cap, sizeof *c->run_start);
    if (!c->k || !c->v || !c->pos || !c->score || !c->count || !c->len || !c->n_runs || !c->run_start) {
        h2o_destroy(&c->base);
        err_set(e, ERR_RUNTIME, "h2o cache: out of memory");
        return NULL;
    }
    return &c->base;
}
