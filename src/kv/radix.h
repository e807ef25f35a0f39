/* radix.h: a radix tree over token ids whose nodes own the pages holding
 * their rows (SGLang's RadixAttention), kept beside a paged cache's pool.
 *
 * Every path from the root spells a token sequence a finished request ran;
 * a node's edge is a run of tokens at positions [start, start + n). The
 * rows of those positions live in pool pages, and the node holds (as a
 * KvShareOps.hold holder) each page of its range: logical pages
 * start / P .. (start + n - 1) / P for pages of P rows. An edge may begin
 * or end inside a page. Such a page holds the rows of the parent's tail and
 * the child's head, and both nodes hold it: the rows before the boundary
 * are the common prefix's, whichever path wrote them. A second child that
 * branches inside that page gets the page mapped (shared) at its match, and
 * the paged cache copies it before the child's first write (copy on write
 * of the tail page); the copy becomes the second child's page.
 *
 * A match locks its last node and every ancestor (running requests map
 * those pages); eviction takes the least recently used leaf whose lock is
 * 0, gives its pages back (a page another node or a sequence still holds
 * stays), and repeats as the caller asks. Nothing here prints. */
#ifndef KVSCOPE_KV_RADIX_H
#define KVSCOPE_KV_RADIX_H

#include <stddef.h>
#include <stdint.h>

#include "kv/cache.h"
#include "util/err.h"

typedef struct RadixTree RadixTree;
typedef struct RadixNode RadixNode;

/* A node as the views and the tests see it, in depth-first order. */
typedef struct {
    size_t id;            /* stable while the node lives */
    size_t parent;        /* index of the parent in the same view; SIZE_MAX for the root's children */
    size_t depth;         /* edges from the root: 1 for the root's children */
    size_t start, n;      /* positions [start, start + n) of its edge */
    size_t n_pages;       /* pages it holds */
    size_t lock;          /* running requests whose match ends at or below it */
    uint64_t stamp;       /* last match or insert through it */
    int leaf;
    const int *tokens;    /* its edge's token ids [n]; valid until the tree changes */
} RadixView;

typedef struct {
    size_t nodes, tokens; /* nodes (not the root), tokens on their edges */
    size_t pages_held;    /* distinct pool pages the tree holds */
    size_t evicted_leaves, evicted_tokens;
    size_t evicted_pages; /* pages the tree stopped holding by evicting */
} RadixStats;

/* A tree over cache's pool (which must have KvShareOps and pages). NULL
 * with e set (ERR_USAGE for a cache without them, ERR_RUNTIME for memory). */
RadixTree *radix_new(KvCache *cache, Err *e);
/* Give every page back and free the tree (NULL: nothing). */
void radix_free(RadixTree *t);

/* The longest prefix of tokens[0..n) the tree holds: its length m, the
 * physical pages of logical pages 0 .. ceil(m / P) - 1 into pages[] (room
 * for ceil(n / P)), and the node where it ends in *last (the root for
 * m = 0), which the caller may lock. A match that ends inside an edge
 * splits the edge there. -1 only when memory runs out (e set). */
int radix_match(RadixTree *t, const int *tokens, size_t n, size_t *pages, RadixNode **last, size_t *m, Err *e);

/* delta +1 / -1 on node and every ancestor (the root is not counted). */
void radix_lock(RadixTree *t, RadixNode *node, int delta);

/* Keep tokens[0..n), whose rows are in the pages pages[0 .. ceil(n / P)) (a
 * sequence's page table): the part no path spells yet becomes a new leaf
 * that holds its pages. The node where the n tokens end into *last (may be
 * NULL; the root for n = 0). -1 when memory runs out. */
int radix_insert(RadixTree *t, const int *tokens, size_t n, const size_t *pages, RadixNode **last, Err *e);

/* Evict the least recently used unlocked leaf: 1 and its id in *id (may be
 * NULL), or 0 when every leaf is locked or the tree is empty. */
int radix_evict_one(RadixTree *t, size_t *id);

/* Pages that evicting every unlocked leaf, again and again, would give
 * back to the pool: held only by unlocked nodes, mapped by no sequence. A
 * caller short of pages asks first, so as not to empty the tree for a
 * request that would not fit anyway. */
size_t radix_evictable(RadixTree *t);

void radix_stats(const RadixTree *t, RadixStats *out);

/* Up to cap nodes in depth-first order (children oldest first) into out;
 * returns how many nodes the tree has. */
size_t radix_view(const RadixTree *t, RadixView *out, size_t cap);

/* Pages holders the tree keeps on physical page pg (0 .. 2). */
size_t radix_page_holds(const RadixTree *t, size_t pg);

#endif
