/* ring.c: a sliding-window cache with attention sinks (the Marlin design's ring
 * buffer; Mistral's window; StreamingLLM's sinks).
 *
 * Per (layer, sequence, KV head): `sinks` rows for the first positions, kept
 * for good, then a ring of `window + pass - 1` slots written at
 *     slot = (pos - sinks) mod slots
 * so memory is bounded whatever the sequence length. The extra pass - 1
 * slots let one pass of up to `pass` tokens append all its rows before its
 * queries read them: the earliest query of the pass still finds the window
 * before it (llama.cpp sizes its sliding-window cache the same way). Keys are
 * stored after RoPE, so positions stay absolute when rows wrap.
 *
 * The blocks show the sinks and the last window + n - 1 positions, n being
 * the size of the last pass: a decode step sees exactly the sinks and the
 * last `window` positions; a prefill chunk's earliest query still finds its
 * window (later queries of the chunk see a little more, unless the model's
 * own window trims them).
 *
 * Against a model whose config sets sliding_window = window (and no sinks),
 * this cache is exact: it evicts only rows no query can see. Against a
 * full-attention model it is lossy: older rows are gone. */
#include "kv/layouts.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    KvCache base;
    KvStorage st;
    size_t window, sinks, pass, slots; /* slots = window + pass - 1, or fewer when max_seq_len is */
    size_t k_row, v_row;
    unsigned char *k, *v; /* [layer][seq][kv_head][sinks + slots] rows */
    size_t *len;          /* [layer][seq] positions appended so far */
    size_t *last_n;       /* [layer][seq] rows of the last append */
} Ring;

static size_t slot_index(const Ring *r, size_t layer, size_t seq)
{
    return layer * r->base.geo.n_seqs + seq;
}

/* Row index (in rows) of the storage of position pos of head h. */
static size_t row_of(const Ring *r, size_t layer, size_t seq, size_t h, size_t pos)
{
    size_t base = (slot_index(r, layer, seq) * r->base.geo.n_kv_heads + h) * (r->sinks + r->slots);
    return base + (pos < r->sinks ? pos : r->sinks + (pos - r->sinks) % r->slots);
}

/* Oldest position the ring part shows, for a sequence of len whose last
 * pass appended last_n rows: the window before that pass's first token. */
static size_t ring_first(const Ring *r, size_t len, size_t last_n)
{
    if (len <= r->sinks)
        return len;
    size_t shown = r->window + (last_n ? last_n : 1) - 1; /* <= slots, unless max_seq_len clamped them */
    return len - r->sinks > shown ? len - shown : r->sinks;
}

static size_t first_of(const Ring *r, size_t layer, size_t seq)
{
    size_t i = slot_index(r, layer, seq);
    return ring_first(r, r->len[i], r->last_n[i]);
}

static int ring_append(KvCache *base, size_t layer, size_t seq, size_t pos, size_t n, const float *k,
                       const float *v, Counters *ctr, Err *e)
{
    Ring *r = (Ring *)base;
    const KvGeometry *g = &base->geo;
    size_t *len = &r->len[slot_index(r, layer, seq)];
    if (pos != *len)
        return err_set(e, ERR_RUNTIME, "ring cache: append at position %zu, expected %zu", pos, *len);
    if (n > r->pass)
        return err_set(e, ERR_RUNTIME, "ring cache: a pass of %zu tokens exceeds pass=%zu", n, r->pass);
    if (n > g->max_seq_len - pos)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > max_seq_len %zu", pos, n,
                       g->max_seq_len);
    for (size_t t = 0; t < n; t++)
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            size_t row = row_of(r, layer, seq, h, pos + t);
            kv_encode_rows(r->k + row * r->k_row, r->k_row, k + t * g->n_kv_heads * g->head_dim, 1, h, g,
                           &r->st.codec[r->st.k_fmt]);
            if (kv_stores_v(g))
                kv_encode_rows(r->v + row * r->v_row, r->v_row, v + t * g->n_kv_heads * g->head_dim, 1, h, g,
                               &r->st.codec[r->st.v_fmt]);
        }
    *len += n;
    r->last_n[slot_index(r, layer, seq)] = n;
    if (ctr)
        ctr->kv_bytes_written += n * g->n_kv_heads * (r->k_row + r->v_row);
    return 0;
}

static size_t ring_length(const KvCache *base, size_t layer, size_t seq)
{
    const Ring *r = (const Ring *)base;
    size_t len = r->len[slot_index(r, layer, seq)];
    size_t sinks = len < r->sinks ? len : r->sinks;
    return sinks + (len - first_of(r, layer, seq));
}

/* The runs of storage, in position order: the sinks, then the ring's older
 * part up to its last slot, then its newer part from slot 0. */
static size_t runs(const Ring *r, size_t len, size_t first, size_t start[3], size_t count[3])
{
    size_t n = 0;
    size_t sinks = len < r->sinks ? len : r->sinks;
    if (sinks)
        start[n] = 0, count[n++] = sinks;
    if (len > first) {
        size_t s0 = (first - r->sinks) % r->slots; /* slot of the oldest ring row */
        size_t upto_end = r->slots - s0, held = len - first;
        start[n] = first, count[n++] = held < upto_end ? held : upto_end;
        if (held > upto_end)
            start[n] = first + upto_end, count[n++] = held - upto_end;
    }
    return n;
}

static size_t ring_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    const Ring *r = (const Ring *)base;
    size_t start[3], count[3];
    return runs(r, r->len[slot_index(r, layer, seq)], first_of(r, layer, seq), start, count);
}

static void ring_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const Ring *r = (const Ring *)base;
    size_t start[3], count[3];
    runs(r, r->len[slot_index(r, layer, seq)], first_of(r, layer, seq), start, count);
    size_t row = row_of(r, layer, seq, h, start[i]);
    *out = (KvBlock){
        .pos = start[i], .n = count[i],
        .k = r->k + row * r->k_row, .v = r->v + row * r->v_row,
        .k_stride = r->k_row, .v_stride = r->v_row,
        .k_fmt = r->st.k_fmt, .v_fmt = r->st.v_fmt,
    };
}

static size_t ring_bytes_used(const KvCache *base)
{
    const Ring *r = (const Ring *)base;
    size_t rows = 0;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        for (size_t s = 0; s < base->geo.n_seqs; s++)
            rows += ring_length(base, l, s);
    return rows * base->geo.n_kv_heads * (r->k_row + r->v_row);
}

static size_t ring_bytes_reserved(const KvCache *base)
{
    const Ring *r = (const Ring *)base;
    const KvGeometry *g = &base->geo;
    return g->n_layers * g->n_seqs * g->n_kv_heads * (r->sinks + r->slots) * (r->k_row + r->v_row);
}

static void ring_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    const Ring *r = (const Ring *)base;
    size_t len = r->len[slot_index(r, layer, seq)], first = first_of(r, layer, seq);
    kv_cells_prefix(base, len, out, n);
    for (size_t i = r->sinks; i < first && i < n; i++)
        out[i].state = CELL_EVICTED; /* fell out of the window */
}

static void ring_drop(KvCache *base, size_t seq)
{
    Ring *r = (Ring *)base;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        r->len[slot_index(r, l, seq)] = r->last_n[slot_index(r, l, seq)] = 0;
}

static void ring_reset(KvCache *base)
{
    for (size_t s = 0; s < base->geo.n_seqs; s++)
        ring_drop(base, s);
}

static int ring_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    Ring *r = (Ring *)base;
    const KvGeometry *g = &base->geo;
    size_t rows = r->sinks + r->slots;
    if (r->len[slot_index(r, 0, dst)] != 0)
        return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < g->n_layers; l++) {
        size_t from = row_of(r, l, src, 0, 0), to = row_of(r, l, dst, 0, 0);
        memcpy(r->k + to * r->k_row, r->k + from * r->k_row, g->n_kv_heads * rows * r->k_row);
        memcpy(r->v + to * r->v_row, r->v + from * r->v_row, g->n_kv_heads * rows * r->v_row);
        r->len[slot_index(r, l, dst)] = r->len[slot_index(r, l, src)];
        r->last_n[slot_index(r, l, dst)] = r->last_n[slot_index(r, l, src)];
        if (ctr)
            ctr->bytes_copied += g->n_kv_heads * rows * (r->k_row + r->v_row);
    }
    return 0;
}

static size_t ring_max_pass(const KvCache *base)
{
    return ((const Ring *)base)->pass;
}

static void ring_destroy(KvCache *base)
{
    Ring *r = (Ring *)base;
    free(r->k);
    free(r->v);
    free(r->len);
    free(r->last_n);
    free(r);
}

static const KvCacheOps ring_ops = {
    .name = "ring",
    .rollback = "a ring writes new rows over its oldest ones: the rows a rejected token overwrote are gone, and the window of the kept tokens needs them",
    .append = ring_append,
    .n_blocks = ring_n_blocks,
    .block = ring_block,
    .length = ring_length,
    .bytes_used = ring_bytes_used,
    .bytes_reserved = ring_bytes_reserved,
    .reset = ring_reset,
    .cells = ring_cells,
    .fork = ring_fork,
    .drop = ring_drop,
    .max_pass = ring_max_pass,
    .destroy = ring_destroy,
};

KvCache *ring_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    size_t window = 0, sinks = 0, pass = 64;
    if (spec_take_size(opts, "window", &window, e) < 0 || spec_take_size0(opts, "sinks", &sinks, e) < 0 ||
        spec_take_size(opts, "pass", &pass, e) < 0 ||
        spec_check_all_taken(opts, "window=W (required), sinks=S, pass=P", e) < 0)
        return NULL;
    if (window == 0) {
        err_set(e, ERR_USAGE, "cache 'ring' needs window=W (rows kept besides the sinks)");
        return NULL;
    }
    /* A sequence never holds more than max_seq_len positions: sinks and
     * slots beyond that would only be reserved, and copied at every fork. */
    if (sinks > geo->max_seq_len)
        sinks = geo->max_seq_len;
    size_t slots = window + pass - 1, reachable = geo->max_seq_len - sinks;
    if (slots > reachable) /* the ring never wraps: the same rows are kept */
        slots = reachable ? reachable : 1;
    if (kv_check_fit(geo, "ring", sinks + slots, "rows per layer, sequence and KV head",
                     kv_head_row_bytes(geo, kv_k_row_bytes(geo, st), kv_v_row_stored(geo, st)), e) < 0)
        return NULL;
    Ring *r = calloc(1, sizeof *r);
    if (!r) {
        err_set(e, ERR_RUNTIME, "ring cache: out of memory");
        return NULL;
    }
    r->base.ops = &ring_ops;
    r->base.geo = *geo;
    r->base.lossy = 1; /* exact only when the model's own window hides what it drops */
    r->st = *st;
    r->window = window, r->sinks = sinks, r->pass = pass, r->slots = slots;
    r->k_row = kv_k_row_bytes(geo, st), r->v_row = kv_v_row_stored(geo, st);
    size_t rows = geo->n_layers * geo->n_seqs * geo->n_kv_heads * (sinks + r->slots);
    r->k = calloc(rows, r->k_row);
    r->v = kv_calloc(rows, r->v_row);
    r->len = calloc(geo->n_layers * geo->n_seqs, sizeof *r->len);
    r->last_n = calloc(geo->n_layers * geo->n_seqs, sizeof *r->last_n);
    if (!r->k || !r->v || !r->len || !r->last_n) {
        ring_destroy(&r->base);
        err_set(e, ERR_RUNTIME, "ring cache: out of memory for %zu rows", rows);
        return NULL;
    }
    return &r->base;
}
