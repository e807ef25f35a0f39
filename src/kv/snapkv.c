/* snapkv.c: SnapKV (Li et al. 2024): the prompt's last queries choose what
 * the rest of the run keeps.
 *
 * At the end of a prompt pass, the observation window (the last `window`
 * prompt positions) votes: each window query's softmax weights on the
 * positions before the window are summed over the window's queries and over
 * every query head of the layer, then smoothed by an average over `pool`
 * neighbouring positions (SnapKV's avg_pool1d, zeros past the ends), so a
 * position next to a strongly weighed one counts too and the kept rows come
 * in runs. The `budget - window` best-voted positions stay, with the window
 * itself; the rest are evicted. Decode steps then append every token and
 * never evict: the cache grows from `budget` by one row per generated token.
 *
 * By default one choice per layer: all KV heads of a layer keep the same
 * positions, so the layer's rows are runs of positions (blocks) shared by
 * every head, as in h2o.c; averaging is linear, so the layer's choice is the
 * top of the head-summed pooled votes. With per_head=1 each KV head keeps
 * the positions its own group of query heads voted for, as the paper does:
 * a slot per (layer, sequence, KV head), each holding the same number of
 * rows at its own positions, read as blocks of one row (the cache interface
 * gives every head of a layer the same count of blocks).
 *
 * A pass of more than one token is a prompt pass (a chunked prefill votes
 * after each chunk, over what the last one kept plus the new rows); a pass
 * of one token is decode. The whole prompt is held until its window has
 * voted, so each (layer, sequence) has max_seq_len slots, rows in position
 * order. */
#include "kv/layouts.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    double vote; /* pooled */
    size_t row;
} Ranked;

typedef struct {
    KvCache base;
    RowRuns rows;         /* cap = max_seq_len: the whole prompt is held until its window votes */
    size_t budget, window, pool;
    int per_head;         /* a choice per KV head (slots per layer, sequence and head) */
    double *vote;         /* [layer][seq][cap] the window's attention on each row, this pass */
    Ranked *rank;         /* [cap] scratch: candidate rows by pooled vote */
    unsigned char *keep;  /* [cap] scratch: 1 for a row that stays */
    size_t evicted;
} SnapKV;

/* The slot of (layer, seq) and, with per_head, of KV head h. */
static size_t slot_of(const SnapKV *c, size_t layer, size_t seq, size_t h)
{
    const size_t s = layer * c->base.geo.n_seqs + seq;
    return c->per_head ? s * c->base.geo.n_kv_heads + h : s;
}

/* Every slot of (layer, seq): one, or one a KV head. */
static size_t slots_per(const SnapKV *c)
{
    return c->per_head ? c->base.geo.n_kv_heads : 1;
}

static int snapkv_append(KvCache *base, size_t layer, size_t seq, size_t p0, size_t n, const float *k,
                         const float *v, Counters *ctr, Err *e)
{
    SnapKV *c = (SnapKV *)base;
    const KvGeometry *g = &base->geo;
    size_t s = slot_of(c, layer, seq, 0);
    if (p0 != c->rows.len[s])
        return err_set(e, ERR_RUNTIME, "snapkv cache: append at position %zu, expected %zu", p0, c->rows.len[s]);
    if (n > g->max_seq_len - p0)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > max_seq_len %zu", p0, n,
                       g->max_seq_len);
    if (!c->per_head) {
        rows_append(&c->rows, g, s, p0, n, k, v, ctr); /* count <= len: a cap of max_seq_len has room */
        return 0;
    }
    for (size_t h = 0; h < g->n_kv_heads; h++)
        rows_append_head(&c->rows, g, slot_of(c, layer, seq, h), h, p0, n, k, v, ctr);
    return 0;
}

/* A prompt pass's window votes; a decode step asks for nothing. */
static size_t snapkv_observe_queries(const KvCache *base, size_t n_new)
{
    const SnapKV *c = (const SnapKV *)base;
    if (n_new < 2)
        return 0;
    return c->window < n_new ? c->window : n_new;
}

/* Best pooled vote first; ties keep the earlier position first, so the
 * choice is deterministic. */
static int by_vote(const void *a, const void *b)
{
    const Ranked *x = a, *y = b;
    if (x->vote != y->vote)
        return x->vote > y->vote ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* Keep the window and the budget - window best-voted rows before it. */
static void select_rows(SnapKV *c, size_t s)
{
    const size_t held = c->rows.count[s];
    if (held <= c->budget)
        return;
    const size_t n = held - c->window, half = c->pool / 2; /* candidates: the rows before the window */
    const double *vote = c->vote + s * c->rows.cap;
    for (size_t j = 0; j < n; j++) { /* average over the pool's neighbours, zeros past the ends */
        double sum = 0;
        size_t lo = j > half ? j - half : 0, hi = j + half < n ? j + half : n - 1;
        for (size_t i = lo; i <= hi; i++)
            sum += vote[i];
        c->rank[j] = (Ranked){ sum / (double)c->pool, j };
    }
    qsort(c->rank, n, sizeof *c->rank, by_vote);
    memset(c->keep, 0, held);
    for (size_t r = 0; r < c->budget - c->window; r++)
        c->keep[c->rank[r].row] = 1;
    memset(c->keep + n, 1, c->window);
    c->evicted += rows_compact(&c->rows, s, c->keep);
}

static void snapkv_observe(KvCache *base, size_t layer, size_t seq, size_t kv_head, const float *w,
                           size_t q_stride, size_t g_stride, size_t G, size_t nq, size_t n)
{
    SnapKV *c = (SnapKV *)base;
    size_t s = slot_of(c, layer, seq, kv_head);
    double *vote = c->vote + s * c->rows.cap;
    if (kv_head == 0 || c->per_head)
        memset(vote, 0, c->rows.count[s] * sizeof *vote);
    for (size_t i = 0; i < nq; i++) { /* rows were seen in block order = position order */
        size_t seen = n - (nq - 1 - i);
        for (size_t gi = 0; gi < G; gi++) {
            const float *wq = w + i * q_stride + gi * g_stride;
            for (size_t j = 0; j < seen && j < c->rows.count[s]; j++)
                vote[j] += wq[j];
        }
    }
    if (c->per_head || kv_head + 1 == base->geo.n_kv_heads) /* per layer: once the whole layer has voted */
        select_rows(c, s);
}

static size_t snapkv_length(const KvCache *base, size_t layer, size_t seq)
{
    const SnapKV *c = (const SnapKV *)base;
    return c->rows.len[slot_of(c, layer, seq, 0)];
}

/* Per head, every head holds as many rows (the same appends, the same
 * budget) at its own positions: a block of one row each. */
static size_t snapkv_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    const SnapKV *c = (const SnapKV *)base;
    const size_t s = slot_of(c, layer, seq, 0);
    return c->per_head ? c->rows.count[s] : c->rows.n_runs[s];
}

static void snapkv_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const SnapKV *c = (const SnapKV *)base;
    const RowRuns *r = &c->rows;
    if (!c->per_head) {
        rows_block(r, slot_of(c, layer, seq, 0), h, i, out);
        return;
    }
    const size_t s = slot_of(c, layer, seq, h);
    *out = (KvBlock){ .pos = r->pos[s * r->cap + i], .n = 1, .k = rows_k(r, s, 0, i), .v = rows_v(r, s, 0, i),
                      .k_stride = r->k_row, .v_stride = r->v_row, .k_fmt = r->st.k_fmt, .v_fmt = r->st.v_fmt };
}

static size_t snapkv_bytes_used(const KvCache *base)
{
    return rows_bytes_used(&((const SnapKV *)base)->rows);
}

static size_t snapkv_bytes_reserved(const KvCache *base)
{
    return rows_bytes_reserved(&((const SnapKV *)base)->rows);
}

static void snapkv_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    const SnapKV *c = (const SnapKV *)base;
    const RowRuns *r = &c->rows;
    rows_cells(base, r, slot_of(c, layer, seq, 0), out, n);
    for (size_t h = 1; h < slots_per(c); h++) /* per head: a position any head holds is held */
        rows_mark_held(r, slot_of(c, layer, seq, h), out, n);
}

static void snapkv_drop(KvCache *base, size_t seq)
{
    SnapKV *c = (SnapKV *)base;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        for (size_t h = 0; h < slots_per(c); h++)
            rows_clear(&c->rows, slot_of(c, l, seq, h));
}

static void snapkv_reset(KvCache *base)
{
    for (size_t s = 0; s < base->geo.n_seqs; s++)
        snapkv_drop(base, s);
    ((SnapKV *)base)->evicted = 0;
}

static int snapkv_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    SnapKV *c = (SnapKV *)base;
    if (c->rows.len[slot_of(c, 0, dst, 0)])
        return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < base->geo.n_layers; l++)
        for (size_t h = 0; h < slots_per(c); h++)
            rows_copy(&c->rows, slot_of(c, l, src, h), slot_of(c, l, dst, h), ctr);
    return 0;
}

static void snapkv_stats(const KvCache *base, KvStats *out)
{
    out->evictions = ((const SnapKV *)base)->evicted;
}

static void snapkv_destroy(KvCache *base)
{
    SnapKV *c = (SnapKV *)base;
    rows_free(&c->rows);
    free(c->vote), free(c->rank), free(c->keep);
    free(c);
}

static const KvCacheOps snapkv_ops = {
    .name = "snapkv",
    .rollback = "a pass of more than one row is a prompt pass to it: the target's check of K+1 rows would vote and evict again",
    .append = snapkv_append,
    .n_blocks = snapkv_n_blocks,
    .block = snapkv_block,
    .length = snapkv_length,
    .bytes_used = snapkv_bytes_used,
    .bytes_reserved = snapkv_bytes_reserved,
    .reset = snapkv_reset,
    .cells = snapkv_cells,
    .fork = snapkv_fork,
    .drop = snapkv_drop,
    .stats = snapkv_stats,
    .observe = snapkv_observe,
    .observe_queries = snapkv_observe_queries,
    .destroy = snapkv_destroy,
};

KvCache *snapkv_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    size_t budget = 256, window = 32, pool = 7, per_head = 0;
    if (spec_take_size(opts, "budget", &budget, e) < 0 || spec_take_size(opts, "window", &window, e) < 0 ||
        spec_take_size(opts, "pool", &pool, e) < 0 || spec_take_size0(opts, "per_head", &per_head, e) < 0 ||
        spec_check_all_taken(opts, "budget=ROWS, window=W, pool=K, per_head=0|1", e) < 0)
        return NULL;
    if (per_head > 1) {
        err_set(e, ERR_USAGE, "cache 'snapkv': per_head=%zu; it is 0 (a choice per layer) or 1 (per KV head)",
                per_head);
        return NULL;
    }
    if (window > budget) {
        err_set(e, ERR_USAGE, "cache 'snapkv': window=%zu must not exceed budget=%zu", window, budget);
        return NULL;
    }
    if (pool % 2 == 0) { /* centred on the position it smooths */
        err_set(e, ERR_USAGE, "cache 'snapkv': pool=%zu must be odd (1 = no smoothing)", pool);
        return NULL;
    }
    if (kv_check_fit(geo, "snapkv", geo->max_seq_len, "rows per layer, sequence and KV head",
                     kv_head_row_bytes(geo, kv_k_row_bytes(geo, st), kv_v_row_stored(geo, st)), e) < 0)
        return NULL;
    SnapKV *c = calloc(1, sizeof *c);
    if (!c) {
        err_set(e, ERR_RUNTIME, "snapkv cache: out of memory");
        return NULL;
    }
    c->base.ops = &snapkv_ops;
    c->base.geo = *geo;
    c->base.lossy = 1;
    c->budget = budget, c->window = window, c->pool = pool, c->per_head = per_head == 1;
    KvGeometry store = *geo; /* per head: a slot per (layer, sequence, KV head), one head each */
    if (c->per_head)
        store.n_seqs *= geo->n_kv_heads, store.n_kv_heads = 1;
    const size_t cap = geo->max_seq_len;
    c->vote = calloc(store.n_layers * store.n_seqs * cap, sizeof *c->vote);
    c->rank = calloc(cap, sizeof *c->rank);
    c->keep = calloc(cap, 1);
    if (rows_init(&c->rows, &store, st, cap) < 0 || !c->vote || !c->rank || !c->keep) {
        snapkv_destroy(&c->base);
        err_set(e, ERR_RUNTIME, "snapkv cache: out of memory");
        return NULL;
    }
    return &c->base;
}
