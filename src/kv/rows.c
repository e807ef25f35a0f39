/* rows.c: rows kept in position order, in runs (layouts.h, RowRuns): the
 * store h2o and snapkv share; each decides which rows go. */
#include "kv/layouts.h"

#include <stdlib.h>
#include <string.h>

int rows_init(RowRuns *r, const KvGeometry *g, const KvStorage *st, size_t cap)
{
    memset(r, 0, sizeof *r);
    r->st = *st;
    r->cap = cap;
    r->k_row = kv_k_row_bytes(g, st), r->v_row = kv_v_row_stored(g, st);
    r->n_slots = g->n_layers * g->n_seqs, r->n_kv_heads = g->n_kv_heads;
    r->k = calloc(r->n_slots * g->n_kv_heads * cap, r->k_row);
    r->v = kv_calloc(r->n_slots * g->n_kv_heads * cap, r->v_row);
    r->pos = calloc(r->n_slots * cap, sizeof *r->pos);
    r->count = calloc(r->n_slots, sizeof *r->count);
    r->len = calloc(r->n_slots, sizeof *r->len);
    r->n_runs = calloc(r->n_slots, sizeof *r->n_runs);
    r->run_start = calloc(r->n_slots * cap, sizeof *r->run_start);
    return r->k && r->v && r->pos && r->count && r->len && r->n_runs && r->run_start ? 0 : -1;
}

void rows_free(RowRuns *r)
{
    free(r->k), free(r->v), free(r->pos), free(r->count), free(r->len), free(r->n_runs), free(r->run_start);
    memset(r, 0, sizeof *r);
}

void rows_index(RowRuns *r, size_t slot)
{
    const size_t *pos = r->pos + slot * r->cap;
    size_t *start = r->run_start + slot * r->cap, n = 0;
    for (size_t i = 0; i < r->count[slot]; i++)
        if (i == 0 || pos[i] != pos[i - 1] + 1)
            start[n++] = i;
    r->n_runs[slot] = n;
}

/* Head h_src of n tokens into the slot's head h_dst, after its held rows. */
static void encode_head(RowRuns *r, const KvGeometry *g, size_t slot, size_t h_dst, size_t h_src, size_t n,
                        const float *k, const float *v)
{
    const size_t at = r->count[slot];
    kv_encode_rows(rows_k(r, slot, h_dst, at), r->k_row, k, n, h_src, g, &r->st.codec[r->st.k_fmt]);
    if (kv_stores_v(g)) /* an MLA latent cache keeps K rows only */
        kv_encode_rows(rows_v(r, slot, h_dst, at), r->v_row, v, n, h_src, g, &r->st.codec[r->st.v_fmt]);
}

/* The slot holds n more rows, of positions p0 .. p0 + n - 1. */
static void held_more(RowRuns *r, size_t slot, size_t p0, size_t n)
{
    for (size_t t = 0; t < n; t++)
        r->pos[slot * r->cap + r->count[slot] + t] = p0 + t;
    r->count[slot] += n;
    r->len[slot] += n;
    rows_index(r, slot);
}

void rows_append(RowRuns *r, const KvGeometry *g, size_t slot, size_t p0, size_t n, const float *k, const float *v,
                 Counters *ctr)
{
    for (size_t h = 0; h < g->n_kv_heads; h++)
        encode_head(r, g, slot, h, h, n, k, v);
    held_more(r, slot, p0, n);
    if (ctr)
        ctr->kv_bytes_written += n * g->n_kv_heads * (r->k_row + r->v_row);
}

void rows_append_head(RowRuns *r, const KvGeometry *g, size_t slot, size_t h, size_t p0, size_t n, const float *k,
                      const float *v, Counters *ctr)
{
    encode_head(r, g, slot, 0, h, n, k, v);
    held_more(r, slot, p0, n);
    if (ctr)
        ctr->kv_bytes_written += n * (r->k_row + r->v_row);
}

size_t rows_compact(RowRuns *r, size_t slot, const unsigned char *keep)
{
    const size_t held = r->count[slot];
    size_t to = 0;
    for (size_t i = 0; i < held; i++) {
        if (!keep[i])
            continue;
        if (to != i) {
            for (size_t h = 0; h < r->n_kv_heads; h++) {
                memcpy(rows_k(r, slot, h, to), rows_k(r, slot, h, i), r->k_row);
                memcpy(rows_v(r, slot, h, to), rows_v(r, slot, h, i), r->v_row);
            }
            r->pos[slot * r->cap + to] = r->pos[slot * r->cap + i];
        }
        to++;
    }
    r->count[slot] = to;
    rows_index(r, slot);
    return held - to;
}

void rows_block(const RowRuns *r, size_t slot, size_t h, size_t i, KvBlock *out)
{
    const size_t first = r->run_start[slot * r->cap + i];
    const size_t end = i + 1 < r->n_runs[slot] ? r->run_start[slot * r->cap + i + 1] : r->count[slot];
    *out = (KvBlock){
        .pos = r->pos[slot * r->cap + first], .n = end - first,
        .k = rows_k(r, slot, h, first), .v = rows_v(r, slot, h, first),
        .k_stride = r->k_row, .v_stride = r->v_row,
        .k_fmt = r->st.k_fmt, .v_fmt = r->st.v_fmt,
    };
}

size_t rows_bytes_used(const RowRuns *r)
{
    size_t rows = 0;
    for (size_t s = 0; s < r->n_slots; s++)
        rows += r->count[s];
    return rows * r->n_kv_heads * (r->k_row + r->v_row);
}

size_t rows_bytes_reserved(const RowRuns *r)
{
    return r->n_slots * r->n_kv_heads * r->cap * (r->k_row + r->v_row);
}

void rows_cells(const KvCache *base, const RowRuns *r, size_t slot, KvCell *out, size_t n)
{
    const size_t len = r->len[slot];
    kv_cells_prefix(base, len, out, n);
    for (size_t i = 0; i < len && i < n; i++)
        out[i].state = CELL_EVICTED;
    rows_mark_held(r, slot, out, n);
}

void rows_mark_held(const RowRuns *r, size_t slot, KvCell *out, size_t n)
{
    const int lossy = r->st.k_fmt != FMT_F32 || r->st.v_fmt != FMT_F32;
    for (size_t i = 0; i < r->count[slot]; i++) {
        const size_t p = r->pos[slot * r->cap + i];
        if (p < n)
            out[p].state = (unsigned char)(lossy ? CELL_LOSSY : CELL_EXACT);
    }
}

void rows_copy(RowRuns *r, size_t a, size_t b, Counters *ctr)
{
    for (size_t h = 0; h < r->n_kv_heads; h++) {
        memcpy(rows_k(r, b, h, 0), rows_k(r, a, h, 0), r->count[a] * r->k_row);
        memcpy(rows_v(r, b, h, 0), rows_v(r, a, h, 0), r->count[a] * r->v_row);
    }
    memcpy(&r->pos[b * r->cap], &r->pos[a * r->cap], r->count[a] * sizeof *r->pos);
    r->count[b] = r->count[a], r->len[b] = r->len[a];
    rows_index(r, b);
    if (ctr)
        ctr->bytes_copied += r->count[a] * r->n_kv_heads * (r->k_row + r->v_row);
}
