/* radix.c: the radix prefix tree over a paged pool (radix.h). Few nodes
 * (a serving run's requests): eviction scans them all for the oldest
 * unlocked leaf rather than keeping a heap. */
#include "kv/radix.h"

#include <stdlib.h>
#include <string.h>

struct RadixNode {
    RadixNode *parent, *child, *next; /* first child; next sibling */
    int *tok;             /* [n] the edge's token ids */
    size_t start, n;      /* positions [start, start + n) */
    size_t *pages;        /* [n_pages] physical pages of logical pages start / P .. (start + n - 1) / P */
    size_t n_pages;
    size_t lock;
    uint64_t stamp;
    size_t id;
};

struct RadixTree {
    KvCache *cache;
    const KvShareOps *share;
    size_t page, pool_pages;
    RadixNode root;
    uint64_t clock;
    size_t next_id;
    uint32_t *holds;      /* [pool_pages] holders the tree keeps on each page */
    uint32_t *scratch;    /* [pool_pages] radix_evictable's count */
    RadixStats st;
};

/* Pages a run of positions [start, start + n) touches (n > 0). */
static size_t pages_of(size_t page, size_t start, size_t n)
{
    return (start + n - 1) / page - start / page + 1;
}

static void hold(RadixTree *t, size_t pg)
{
    if (t->holds[pg]++ == 0)
        t->st.pages_held++;
    t->share->hold(t->cache, pg, 1);
}

/* One holder fewer; 1 when the tree no longer holds the page at all. */
static int release(RadixTree *t, size_t pg)
{
    t->share->hold(t->cache, pg, -1);
    if (--t->holds[pg] > 0)
        return 0;
    t->st.pages_held--;
    return 1;
}

static void node_free(RadixNode *x)
{
    free(x->tok);
    free(x->pages);
    free(x);
}

/* A new node for tokens[0..n) at positions start.., holding pages[] of its
 * range (their holders counted); NULL when memory runs out. */
static RadixNode *node_new(RadixTree *t, const int *tokens, size_t start, size_t n, const size_t *pages)
{
    RadixNode *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->n_pages = pages_of(t->page, start, n);
    x->tok = malloc(n * sizeof *x->tok);
    x->pages = malloc(x->n_pages * sizeof *x->pages);
    if (!x->tok || !x->pages) {
        node_free(x);
        return NULL;
    }
    memcpy(x->tok, tokens, n * sizeof *x->tok);
    memcpy(x->pages, pages, x->n_pages * sizeof *x->pages);
    for (size_t i = 0; i < x->n_pages; i++)
        hold(t, x->pages[i]);
    x->start = start, x->n = n, x->id = t->next_id++;
    t->st.nodes++, t->st.tokens += n;
    return x;
}

static RadixNode *child_with(const RadixNode *x, int token)
{
    for (RadixNode *c = x->child; c; c = c->next)
        if (c->tok[0] == token)
            return c;
    return NULL;
}

static void append_child(RadixNode *parent, RadixNode *c)
{
    RadixNode **link = &parent->child;
    while (*link)
        link = &(*link)->next;
    *link = c;
    c->parent = parent, c->next = NULL;
}

/* Cut x's edge after k tokens (0 < k < n): a new upper node takes x's place
 * with tokens [0, k) and x keeps the rest below it. A page the cut falls
 * inside is held by both. Returns the upper node, NULL out of memory. */
static RadixNode *split(RadixTree *t, RadixNode *x, size_t k)
{
    RadixNode *up = node_new(t, x->tok, x->start, k, x->pages);
    if (!up)
        return NULL;
    const size_t skip = (x->start + k) / t->page - x->start / t->page, rest = x->n - k;
    int *tok = malloc(rest * sizeof *tok);
    size_t *pages = malloc((x->n_pages - skip) * sizeof *pages);
    if (!tok || !pages) {
        free(tok), free(pages);
        for (size_t i = 0; i < up->n_pages; i++)
            release(t, up->pages[i]);
        t->st.nodes--, t->st.tokens -= k;
        node_free(up);
        return NULL;
    }
    memcpy(tok, x->tok + k, rest * sizeof *tok);
    memcpy(pages, x->pages + skip, (x->n_pages - skip) * sizeof *pages);
    /* the pages up now holds too were x's: up's holds are new, x gives back
     * those below its new start (the shared page, cut inside, it keeps) */
    for (size_t i = 0; i < skip; i++)
        release(t, x->pages[i]);
    free(x->tok), free(x->pages);
    x->tok = tok, x->pages = pages, x->n_pages -= skip;
    x->start += k, x->n = rest;
    t->st.tokens -= k; /* node_new counted them again in up */
    /* up takes x's place among its siblings */
    RadixNode **link = &x->parent->child;
    while (*link != x)
        link = &(*link)->next;
    *link = up;
    up->parent = x->parent, up->next = x->next;
    up->child = x, x->parent = up, x->next = NULL;
    up->lock = x->lock, up->stamp = x->stamp;
    return up;
}

static size_t common(const int *a, const int *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

RadixTree *radix_new(KvCache *cache, Err *e)
{
    KvStats st = { 0 };
    kv_stats(cache, &st);
    if (!cache->ops->share || !st.page_rows) {
        err_set(e, ERR_USAGE, "a radix prefix cache needs a paged cache, not '%s'", cache->spec);
        return NULL;
    }
    if (cache->ops->share->usable(cache, e) < 0)
        return NULL;
    RadixTree *t = calloc(1, sizeof *t);
    if (t) {
        t->holds = calloc(st.pages_total, sizeof *t->holds);
        t->scratch = calloc(st.pages_total, sizeof *t->scratch);
    }
    if (!t || !t->holds || !t->scratch) {
        if (t)
            free(t->holds), free(t->scratch);
        free(t);
        err_set(e, ERR_RUNTIME, "out of memory for a radix tree over %zu pages", st.pages_total);
        return NULL;
    }
    t->cache = cache, t->share = cache->ops->share;
    t->page = st.page_rows, t->pool_pages = st.pages_total;
    return t;
}

static void free_below(RadixTree *t, RadixNode *x)
{
    for (RadixNode *c = x->child, *next; c; c = next) {
        next = c->next;
        free_below(t, c);
        for (size_t i = 0; i < c->n_pages; i++)
            release(t, c->pages[i]);
        node_free(c);
    }
}

void radix_free(RadixTree *t)
{
    if (!t)
        return;
    free_below(t, &t->root);
    free(t->holds), free(t->scratch);
    free(t);
}

int radix_match(RadixTree *t, const int *tokens, size_t n, size_t *pages, RadixNode **last, size_t *m_out, Err *e)
{
    RadixNode *x = &t->root;
    size_t m = 0;
    t->clock++;
    for (RadixNode *c; m < n && (c = child_with(x, tokens[m]));) {
        const size_t lim = c->n < n - m ? c->n : n - m, k = common(c->tok, tokens + m, lim);
        if (k < c->n && !(c = split(t, c, k)))
            return err_set(e, ERR_RUNTIME, "out of memory splitting a radix node");
        /* deeper nodes overwrite the page a cut falls in: theirs holds the rows past it too */
        memcpy(pages + c->start / t->page, c->pages, c->n_pages * sizeof *pages);
        c->stamp = t->clock;
        x = c, m += k;
    }
    *last = x, *m_out = m;
    return 0;
}

void radix_lock(RadixTree *t, RadixNode *node, int delta)
{
    for (RadixNode *x = node; x && x != &t->root; x = x->parent)
        x->lock = delta > 0 ? x->lock + 1 : x->lock - 1;
}

int radix_insert(RadixTree *t, const int *tokens, size_t n, const size_t *pages, RadixNode **last, Err *e)
{
    RadixNode *x = &t->root;
    if (last)
        *last = x;
    size_t m = 0;
    t->clock++;
    while (m < n) {
        RadixNode *c = child_with(x, tokens[m]);
        if (!c) { /* the new part: a leaf from m, holding the sequence's pages of its range */
            RadixNode *leaf = node_new(t, tokens + m, m, n - m, pages + m / t->page);
            if (!leaf)
                return err_set(e, ERR_RUNTIME, "out of memory for a radix node");
            leaf->stamp = t->clock;
            append_child(x, leaf);
            if (last)
                *last = leaf;
            return 0;
        }
        const size_t lim = c->n < n - m ? c->n : n - m, k = common(c->tok, tokens + m, lim);
        if (k < c->n && !(c = split(t, c, k)))
            return err_set(e, ERR_RUNTIME, "out of memory splitting a radix node");
        c->stamp = t->clock;
        x = c, m += k;
        if (last)
            *last = x;
    }
    return 0;
}

/* The unlocked leaf least recently used below x (ties: the first met). */
static RadixNode *oldest_leaf(RadixNode *x, RadixNode *best)
{
    for (RadixNode *c = x->child; c; c = c->next) {
        if (!c->child && c->lock == 0 && (!best || c->stamp < best->stamp))
            best = c;
        best = oldest_leaf(c, best);
    }
    return best;
}

int radix_evict_one(RadixTree *t, size_t *id)
{
    RadixNode *x = oldest_leaf(&t->root, NULL);
    if (!x)
        return 0;
    RadixNode **link = &x->parent->child;
    while (*link != x)
        link = &(*link)->next;
    *link = x->next;
    for (size_t i = 0; i < x->n_pages; i++)
        t->st.evicted_pages += (size_t)release(t, x->pages[i]);
    t->st.nodes--, t->st.tokens -= x->n;
    t->st.evicted_leaves++, t->st.evicted_tokens += x->n;
    if (id)
        *id = x->id;
    node_free(x);
    return 1;
}

/* Count, per page, the holds of x and every node below it. */
static void count_all(RadixTree *t, const RadixNode *x)
{
    for (size_t i = 0; i < x->n_pages; i++)
        t->scratch[x->pages[i]]++;
    for (const RadixNode *c = x->child; c; c = c->next)
        count_all(t, c);
}

/* ... of the unlocked nodes below x: a node's lock counts the locks below
 * it, so an unlocked node's subtree is unlocked and evicts whole. */
static void count_unlocked(RadixTree *t, const RadixNode *x)
{
    for (const RadixNode *c = x->child; c; c = c->next)
        if (c->lock)
            count_unlocked(t, c);
        else
            count_all(t, c);
}

size_t radix_evictable(RadixTree *t)
{
    memset(t->scratch, 0, t->pool_pages * sizeof *t->scratch);
    count_unlocked(t, &t->root);
    size_t n = 0;
    for (size_t pg = 0; pg < t->pool_pages; pg++)
        n += t->scratch[pg] && t->scratch[pg] == t->holds[pg] && t->share->refs(t->cache, pg) == t->holds[pg];
    return n;
}

void radix_stats(const RadixTree *t, RadixStats *out)
{
    *out = t->st;
}

static void view_below(const RadixNode *x, size_t parent, size_t depth, RadixView *out, size_t cap, size_t *k)
{
    for (const RadixNode *c = x->child; c; c = c->next) {
        const size_t me = (*k)++;
        if (me < cap)
            out[me] = (RadixView){ .id = c->id, .parent = parent, .depth = depth, .start = c->start, .n = c->n,
                                   .n_pages = c->n_pages, .lock = c->lock, .stamp = c->stamp, .leaf = !c->child,
                                   .tokens = c->tok };
        view_below(c, me, depth + 1, out, cap, k);
    }
}

size_t radix_view(const RadixTree *t, RadixView *out, size_t cap)
{
    size_t k = 0;
    view_below(&t->root, SIZE_MAX, 1, out, cap, &k);
    return k;
}

size_t radix_page_holds(const RadixTree *t, size_t pg)
{
    return pg < t->pool_pages ? t->holds[pg] : 0;
}
