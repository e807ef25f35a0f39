/* contiguous.c: the pre-allocated cache of seeds 000 and 002.
 *
 * One buffer per tensor, K and V each [layer][seq][kv_head][max][head_dim],
 * reserved up front; an append writes the next rows in place and never
 * allocates. Running past `max` is an error, never a write past the end. */
#include "kv/layouts.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    KvCache base;
    size_t max;    /* rows reserved per (layer, seq) */
    float *k, *v;  /* [n_layers][n_seqs][n_kv_heads][max][head_dim] */
    size_t *len;   /* [n_layers][n_seqs] rows held */
} Contiguous;

static size_t slot(const Contiguous *c, size_t layer, size_t seq)
{
    return layer * c->base.geo.n_seqs + seq;
}

/* first float of row `row` of head h in (layer, seq) */
static size_t row_offset(const Contiguous *c, size_t layer, size_t seq, size_t h, size_t row)
{
    const KvGeometry *g = &c->base.geo;
    return ((slot(c, layer, seq) * g->n_kv_heads + h) * c->max + row) * g->head_dim;
}

static int contiguous_append(KvCache *base, size_t layer, size_t seq, size_t pos, size_t n,
                             const float *k, const float *v, Counters *ctr, Err *e)
{
    Contiguous *c = (Contiguous *)base;
    const KvGeometry *g = &base->geo;
    size_t *len = &c->len[slot(c, layer, seq)];
    if (pos != *len)
        return err_set(e, ERR_RUNTIME, "contiguous cache: append at position %zu, expected %zu", pos, *len);
    if (n > c->max - *len)
        return err_set(e, ERR_USAGE, "cache overflow: %zu rows held + %zu new > %zu reserved", *len, n, c->max);
    size_t hd = g->head_dim;
    for (size_t t = 0; t < n; t++)
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            size_t src = (t * g->n_kv_heads + h) * hd;
            size_t dst = row_offset(c, layer, seq, h, *len + t);
            memcpy(c->k + dst, k + src, hd * sizeof(float));
            memcpy(c->v + dst, v + src, hd * sizeof(float));
        }
    *len += n;
    if (ctr)
        ctr->kv_bytes_written += 2 * n * g->n_kv_heads * hd * sizeof(float);
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
    size_t off = row_offset(c, layer, seq, h, 0);
    *out = (KvBlock){
        .pos = 0,
        .n = c->len[slot(c, layer, seq)],
        .k = c->k + off,
        .v = c->v + off,
        .k_stride = base->geo.head_dim * sizeof(float),
        .v_stride = base->geo.head_dim * sizeof(float),
        .k_fmt = FMT_F32,
        .v_fmt = FMT_F32,
    };
}

static size_t contiguous_bytes_used(const KvCache *base)
{
    const Contiguous *c = (const Contiguous *)base;
    size_t rows = 0;
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        rows += c->len[i];
    return rows * kv_row_pair_bytes(&base->geo, FMT_F32, FMT_F32);
}

static size_t contiguous_bytes_reserved(const KvCache *base)
{
    const Contiguous *c = (const Contiguous *)base;
    const KvGeometry *g = &base->geo;
    return g->n_layers * g->n_seqs * c->max * kv_row_pair_bytes(g, FMT_F32, FMT_F32);
}

static void contiguous_reset(KvCache *base)
{
    Contiguous *c = (Contiguous *)base;
    memset(c->len, 0, base->geo.n_layers * base->geo.n_seqs * sizeof *c->len);
}

static void contiguous_destroy(KvCache *base)
{
    Contiguous *c = (Contiguous *)base;
    free(c->k);
    free(c->v);
    free(c->len);
    free(c);
}

static const KvCacheOps contiguous_ops = {
    .name = "contiguous",
    .append = contiguous_append,
    .n_blocks = contiguous_n_blocks,
    .block = contiguous_block,
    .length = contiguous_length,
    .bytes_used = contiguous_bytes_used,
    .bytes_reserved = contiguous_bytes_reserved,
    .reset = contiguous_reset,
    .destroy = contiguous_destroy,
};

KvCache *contiguous_open(KvSpec *spec, const KvGeometry *geo, Err *e)
{
    size_t max = geo->max_seq_len;
    if (spec_take_size(spec, "max", &max, e) < 0 || spec_check_all_taken(spec, "max=ROWS", e) < 0)
        return NULL;
    if (max > geo->max_seq_len) {
        err_set(e, ERR_USAGE, "cache 'contiguous': max=%zu is beyond the model's max_seq_len %zu", max,
                geo->max_seq_len);
        return NULL;
    }
    Contiguous *c = calloc(1, sizeof *c);
    size_t floats = geo->n_layers * geo->n_seqs * geo->n_kv_heads * max * geo->head_dim;
    if (c) {
        c->k = calloc(floats, sizeof(float));
        c->v = calloc(floats, sizeof(float));
        c->len = calloc(geo->n_layers * geo->n_seqs, sizeof *c->len);
    }
    if (!c || !c->k || !c->v || !c->len) {
        if (c)
            contiguous_destroy(&c->base);
        err_set(e, ERR_RUNTIME, "contiguous cache: out of memory reserving %zu bytes",
                2 * floats * sizeof(float));
        return NULL;
    }
    c->base.ops = &contiguous_ops;
    c->base.geo = *geo;
    c->max = max;
    return &c->base;
}
