/* contiguous.c: the pre-allocated cache of the Marlin design and the teaching notes.
 *
 * One buffer per tensor, K and V each [layer][seq][kv_head][max] rows, a row
 * being head_dim values in the storage format (f32 unless +quant says
 * otherwise), reserved up front; an append encodes the next rows in place
 * and never allocates. Running past `max` is an error, never a write past the
 * end. */
#include "kv/layouts.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    KvCache base;
    KvStorage st;
    size_t max;              /* rows reserved per (layer, seq) */
    size_t k_row, v_row;     /* bytes of one row */
    unsigned char *k, *v;    /* [n_layers][n_seqs][n_kv_heads][max] rows */
    size_t *len;             /* [n_layers][n_seqs] rows held */
} Contiguous;

static size_t slot(const Contiguous *c, size_t layer, size_t seq)
{
    return layer * c->base.geo.n_seqs + seq;
}

/* index of row `row` of head h in (layer, seq), counted in rows */
static size_t row_index(const Contiguous *c, size_t layer, size_t seq, size_t h, size_t row)
{
    return (slot(c, layer, seq) * c->base.geo.n_kv_heads + h) * c->max + row;
}

static int contiguous_append(KvCache *base, size_t layer, size_t seq, size_t pos, size_t n, const float *k,
                             const float *v, Counters *ctr, Err *e)
{
    Contiguous *c = (Contiguous *)base;
    const KvGeometry *g = &base->geo;
    size_t *len = &c->len[slot(c, layer, seq)];
    if (pos != *len)
        return err_set(e, ERR_RUNTIME, "contiguous cache: append at position %zu, expected %zu", pos, *len);
    if (n > c->max - *len)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > %zu reserved", *len, n, c->max);
    for (size_t h = 0; h < g->n_kv_heads; h++) {
        size_t first = row_index(c, layer, seq, h, *len);
        kv_encode_rows(c->k + first * c->k_row, c->k_row, k, n, h, g, &c->st.codec[c->st.k_fmt]);
        if (kv_stores_v(g))
            kv_encode_rows(c->v + first * c->v_row, c->v_row, v, n, h, g, &c->st.codec[c->st.v_fmt]);
    }
    *len += n;
    if (ctr)
        ctr->kv_bytes_written += n * g->n_kv_heads * (c->k_row + c->v_row);
    return 0;
}

/* Rolling back is forgetting: the rows past len stay where they are, to be
 * written over. A quantized row is whole (its blocks run along head_dim),
 * so no block is left partly filled. */
static int contiguous_truncate(KvCache *base, size_t seq, size_t len, Counters *ctr, Err *e)
{
    Contiguous *c = (Contiguous *)base;
    (void)ctr, (void)e;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        if (c->len[slot(c, l, seq)] > len)
            c->len[slot(c, l, seq)] = len;
    return 0;
}

static size_t contiguous_length(const KvCache *base, size_t layer, size_t seq)
{
    const Contiguous *c = (const Contiguous *)base;
    return c->len[slot(c, layer, seq)];
}

static size_t contiguous_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    return contiguous_length(base, layer, seq) > 0;
}

static void contiguous_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const Contiguous *c = (const Contiguous *)base;
    (void)i;
    size_t first = row_index(c, layer, seq, h, 0);
    *out = (KvBlock){
        .pos = 0, .n = c->len[slot(c, layer, seq)],
        .k = c->k + first * c->k_row, .v = c->v + first * c->v_row,
        .k_stride = c->k_row, .v_stride = c->v_row,
        .k_fmt = c->st.k_fmt, .v_fmt = c->st.v_fmt,
    };
}

static size_t contiguous_bytes_used(const KvCache *base)
{
    const Contiguous *c = (const Contiguous *)base;
    size_t rows = 0;
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        rows += c->len[i];
    return rows * base->geo.n_kv_heads * (c->k_row + c->v_row);
}

static size_t contiguous_bytes_reserved(const KvCache *base)
{
    const Contiguous *c = (const Contiguous *)base;
    const KvGeometry *g = &base->geo;
    return g->n_layers * g->n_seqs * c->max * g->n_kv_heads * (c->k_row + c->v_row);
}

static size_t contiguous_capacity(const KvCache *base) { return ((const Contiguous *)base)->max; }

static void contiguous_reset(KvCache *base)
{
    Contiguous *c = (Contiguous *)base;
    memset(c->len, 0, base->geo.n_layers * base->geo.n_seqs * sizeof *c->len);
}

/* Copy every layer's rows of src into the empty dst. */
static int contiguous_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    Contiguous *c = (Contiguous *)base;
    const KvGeometry *g = &base->geo;
    for (size_t l = 0; l < g->n_layers; l++)
        if (c->len[slot(c, l, dst)] != 0)
            return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < g->n_layers; l++) {
        size_t n = c->len[slot(c, l, src)];
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            memcpy(c->k + row_index(c, l, dst, h, 0) * c->k_row, c->k + row_index(c, l, src, h, 0) * c->k_row,
                   n * c->k_row);
            memcpy(c->v + row_index(c, l, dst, h, 0) * c->v_row, c->v + row_index(c, l, src, h, 0) * c->v_row,
                   n * c->v_row);
        }
        c->len[slot(c, l, dst)] = n;
        if (ctr)
            ctr->bytes_copied += n * g->n_kv_heads * (c->k_row + c->v_row);
    }
    return 0;
}

static void contiguous_drop(KvCache *base, size_t seq)
{
    Contiguous *c = (Contiguous *)base;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        c->len[slot(c, l, seq)] = 0;
}

static void contiguous_destroy(KvCache *base)
{
    Contiguous *c = (Contiguous *)base;
    free(c->k);
    free(c->v);
    free(c->len);
    free(c);
}

static void contiguous_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    kv_cells_prefix(base, contiguous_length(base, layer, seq), out, n);
}

static const KvCacheOps contiguous_ops = {
    .name = "contiguous",
    .truncate = contiguous_truncate,
    .rollback = "the rows held shrink to the kept length, in place; a quantized row is whole (its blocks "
                "of 32 run along head_dim), so no block is left partly filled",
    .append = contiguous_append,
    .n_blocks = contiguous_n_blocks,
    .block = contiguous_block,
    .length = contiguous_length,
    .bytes_used = contiguous_bytes_used,
    .bytes_reserved = contiguous_bytes_reserved,
    .capacity = contiguous_capacity,
    .reset = contiguous_reset,
    .cells = contiguous_cells,
    .fork = contiguous_fork,
    .drop = contiguous_drop,
    .destroy = contiguous_destroy,
};

KvCache *contiguous_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    size_t max = geo->max_seq_len;
    if (spec_take_size(opts, "max", &max, e) < 0 || spec_check_all_taken(opts, "max=ROWS", e) < 0)
        return NULL;
    if (max > geo->max_seq_len) {
        err_set(e, ERR_USAGE, "cache 'contiguous': max=%zu is beyond the model's max_seq_len %zu", max,
                geo->max_seq_len);
        return NULL;
    }
    if (kv_check_fit(geo, "contiguous", max, "rows per layer, sequence and KV head",
                     kv_head_row_bytes(geo, kv_k_row_bytes(geo, st), kv_v_row_stored(geo, st)), e) < 0)
        return NULL;
    Contiguous *c = calloc(1, sizeof *c);
    size_t rows = geo->n_layers * geo->n_seqs * geo->n_kv_heads * max;
    size_t k_row = kv_k_row_bytes(geo, st), v_row = kv_v_row_stored(geo, st);
    if (c) {
        c->k = calloc(rows, k_row);
        c->v = kv_calloc(rows, v_row);
        c->len = calloc(geo->n_layers * geo->n_seqs, sizeof *c->len);
    }
    if (!c || !c->k || !c->v || !c->len) {
        if (c)
            contiguous_destroy(&c->base);
        err_set(e, ERR_RUNTIME, "contiguous cache: out of memory reserving %zu bytes", rows * (k_row + v_row));
        return NULL;
    }
    c->base.ops = &contiguous_ops;
    c->base.geo = *geo;
    c->st = *st;
    c->max = max;
    c->k_row = k_row;
    c->v_row = v_row;
    return &c->base;
}
