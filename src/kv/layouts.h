/* layouts.h: what a layout constructor gets, and the constructors kv_open
 * chooses between (private to kv/). */
#ifndef KVSCOPE_KV_LAYOUTS_H
#define KVSCOPE_KV_LAYOUTS_H

#include "kv/cache.h"
#include "kv/spec.h"

/* How rows are stored: the formats of K and V and the codecs that encode
 * them (from the spec's modifiers). */
typedef struct {
    Format k_fmt, v_fmt;
    const FormatOps *codec; /* [FMT_COUNT] */
    KvSpec *spec;           /* the whole spec: a layout takes the modifiers meant for it (spec_modifier) */
} KvStorage;

/* Bytes of one K row and one V row of one head. */
static inline size_t kv_k_row_bytes(const KvGeometry *g, const KvStorage *st)
{
    return format_row_bytes(st->k_fmt, g->head_dim);
}
static inline size_t kv_v_row_bytes(const KvGeometry *g, const KvStorage *st)
{
    return format_row_bytes(st->v_fmt, g->head_dim);
}

/* Bytes a layout stores per V row: 0 for a k_only geometry (an MLA latent
 * cache), which then never encodes V (guard with kv_stores_v). */
static inline int kv_stores_v(const KvGeometry *g)
{
    return !g->k_only;
}
static inline size_t kv_v_row_stored(const KvGeometry *g, const KvStorage *st)
{
    return kv_stores_v(g) ? kv_v_row_bytes(g, st) : 0;
}

/* calloc(n, size), but a valid one-byte buffer when n * size is 0 (a k_only
 * cache's V arrays hold nothing, yet stay pointers one may offset by 0). */
void *kv_calloc(size_t n, size_t size);

/* Refuse a cache whose spec asks for more than g->mem_limit (physical
 * memory when 0), before anything is allocated: `count` units (rows per
 * head, pages) of `unit_bytes` each. ERR_USAGE, naming the most units that
 * fit; `unit` says what one is ("rows per layer, sequence and KV head"). */
int kv_check_fit(const KvGeometry *g, const char *cache, size_t count, const char *unit, size_t unit_bytes, Err *e);

/* Bytes of one row per (layer, sequence, KV head) of a whole cache: K and V
 * rows of k_row and v_row bytes; SIZE_MAX when size_t cannot hold it. */
size_t kv_head_row_bytes(const KvGeometry *g, size_t k_row, size_t v_row);

/* Encode n token-major rows (src: [n][n_kv_heads][head_dim]) of head h into
 * dst rows of `row_bytes`, `dst_stride` bytes apart. */
void kv_encode_rows(void *dst, size_t dst_stride, const float *src, size_t n, size_t h, const KvGeometry *g,
                    const FormatOps *ops);

/* Rows kept in position order, in runs: the store of the caches that
 * evict single positions (h2o.c, snapkv.c). Per (layer, sequence) slot it
 * holds `cap` rows for every KV head, the position of each, and where the
 * runs of consecutive positions start, which are the blocks attention
 * reads. Every KV head of a slot keeps the same positions (a store of one
 * head a slot lets each head keep its own: snapkv's per_head). */
typedef struct {
    KvStorage st;
    size_t cap, k_row, v_row;
    size_t n_slots, n_kv_heads;
    unsigned char *k, *v; /* [slot][kv_head][cap] rows */
    size_t *pos;          /* [slot][cap] position of each held row */
    size_t *count;        /* [slot] rows held */
    size_t *len;          /* [slot] positions appended */
    size_t *n_runs;       /* [slot] blocks */
    size_t *run_start;    /* [slot][cap] first row index of each block */
} RowRuns;

/* Allocate for g's layers x sequences slots of cap rows; -1 when memory runs out. */
int rows_init(RowRuns *r, const KvGeometry *g, const KvStorage *st, size_t cap);
void rows_free(RowRuns *r);
static inline unsigned char *rows_k(const RowRuns *r, size_t slot, size_t h, size_t i)
{
    return r->k + ((slot * r->n_kv_heads + h) * r->cap + i) * r->k_row;
}
static inline unsigned char *rows_v(const RowRuns *r, size_t slot, size_t h, size_t i)
{
    return r->v + ((slot * r->n_kv_heads + h) * r->cap + i) * r->v_row;
}
/* Encode n rows of positions p0 .. after the slot's held ones (room checked
 * by the caller); counts the bytes written. */
void rows_append(RowRuns *r, const KvGeometry *g, size_t slot, size_t p0, size_t n, const float *k, const float *v,
                 Counters *ctr);
/* For a store of one head a slot (rows_init with n_kv_heads 1, a slot per
 * layer, sequence and head): head h of n tokens laid out as g says. */
void rows_append_head(RowRuns *r, const KvGeometry *g, size_t slot, size_t h, size_t p0, size_t n, const float *k,
                      const float *v, Counters *ctr);
/* Recompute where the runs start, after rows moved or went. */
void rows_index(RowRuns *r, size_t slot);
/* Keep only the rows whose keep[i] is set (i < count), in order; returns
 * how many went. */
size_t rows_compact(RowRuns *r, size_t slot, const unsigned char *keep);
void rows_block(const RowRuns *r, size_t slot, size_t h, size_t i, KvBlock *out);
size_t rows_bytes_used(const RowRuns *r);
size_t rows_bytes_reserved(const RowRuns *r);
/* Cells of a slot: appended positions evicted unless held. */
void rows_cells(const KvCache *base, const RowRuns *r, size_t slot, KvCell *out, size_t n);
/* Mark the positions the slot holds (exact, or lossy in a quantized store). */
void rows_mark_held(const RowRuns *r, size_t slot, KvCell *out, size_t n);
/* Copy slot a's rows into the empty slot b (counted in bytes_copied). */
void rows_copy(RowRuns *r, size_t a, size_t b, Counters *ctr);
static inline void rows_clear(RowRuns *r, size_t slot)
{
    r->count[slot] = r->len[slot] = r->n_runs[slot] = 0;
}

KvCache *contiguous_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
KvCache *dynamic_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
KvCache *ring_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
KvCache *shift_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
KvCache *mixed_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
KvCache *h2o_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
KvCache *snapkv_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
KvCache *paged_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
KvCache *kivi_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);

#endif
