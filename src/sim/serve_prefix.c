/* serve_prefix.c: the prefix caches in the serving loop (serve.h,
 * ServePrefix): what a waiting sequence finds, the radix tree's share of a
 * running prompt and of a finished sequence, eviction for room. */
#include <stdlib.h>

#include "sim/serve_loop.h"

size_t serve_pages_available(const Loop *L)
{
    KvStats st = { 0 };
    kv_stats(L->cache, &st);
    return st.pages_free + st.pages_cached;
}

/* Pages available, after evicting the radix tree's least recently used
 * unlocked leaves until `want` are; when evicting all it may would not
 * reach `want`, none is evicted. */
size_t serve_pages_room(Loop *L, size_t want)
{
    size_t have = serve_pages_available(L);
    if (!L->tree || have >= want || have + radix_evictable(L->tree) < want)
        return have; /* enough, or not even the whole unlocked tree would do: evict nothing */
    while (have < want && radix_evict_one(L->tree, NULL))
        have = serve_pages_available(L);
    return have;
}

int serve_prefix_look(Loop *L, Seq *s, int fresh, ServePrefixHit *h, Err *e)
{
    *h = (ServePrefixHit){ .need = serve_pages_for(L->page, 0, s->n_tokens) };
    if (!fresh || !L->tree)
        return 0;
    if (radix_match(L->tree, s->tokens, s->n_tokens - 1, L->table, &h->node, &h->rows, e) < 0)
        return -1;
    radix_lock(L->tree, h->node, 1); /* before any eviction makes room */
    h->need = serve_pages_for(L->page, h->rows, s->n_tokens) + (h->rows % L->page != 0);
    return 0;
}

void serve_prefix_forget(Loop *L, ServePrefixHit *h)
{
    if (h->node)
        radix_lock(L->tree, h->node, -1);
    h->node = NULL;
}

int serve_prefix_map(Loop *L, Seq *s, int fresh, const ServePrefixHit *h, Err *e)
{
    const KvShareOps *share = L->cache->ops->share;
    const ServeRequest *q = &L->out->req[s->req];
    if (h->node) { /* L->table still holds the match's pages: nothing ran since */
        if (share->adopt(L->cache, s->slot, L->table, h->rows, s->tokens, e) < 0)
            return -1;
        s->filled = s->in_tree = h->rows, s->locked = h->node, s->cow = h->rows % L->page != 0;
    } else if (fresh && L->o->prefix == SERVE_PREFIX_BLOCK) {
        s->filled = share->map_hashed(L->cache, s->slot, s->tokens, s->n_tokens - 1);
    }
    if (!s->seen && s->sample == 0)
        L->out->prefix_hit_tokens += s->filled < q->prompt_len ? s->filled : q->prompt_len;
    s->seen = 1;
    return 0;
}

/* RADIX: the prompt is in: the tree takes its full pages now (SGLang
 * caches a running request's prefix too), so requests arriving while this
 * one decodes share them. Only whole pages: the partly filled last page is
 * still being written (the tree gets it when the request finishes). The
 * lock moves to the node where those pages end. */
int serve_share_prompt(Loop *L, Seq *s, Err *e)
{
    const size_t aligned = s->filled / L->page * L->page;
    if (aligned <= s->in_tree)
        return 0;
    RadixNode *node;
    L->cache->ops->page_table(L->cache, s->slot, L->table, L->pages_total);
    if (radix_insert(L->tree, s->tokens, aligned, L->table, &node, e) < 0)
        return -1;
    radix_lock(L->tree, node, 1);
    radix_lock(L->tree, s->locked, -1);
    s->locked = node, s->in_tree = aligned;
    return 0;
}

int serve_prefix_keep(Loop *L, Seq *s, Err *e)
{
    if (!L->tree)
        return 0;
    L->cache->ops->page_table(L->cache, s->slot, L->table, L->pages_total);
    if (radix_insert(L->tree, s->tokens, s->filled, L->table, NULL, e) < 0)
        return -1;
    radix_lock(L->tree, s->locked, -1);
    s->locked = NULL;
    return 0;
}

void serve_prefix_release(Loop *L, Seq *s)
{
    if (L->tree)
        radix_lock(L->tree, s->locked, -1);
    s->locked = NULL, s->cow = 0, s->in_tree = 0;
}

int serve_prefix_describe(Loop *L, Err *e)
{
    if (!L->tree)
        return 0;
    for (size_t p = 0; p < L->pages_total; p++) /* pages only the tree holds */
        if (L->page_owner[p] == SERVE_PAGE_FREE && radix_page_holds(L->tree, p))
            L->page_owner[p] = SERVE_PAGE_CACHED;
    size_t n = radix_view(L->tree, L->view, L->view_cap);
    if (n > L->view_cap) {
        RadixView *grown = realloc(L->view, 2 * n * sizeof *grown);
        if (!grown)
            return err_set(e, ERR_RUNTIME, "out of memory");
        L->view = grown, L->view_cap = 2 * n;
        n = radix_view(L->tree, L->view, L->view_cap);
    }
    for (size_t k = 0; k < n; k++)
        L->view[k].tokens = NULL; /* the callback keeps the shape, not the ids */
    L->cur.tree = L->view, L->cur.tree_nodes = n;
    return 0;
}
