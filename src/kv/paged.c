/* paged.c: a page pool shared by all sequences (vLLM's PagedAttention
 * layout; the MLA notes' pool with a free list).
 *
 * The pool is reserved once: max_pages pages of `page` positions, each
 * holding those positions' K and V rows for every layer and KV head:
 *     page = [layer][kv_head][page rows of K] then [layer][kv_head][page rows of V]
 * Each sequence maps logical page i (positions i*page ..) to a physical page
 * through its block table. Pages are taken on demand from an O(1) free
 * stack and carry a reference count.
 *
 * Prefix sharing: a full page is named by a hash of (the previous page's
 * hash, the page's token ids). When a sequence is about to fill a page whose
 * hash the pool already knows, the page is mapped (refcount + 1) instead of
 * written: sequences with a common prefix share its full pages. A shorter
 * common prefix shares nothing. Pages given back with a hash stay reusable
 * ("cached") until a new page is needed, least recently used first.
 *
 * Copy on write: fork maps the parent's pages into the child; the first
 * append into a shared page copies it first.
 *
 * Block-sparse (+sparse:threshold=T,keep=R, the MLA notes): once a sequence holds
 * more than T positions, only the most recent ceil(R * pages) of its logical
 * pages stay; the older ones are given back and attention no longer sees
 * them. The check runs before each pass, so a pass always sees its own rows. */
#include "kv/paged_pool.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --- pool bookkeeping --------------------------------------------------- */

static unsigned char *page_k(const Paged *p, size_t page, size_t layer, size_t h)
{
    return p->pool + page * p->page_bytes + (layer * p->base.geo.n_kv_heads + h) * p->page * p->k_row;
}

static unsigned char *page_v(const Paged *p, size_t page, size_t layer, size_t h)
{
    const KvGeometry *g = &p->base.geo;
    return p->pool + page * p->page_bytes + g->n_layers * g->n_kv_heads * p->page * p->k_row +
           (layer * g->n_kv_heads + h) * p->page * p->v_row;
}

void paged_lru_unlink(Paged *p, size_t pg)
{
    size_t a = p->lru_prev[pg], b = p->lru_next[pg];
    if (a != NONE)
        p->lru_next[a] = b;
    else
        p->lru_head = b;
    if (b != NONE)
        p->lru_prev[b] = a;
    else
        p->lru_tail = a;
    p->n_cached--;
}

static void lru_push(Paged *p, size_t pg)
{
    p->lru_prev[pg] = p->lru_tail, p->lru_next[pg] = NONE;
    if (p->lru_tail != NONE)
        p->lru_next[p->lru_tail] = pg;
    else
        p->lru_head = pg;
    p->lru_tail = pg;
    p->n_cached++;
}

static void hash_remove(Paged *p, size_t pg)
{
    size_t *link = &p->buckets[p->hash[pg] & (p->n_buckets - 1)];
    while (*link != NONE && *link != pg)
        link = &p->bucket_next[*link];
    if (*link == pg)
        *link = p->bucket_next[pg];
    p->hash[pg] = 0;
}

static void hash_insert(Paged *p, size_t pg, uint64_t h)
{
    size_t b = h & (p->n_buckets - 1);
    p->hash[pg] = h;
    p->bucket_next[pg] = p->buckets[b];
    p->buckets[b] = pg;
}

void paged_map_hit(Paged *p, size_t seq, size_t lp, size_t hit)
{
    if (p->ref[hit] == 0)
        paged_lru_unlink(p, hit);
    p->ref[hit]++;
    paged_table_of(p, seq)[lp] = hit;
    p->prefilled[seq * p->max_logical + lp] = 1;
    p->st_counts.prefix_hits++;
}

size_t paged_hash_find(const Paged *p, uint64_t h, const int *tokens)
{
    for (size_t pg = p->buckets[h & (p->n_buckets - 1)]; pg != NONE; pg = p->bucket_next[pg])
        if (p->hash[pg] == h && memcmp(p->page_tokens + pg * p->page, tokens, p->page * sizeof(int)) == 0)
            return pg;
    return NONE;
}

/* FNV-1a over the previous page's hash and this page's token ids. */
uint64_t paged_page_hash(uint64_t prev, const int *tokens, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ prev;
    for (size_t i = 0; i < n; i++) {
        uint32_t t = (uint32_t)tokens[i];
        for (int byte = 0; byte < 4; byte++) {
            h ^= (t >> (8 * byte)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return h ? h : 1; /* 0 means "no hash" */
}

/* A page to write into: a clean one, else the least recently used cached
 * page (its hash forgotten). NONE when every page is in use. */
static size_t take_page(Paged *p)
{
    size_t pg;
    if (p->n_free) {
        pg = p->free_stack[--p->n_free];
    } else if (p->lru_head != NONE) {
        pg = p->lru_head;
        paged_lru_unlink(p, pg);
        hash_remove(p, pg);
        p->st_counts.evictions++;
    } else {
        return NONE;
    }
    p->ref[pg] = 1;
    return pg;
}

void paged_give_back(Paged *p, size_t pg)
{
    if (--p->ref[pg] > 0)
        return;
    if (p->hash[pg])
        lru_push(p, pg); /* keep its contents for a later prefix hit */
    else
        p->free_stack[p->n_free++] = pg;
}

/* --- the cache interface ------------------------------------------------ */

size_t *paged_table_of(const Paged *p, size_t seq)
{
    return p->table + seq * p->max_logical;
}

/* Copy the first `rows` rows of every layer and head of page `from` into
 * `to`: only what the page holds, not its empty tail. */
static void copy_page(Paged *p, size_t from, size_t to, size_t rows, Counters *ctr)
{
    const KvGeometry *g = &p->base.geo;
    for (size_t l = 0; l < g->n_layers; l++)
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            memcpy(page_k(p, to, l, h), page_k(p, from, l, h), rows * p->k_row);
            memcpy(page_v(p, to, l, h), page_v(p, from, l, h), rows * p->v_row);
        }
    if (ctr)
        ctr->bytes_copied += g->n_layers * g->n_kv_heads * rows * (p->k_row + p->v_row);
}

/* Map the page holding position pos of seq, for tokens[..] about to fill
 * positions pos .. end-1. */
static int map_page(Paged *p, size_t seq, size_t pos, size_t end, Counters *ctr, Err *e)
{
    size_t lp = pos / p->page, first = lp * p->page;
    size_t *table = paged_table_of(p, seq);
    const int *toks = p->tokens + seq * p->base.geo.max_seq_len;
    if (table[lp] == NONE) {
        /* a page this pass fills from its start: maybe the pool has it already */
        if (p->hash_on && pos == first && end >= first + p->page) {
            uint64_t prev = lp ? p->hash[table[lp - 1]] : 0;
            uint64_t h = paged_page_hash(prev, toks + first, p->page);
            size_t hit = (lp == 0 || prev) ? paged_hash_find(p, h, toks + first) : NONE;
            if (hit != NONE) {
                paged_map_hit(p, seq, lp, hit);
                return 0;
            }
            size_t pg = take_page(p);
            if (pg == NONE)
                goto exhausted;
            table[lp] = pg;
            if (lp == 0 || prev) { /* name it only when its whole prefix is named too */
                memcpy(p->page_tokens + pg * p->page, toks + first, p->page * sizeof(int));
                hash_insert(p, pg, h); /* written by this pass, layer by layer */
            }
            return 0;
        }
        size_t pg = take_page(p);
        if (pg == NONE)
            goto exhausted;
        table[lp] = pg;
        return 0;
    }
    if (p->ref[table[lp]] > 1) { /* shared and about to be written: copy first */
        size_t pg = take_page(p);
        if (pg == NONE)
            goto exhausted;
        copy_page(p, table[lp], pg, p->reserved[seq] - first, ctr);
        p->ref[table[lp]]--;
        table[lp] = pg;
        p->st_counts.cow_copies++;
    }
    return 0;
exhausted:
    return err_set(e, ERR_RUNTIME, "page pool exhausted: all %zu pages of %zu rows are in use (raise pages=)",
                   p->max_pages, p->page);
}

/* Keep the most recent ceil(keep * pages) logical pages of seq. */
static void drop_old_pages(Paged *p, size_t seq)
{
    size_t *table = paged_table_of(p, seq);
    size_t pages = (p->reserved[seq] + p->page - 1) / p->page;
    size_t kept = (size_t)((double)pages * p->keep + 0.999999);
    if (kept == 0)
        kept = 1;
    for (size_t lp = p->first_active[seq]; lp + kept < pages; lp++) {
        paged_give_back(p, table[lp]);
        table[lp] = DROPPED;
        p->st_counts.pages_dropped++;
        p->first_active[seq] = lp + 1;
    }
}

static int paged_reserve(KvCache *base, size_t seq, size_t pos, const int *tokens, size_t n, Counters *ctr, Err *e)
{
    Paged *p = (Paged *)base;
    if (pos != p->reserved[seq])
        return err_set(e, ERR_RUNTIME, "paged cache: reserve at position %zu, expected %zu", pos, p->reserved[seq]);
    if (n > base->geo.max_seq_len - pos)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > max_seq_len %zu", pos, n,
                       base->geo.max_seq_len);
    if (p->sparse && pos > p->threshold)
        drop_old_pages(p, seq);
    memcpy(p->tokens + seq * base->geo.max_seq_len + pos, tokens, n * sizeof(int));
    for (size_t q = pos; q < pos + n; q = (q / p->page + 1) * p->page)
        if (map_page(p, seq, q, pos + n, ctr, e) < 0)
            return -1;
    p->reserved[seq] = pos + n;
    return 0;
}

static int paged_append(KvCache *base, size_t layer, size_t seq, size_t pos, size_t n, const float *k,
                        const float *v, Counters *ctr, Err *e)
{
    Paged *p = (Paged *)base;
    const KvGeometry *g = &base->geo;
    size_t *len = &p->layer_len[layer * g->n_seqs + seq];
    if (pos != *len || pos + n > p->reserved[seq])
        return err_set(e, ERR_RUNTIME, "paged cache: append of %zu rows at %zu, held %zu, reserved %zu", n, pos,
                       *len, p->reserved[seq]);
    const size_t *table = paged_table_of(p, seq);
    size_t written = 0;
    for (size_t t = 0; t < n;) {
        size_t q = pos + t, lp = q / p->page, r = q % p->page;
        size_t run = p->page - r < n - t ? p->page - r : n - t; /* rows into this page */
        if (!p->prefilled[seq * p->max_logical + lp]) {
            for (size_t h = 0; h < g->n_kv_heads; h++) {
                const float *kt = k + t * g->n_kv_heads * g->head_dim, *vt = v + t * g->n_kv_heads * g->head_dim;
                kv_encode_rows(page_k(p, table[lp], layer, h) + r * p->k_row, p->k_row, kt, run, h, g,
                               &p->st.codec[p->st.k_fmt]);
                if (kv_stores_v(g))
                    kv_encode_rows(page_v(p, table[lp], layer, h) + r * p->v_row, p->v_row, vt, run, h, g,
                                   &p->st.codec[p->st.v_fmt]);
            }
            written += run;
        }
        t += run;
    }
    *len += n;
    if (ctr)
        ctr->kv_bytes_written += written * g->n_kv_heads * (p->k_row + p->v_row);
    return 0;
}

static size_t paged_length(const KvCache *base, size_t layer, size_t seq)
{
    const Paged *p = (const Paged *)base;
    return p->layer_len[layer * base->geo.n_seqs + seq];
}

static size_t paged_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    const Paged *p = (const Paged *)base;
    size_t pages = (paged_length(base, layer, seq) + p->page - 1) / p->page;
    return pages > p->first_active[seq] ? pages - p->first_active[seq] : 0;
}

static void paged_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const Paged *p = (const Paged *)base;
    i += p->first_active[seq]; /* the i-th page still attended */
    size_t len = paged_length(base, layer, seq), pg = paged_table_of(p, seq)[i];
    size_t n = len - i * p->page < p->page ? len - i * p->page : p->page;
    *out = (KvBlock){
        .pos = i * p->page, .n = n,
        .k = page_k(p, pg, layer, h), .v = page_v(p, pg, layer, h),
        .k_stride = p->k_row, .v_stride = p->v_row,
        .k_fmt = p->st.k_fmt, .v_fmt = p->st.v_fmt,
    };
}

static void paged_stats(const KvCache *base, KvStats *out)
{
    const Paged *p = (const Paged *)base;
    *out = p->st_counts;
    out->page_rows = p->page;
    out->pages_total = p->max_pages;
    out->pages_free = p->n_free;
    out->pages_cached = p->n_cached;
    for (size_t pg = 0; pg < p->max_pages; pg++) {
        out->pages_used += p->ref[pg] > 0;
        out->pages_shared += p->ref[pg] > 1;
        out->pages_hashed += p->hash[pg] != 0;
    }
    for (size_t s = 0; s < base->geo.n_seqs; s++) {
        if (p->reserved[s] % p->page)
            out->waste_rows += p->page - p->reserved[s] % p->page;
        size_t pages = (p->reserved[s] + p->page - 1) / p->page;
        out->pages_active += pages - p->first_active[s];
        out->sparse_on |= p->first_active[s] > 0;
    }
    out->bytes_saved = out->pages_dropped * p->page_bytes;
}

static size_t paged_bytes_used(const KvCache *base)
{
    /* rows held in the pages in use; a shared page counts once */
    const Paged *p = (const Paged *)base;
    KvStats st;
    paged_stats(base, &st);
    size_t row_pair = base->geo.n_layers * base->geo.n_kv_heads * (p->k_row + p->v_row);
    size_t rows = st.pages_used * p->page;
    for (size_t s = 0; s < base->geo.n_seqs; s++) /* the tails of unshared last pages hold nothing */
        if (p->reserved[s] % p->page && p->ref[paged_table_of(p, s)[p->reserved[s] / p->page]] == 1)
            rows -= p->page - p->reserved[s] % p->page;
    return rows * row_pair;
}

static size_t paged_bytes_reserved(const KvCache *base)
{
    const Paged *p = (const Paged *)base;
    KvStats st;
    paged_stats(base, &st);
    return st.pages_used * p->page_bytes;
}

static size_t paged_page_table(const KvCache *base, size_t seq, size_t *phys, size_t cap)
{
    const Paged *p = (const Paged *)base;
    size_t n = (p->reserved[seq] + p->page - 1) / p->page;
    for (size_t i = 0; i < n && i < cap; i++)
        phys[i] = paged_table_of(p, seq)[i];
    return n;
}

static void paged_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    const Paged *p = (const Paged *)base;
    kv_cells_prefix(base, paged_length(base, layer, seq), out, n);
    for (size_t i = 0; i < n; i++) {
        out[i].page_start = i % p->page == 0;
        if (out[i].state == CELL_EMPTY)
            continue;
        size_t pg = paged_table_of(p, seq)[i / p->page];
        if (pg == DROPPED)
            out[i].state = CELL_EVICTED;
        else if (p->ref[pg] > 1)
            out[i].state = CELL_SHARED;
    }
}

/* Forget positions len .. of seq: whole pages past len go back to the pool
 * (a page another sequence maps stays, one reference fewer); the page len
 * falls in stays mapped. That page will be written again: its hash no
 * longer names what it will hold, so it is forgotten (the page alone) or,
 * shared, left to the other sequences, and the next write copies it first
 * (copy on write, as after a fork). With +sparse, pages a rejected row's
 * pass dropped are gone: refused. */
static int paged_truncate(KvCache *base, size_t seq, size_t len, Counters *ctr, Err *e)
{
    Paged *p = (Paged *)base;
    (void)ctr;
    if (p->sparse)
        return err_set(e, ERR_USAGE, "cache '%s' cannot roll back rows: +sparse gives old pages back as the "
                       "sequence grows, and a page given back for a rejected row is gone", base->spec);
    size_t *table = paged_table_of(p, seq);
    const size_t keep_pages = (len + p->page - 1) / p->page;
    for (size_t lp = keep_pages; lp < p->max_logical && table[lp] != NONE; lp++) {
        if (table[lp] != DROPPED)
            paged_give_back(p, table[lp]);
        table[lp] = NONE;
        p->prefilled[seq * p->max_logical + lp] = 0;
    }
    if (len % p->page) { /* the partly kept page */
        const size_t lp = len / p->page, pg = table[lp];
        if (p->ref[pg] == 1 && p->hash[pg])
            hash_remove(p, pg);
        p->prefilled[seq * p->max_logical + lp] = 0; /* its next rows are this sequence's to write */
    }
    if (p->reserved[seq] > len)
        p->reserved[seq] = len;
    for (size_t l = 0; l < base->geo.n_layers; l++) {
        size_t *n = &p->layer_len[l * base->geo.n_seqs + seq];
        *n = *n > len ? len : *n;
    }
    return 0;
}

static void paged_drop(KvCache *base, size_t seq)
{
    Paged *p = (Paged *)base;
    size_t *table = paged_table_of(p, seq);
    for (size_t i = 0; i < p->max_logical; i++) {
        if (table[i] != NONE && table[i] != DROPPED)
            paged_give_back(p, table[i]);
        table[i] = NONE;
        p->prefilled[seq * p->max_logical + i] = 0;
    }
    p->reserved[seq] = 0;
    p->first_active[seq] = 0;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        p->layer_len[l * base->geo.n_seqs + seq] = 0;
}

static int paged_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    Paged *p = (Paged *)base;
    const KvGeometry *g = &base->geo;
    (void)ctr; /* sharing copies nothing */
    if (p->reserved[dst] != 0)
        return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    memcpy(paged_table_of(p, dst), paged_table_of(p, src), p->max_logical * sizeof(size_t));
    memcpy(p->prefilled + dst * p->max_logical, p->prefilled + src * p->max_logical, p->max_logical);
    memcpy(p->tokens + dst * g->max_seq_len, p->tokens + src * g->max_seq_len, p->reserved[src] * sizeof(int));
    for (size_t i = 0; i < p->max_logical && paged_table_of(p, src)[i] != NONE; i++)
        if (paged_table_of(p, src)[i] != DROPPED)
            p->ref[paged_table_of(p, src)[i]]++;
    p->reserved[dst] = p->reserved[src];
    p->first_active[dst] = p->first_active[src];
    for (size_t l = 0; l < g->n_layers; l++)
        p->layer_len[l * g->n_seqs + dst] = p->layer_len[l * g->n_seqs + src];
    return 0;
}

static void paged_reset(KvCache *base)
{
    Paged *p = (Paged *)base;
    for (size_t s = 0; s < base->geo.n_seqs; s++)
        paged_drop(base, s);
    /* every page back to the clean stack: reset forgets the prefix hashes too */
    p->n_free = 0;
    for (size_t pg = p->max_pages; pg-- > 0;) {
        p->ref[pg] = 0, p->hash[pg] = 0, p->held[pg] = 0;
        p->free_stack[p->n_free++] = pg;
    }
    for (size_t b = 0; b < p->n_buckets; b++)
        p->buckets[b] = NONE;
    p->lru_head = p->lru_tail = NONE;
    p->n_cached = 0;
    memset(&p->st_counts, 0, sizeof p->st_counts);
}

static void paged_destroy(KvCache *base)
{
    Paged *p = (Paged *)base;
    free(p->pool), free(p->ref), free(p->hash), free(p->page_tokens), free(p->bucket_next);
    free(p->lru_prev), free(p->lru_next), free(p->free_stack), free(p->buckets);
    free(p->table), free(p->reserved), free(p->layer_len), free(p->tokens), free(p->prefilled);
    free(p->first_active), free(p->held);
    free(p);
}

static const KvCacheOps paged_ops = {
    .name = "paged",
    .share = &paged_share_ops,
    .truncate = paged_truncate,
    .rollback = "whole pages past the kept length go back to the pool (a shared page stays shared, one "
                "reference fewer); the page the length falls in is kept, and copied before its next write "
                "when another sequence maps it; not with +sparse",
    .reserve = paged_reserve,
    .append = paged_append,
    .n_blocks = paged_n_blocks,
    .block = paged_block,
    .length = paged_length,
    .bytes_used = paged_bytes_used,
    .bytes_reserved = paged_bytes_reserved,
    .reset = paged_reset,
    .cells = paged_cells,
    .fork = paged_fork,
    .drop = paged_drop,
    .stats = paged_stats,
    .page_table = paged_page_table,
    .destroy = paged_destroy,
};

KvCache *paged_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    size_t page = 16, pages = 0;
    if (spec_take_size(opts, "page", &page, e) < 0 || spec_take_size(opts, "pages", &pages, e) < 0 ||
        spec_check_all_taken(opts, "page=ROWS, pages=N", e) < 0)
        return NULL;
    size_t threshold = 8192;
    double keep = 0.5;
    KvSpecPart *sparse = spec_modifier(st->spec, "sparse");
    if (sparse && (spec_take_size(sparse, "threshold", &threshold, e) < 0 ||
                   spec_take_double(sparse, "keep", 0.0, 1.0, &keep, e) < 0 ||
                   spec_check_all_taken(sparse, "threshold=T, keep=R", e) < 0))
        return NULL;
    if (sparse && keep == 0.0) {
        err_set(e, ERR_USAGE, "cache 'sparse': keep must be above 0");
        return NULL;
    }
    size_t max_logical = (geo->max_seq_len + page - 1) / page;
    /* each sequence's block table, token ids and lengths, beside the pool */
    const size_t seq_bytes = max_logical * (sizeof(size_t) + 1) + geo->max_seq_len * sizeof(int) +
                             (geo->n_layers + 2) * sizeof(size_t);
    if (kv_check_fit(geo, "paged", geo->n_seqs, "sequences' block tables and tokens", seq_bytes, e) < 0)
        return NULL;
    if (pages == 0) /* enough for every sequence to reach max_seq_len */
        pages = geo->n_seqs * max_logical;
    /* a page holds its rows for every layer and KV head (one sequence's) */
    KvGeometry one = *geo;
    one.n_seqs = 1;
    const size_t row_bytes = kv_head_row_bytes(&one, kv_k_row_bytes(geo, st), kv_v_row_stored(geo, st));
    char unit[64];
    snprintf(unit, sizeof unit, "pages of %zu rows", page);
    if (kv_check_fit(geo, "paged", page, "rows in a page", row_bytes, e) < 0 ||
        kv_check_fit(geo, "paged", pages, unit, page * row_bytes, e) < 0)
        return NULL;
    Paged *p = calloc(1, sizeof *p);
    if (!p) {
        err_set(e, ERR_RUNTIME, "paged cache: out of memory");
        return NULL;
    }
    p->base.ops = &paged_ops;
    p->base.geo = *geo;
    p->st = *st;
    p->page = page, p->max_pages = pages, p->max_logical = max_logical;
    p->sparse = sparse != NULL, p->threshold = threshold, p->keep = keep;
    p->base.lossy = p->sparse;
    p->k_row = kv_k_row_bytes(geo, st), p->v_row = kv_v_row_stored(geo, st);
    p->page_bytes = geo->n_layers * geo->n_kv_heads * page * (p->k_row + p->v_row);
    p->n_buckets = 1;
    while (p->n_buckets < 2 * pages)
        p->n_buckets <<= 1;
    size_t seqs = geo->n_seqs;
    p->pool = malloc(pages * p->page_bytes);
    p->ref = calloc(pages, sizeof *p->ref);
    p->hash = calloc(pages, sizeof *p->hash);
    p->page_tokens = calloc(pages * page, sizeof *p->page_tokens);
    p->bucket_next = calloc(pages, sizeof *p->bucket_next);
    p->lru_prev = calloc(pages, sizeof *p->lru_prev);
    p->lru_next = calloc(pages, sizeof *p->lru_next);
    p->free_stack = calloc(pages, sizeof *p->free_stack);
    p->buckets = calloc(p->n_buckets, sizeof *p->buckets);
    p->table = calloc(seqs * max_logical, sizeof *p->table);
    p->reserved = calloc(seqs, sizeof *p->reserved);
    p->layer_len = calloc(geo->n_layers * seqs, sizeof *p->layer_len);
    p->tokens = calloc(seqs * geo->max_seq_len, sizeof *p->tokens);
    p->prefilled = calloc(seqs * max_logical, 1);
    p->first_active = calloc(seqs, sizeof *p->first_active);
    p->held = calloc(pages, sizeof *p->held);
    p->hash_on = 1;
    if (!p->held || !p->pool || !p->ref || !p->hash || !p->page_tokens || !p->bucket_next || !p->lru_prev || !p->lru_next ||
        !p->free_stack || !p->buckets || !p->table || !p->reserved || !p->layer_len || !p->tokens || !p->prefilled ||
        !p->first_active) {
        paged_destroy(&p->base);
        err_set(e, ERR_RUNTIME, "paged cache: out of memory for a pool of %zu pages of %zu bytes", pages,
                p->page_bytes);
        return NULL;
    }
    for (size_t i = 0; i < seqs * max_logical; i++)
        p->table[i] = NONE;
    paged_reset(&p->base);
    return &p->base;
}
