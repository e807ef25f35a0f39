/* dynamic.c: the cache that grows by concatenation (the teaching notes' dynamic mode).
 *
 * Every append allocates new K and V buffers one append larger, copies the
 * old rows across and frees the old ones, as np.concatenate does. It never
 * reserves more than it holds, but copying all rows at every step costs
 * O(n^2) bytes over a run: the counters show it. */
#include "kv/layouts.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned char *k, *v; /* [n_kv_heads][len] rows */
    size_t len;
} Slot;

typedef struct {
    KvCache base;
    KvStorage st;
    size_t k_row, v_row; /* bytes of one row */
    Slot *slots;         /* [n_layers][n_seqs] */
} Dynamic;

static Slot *slot_of(const Dynamic *d, size_t layer, size_t seq)
{
    return &d->slots[layer * d->base.geo.n_seqs + seq];
}

/* A new [n_kv][old_len + n] tensor of row_bytes rows: the old rows, then
 * the new ones encoded from the token-major src. NULL when memory runs out. */
static unsigned char *concat_rows(const unsigned char *old, size_t old_len, const float *src, size_t n,
                                  size_t row_bytes, const FormatOps *ops, const KvGeometry *g, Counters *ctr)
{
    size_t len = old_len + n;
    unsigned char *out = kv_calloc(g->n_kv_heads * len, row_bytes);
    if (!out)
        return NULL;
    if (row_bytes == 0) /* the V of a k_only cache: nothing to store */
        return out;
    for (size_t h = 0; h < g->n_kv_heads; h++) {
        if (old_len)
            memcpy(out + h * len * row_bytes, old + h * old_len * row_bytes, old_len * row_bytes);
        kv_encode_rows(out + (h * len + old_len) * row_bytes, row_bytes, src, n, h, g, ops);
    }
    if (ctr) {
        ctr->allocations += 1;
        ctr->bytes_copied += g->n_kv_heads * old_len * row_bytes;
    }
    return out;
}

static int dynamic_append(KvCache *base, size_t layer, size_t seq, size_t pos, size_t n, const float *k,
                          const float *v, Counters *ctr, Err *e)
{
    Dynamic *d = (Dynamic *)base;
    const KvGeometry *g = &base->geo;
    Slot *s = slot_of(d, layer, seq);
    if (pos != s->len)
        return err_set(e, ERR_RUNTIME, "dynamic cache: append at position %zu, expected %zu", pos, s->len);
    if (n > g->max_seq_len - s->len)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > max_seq_len %zu", s->len, n,
                       g->max_seq_len);
    unsigned char *nk = concat_rows(s->k, s->len, k, n, d->k_row, &d->st.codec[d->st.k_fmt], g, ctr);
    unsigned char *nv = nk ? concat_rows(s->v, s->len, v, n, d->v_row, &d->st.codec[d->st.v_fmt], g, ctr) : NULL;
    if (!nv) {
        free(nk);
        return err_set(e, ERR_RUNTIME, "dynamic cache: out of memory growing to %zu rows", s->len + n);
    }
    free(s->k);
    free(s->v);
    s->k = nk;
    s->v = nv;
    s->len += n;
    if (ctr)
        ctr->kv_bytes_written += n * g->n_kv_heads * (d->k_row + d->v_row);
    return 0;
}

static size_t dynamic_length(const KvCache *base, size_t layer, size_t seq)
{
    return slot_of((const Dynamic *)base, layer, seq)->len;
}

static size_t dynamic_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    return dynamic_length(base, layer, seq) > 0;
}

static void dynamic_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const Dynamic *d = (const Dynamic *)base;
    const Slot *s = slot_of(d, layer, seq);
    (void)i;
    *out = (KvBlock){
        .pos = 0, .n = s->len,
        .k = s->k + h * s->len * d->k_row, .v = s->v + h * s->len * d->v_row,
        .k_stride = d->k_row, .v_stride = d->v_row,
        .k_fmt = d->st.k_fmt, .v_fmt = d->st.v_fmt,
    };
}

static size_t dynamic_bytes_used(const KvCache *base)
{
    const Dynamic *d = (const Dynamic *)base;
    size_t rows = 0;
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        rows += d->slots[i].len;
    return rows * base->geo.n_kv_heads * (d->k_row + d->v_row);
}

static void slot_free(Slot *s)
{
    free(s->k);
    free(s->v);
    *s = (Slot){ 0 };
}

/* Copy every layer's rows of src into fresh buffers for the empty dst. */
static int dynamic_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    Dynamic *d = (Dynamic *)base;
    const KvGeometry *g = &base->geo;
    for (size_t l = 0; l < g->n_layers; l++)
        if (slot_of(d, l, dst)->len != 0)
            return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < g->n_layers; l++) {
        const Slot *from = slot_of(d, l, src);
        Slot *to = slot_of(d, l, dst);
        if (!from->len)
            continue;
        size_t kb = g->n_kv_heads * from->len * d->k_row, vb = g->n_kv_heads * from->len * d->v_row;
        to->k = kv_calloc(kb, 1);
        to->v = kv_calloc(vb, 1);
        if (!to->k || !to->v) {
            slot_free(to);
            return err_set(e, ERR_RUNTIME, "dynamic cache: out of memory forking a sequence");
        }
        memcpy(to->k, from->k, kb);
        memcpy(to->v, from->v, vb);
        to->len = from->len;
        if (ctr) {
            ctr->allocations += 2;
            ctr->bytes_copied += kb + vb;
        }
    }
    return 0;
}

/* Keep the first len rows of each head: the heads' runs move down over
 * the forgotten rows (head-major storage), and the buffers shrink to what
 * they hold, as the layout always does. The moves are counted as copies. */
static void shrink_rows(unsigned char **buf, size_t old_len, size_t len, size_t row, size_t n_heads, Counters *ctr)
{
    if (!*buf || row == 0)
        return;
    for (size_t h = 1; h < n_heads; h++)
        memmove(*buf + h * len * row, *buf + h * old_len * row, len * row);
    if (ctr)
        ctr->bytes_copied += (n_heads - 1) * len * row;
    const size_t bytes = n_heads * len * row;
    unsigned char *smaller = realloc(*buf, bytes > 0 ? bytes : 1);
    if (smaller) /* else the larger buffer serves as well */
        *buf = smaller;
}

static int dynamic_truncate(KvCache *base, size_t seq, size_t len, Counters *ctr, Err *e)
{
    Dynamic *d = (Dynamic *)base;
    (void)e;
    for (size_t l = 0; l < base->geo.n_layers; l++) {
        Slot *s = slot_of(d, l, seq);
        if (s->len <= len)
            continue;
        shrink_rows(&s->k, s->len, len, d->k_row, base->geo.n_kv_heads, ctr);
        shrink_rows(&s->v, s->len, len, d->v_row, base->geo.n_kv_heads, ctr);
        s->len = len;
    }
    return 0;
}

static void dynamic_drop(KvCache *base, size_t seq)
{
    Dynamic *d = (Dynamic *)base;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        slot_free(slot_of(d, l, seq));
}

static void dynamic_reset(KvCache *base)
{
    Dynamic *d = (Dynamic *)base;
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        slot_free(&d->slots[i]);
}

static void dynamic_destroy(KvCache *base)
{
    Dynamic *d = (Dynamic *)base;
    if (d->slots)
        dynamic_reset(base);
    free(d->slots);
    free(d);
}

static void dynamic_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    kv_cells_prefix(base, dynamic_length(base, layer, seq), out, n);
}

static const KvCacheOps dynamic_ops = {
    .name = "dynamic",
    .truncate = dynamic_truncate,
    .rollback = "each head's kept rows move down over the forgotten ones (counted as copies) and the buffers "
                "shrink to what they hold",
    .append = dynamic_append,
    .n_blocks = dynamic_n_blocks,
    .block = dynamic_block,
    .length = dynamic_length,
    .bytes_used = dynamic_bytes_used,
    .bytes_reserved = dynamic_bytes_used, /* it holds exactly what it uses */
    .reset = dynamic_reset,
    .cells = dynamic_cells,
    .fork = dynamic_fork,
    .drop = dynamic_drop,
    .destroy = dynamic_destroy,
};

KvCache *dynamic_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    if (spec_check_all_taken(opts, "none", e) < 0)
        return NULL;
    Dynamic *d = calloc(1, sizeof *d);
    if (d)
        d->slots = calloc(geo->n_layers * geo->n_seqs, sizeof *d->slots);
    if (!d || !d->slots) {
        free(d);
        err_set(e, ERR_RUNTIME, "dynamic cache: out of memory");
        return NULL;
    }
    d->base.ops = &dynamic_ops;
    d->base.geo = *geo;
    d->st = *st;
    d->k_row = kv_k_row_bytes(geo, st);
    d->v_row = kv_v_row_stored(geo, st);
    return &d->base;
}
