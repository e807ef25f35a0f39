/* paged_share.c: the paged cache's page sharing for a serving loop's
 * prefix caches (cache.h, KvShareOps): the block hash switched off for a
 * radix tree, a prompt's hashed full pages mapped as held rows (the block
 * cache that skips them), and pages held or adopted beside the sequences
 * (the radix tree's). */
#include <string.h>

#include "kv/paged_pool.h"

static int paged_share_usable(const KvCache *base, Err *e)
{
    if (((const Paged *)base)->sparse)
        return err_set(e, ERR_USAGE, "cache '%s': a prefix cache keeps pages that +sparse would give back under it",
                       base->spec);
    return 0;
}

static void paged_share_hash(KvCache *base, int on)
{
    ((Paged *)base)->hash_on = on;
}

/* Make seq hold positions 0 .. rows-1 (already in its mapped pages) in
 * every layer, with their token ids. */
static void hold_rows(Paged *p, size_t seq, const int *tokens, size_t rows)
{
    const KvGeometry *g = &p->base.geo;
    memcpy(p->tokens + seq * g->max_seq_len, tokens, rows * sizeof(int));
    p->reserved[seq] = rows;
    for (size_t l = 0; l < g->n_layers; l++)
        p->layer_len[l * g->n_seqs + seq] = rows;
}

static size_t paged_share_map_hashed(KvCache *base, size_t seq, const int *tokens, size_t n)
{
    Paged *p = (Paged *)base;
    if (!p->hash_on || p->reserved[seq])
        return 0;
    size_t lp = 0;
    uint64_t prev = 0;
    for (; (lp + 1) * p->page <= n; lp++) { /* the chain map_page names: each page's hash covers its prefix */
        const int *toks = tokens + lp * p->page;
        const uint64_t h = paged_page_hash(prev, toks, p->page);
        const size_t hit = paged_hash_find(p, h, toks);
        if (hit == NONE)
            break;
        paged_map_hit(p, seq, lp, hit);
        prev = h;
    }
    hold_rows(p, seq, tokens, lp * p->page);
    return lp * p->page;
}

static void paged_share_hold(KvCache *base, size_t pg, int delta)
{
    Paged *p = (Paged *)base;
    if (delta > 0) {
        p->ref[pg]++, p->held[pg]++;
    } else if (p->held[pg] > 0) {
        p->held[pg]--;
        paged_give_back(p, pg);
    }
}

static size_t paged_share_refs(const KvCache *base, size_t pg)
{
    const Paged *p = (const Paged *)base;
    return pg < p->max_pages ? p->ref[pg] : 0;
}

static int paged_share_adopt(KvCache *base, size_t seq, const size_t *phys, size_t rows, const int *tokens, Err *e)
{
    Paged *p = (Paged *)base;
    if (p->reserved[seq])
        return err_set(e, ERR_RUNTIME, "paged cache: adopt into sequence %zu, which is not empty", seq);
    if (rows > base->geo.max_seq_len)
        return err_set(e, ERR_RUNTIME, "paged cache: adopt of %zu rows past max_seq_len", rows);
    size_t *table = paged_table_of(p, seq);
    for (size_t lp = 0; lp < (rows + p->page - 1) / p->page; lp++) {
        if (phys[lp] >= p->max_pages || p->ref[phys[lp]] == 0)
            return err_set(e, ERR_RUNTIME, "paged cache: adopt of page %zu, which holds nothing", phys[lp]);
        table[lp] = phys[lp];
        p->ref[phys[lp]]++; /* now shared: map_page copies a partly filled one before writing into it */
    }
    hold_rows(p, seq, tokens, rows);
    return 0;
}

const KvShareOps paged_share_ops = {
    .usable = paged_share_usable,
    .hash = paged_share_hash,
    .map_hashed = paged_share_map_hashed,
    .hold = paged_share_hold,
    .refs = paged_share_refs,
    .adopt = paged_share_adopt,
};
