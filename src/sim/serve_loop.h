/* serve_loop.h: the serving loop's state, shared by the files that make
 * it up (serve.c: arrivals, scheduling, decoding; serve_prefix.c: the
 * prefix caches' part). Private to sim/serve*.c. */
#ifndef KVSCOPE_SIM_SERVE_LOOP_H
#define KVSCOPE_SIM_SERVE_LOOP_H

#include <stddef.h>

#include "kv/radix.h"
#include "model/forward.h"
#include "sim/serve.h"

/* A sequence's life in the loop: a request, or one sample of a forked
 * request. Its tokens are the prompt, then what it generated; `filled` of
 * them are in the cache. The tokens not yet in the cache are what its next
 * chunk runs: the whole prompt at first, one token per decode step after
 * that, everything again after a preemption. A forked request's sample 0
 * prefills the prompt; the other samples wait (SERVE_FUTURE) until it is in
 * and they are forked from it. */
typedef struct {
    ServeState state;
    size_t req, sample;
    size_t unforked;      /* sample 0 of a forked request: samples still to fork from it (they hold a
                             slot's promise while it runs) */
    size_t slot;          /* cache sequence, while running */
    size_t admitted;      /* admission order: the newest running is preempted first */
    int *tokens;          /* [prompt_len + n_output] */
    size_t n_tokens, filled, target; /* target: prompt_len + n_output, the last never fed */
    float *swapped;       /* swap: [n_layers][2][n_swapped][kv_dim] K then V, while it waits */
    size_t n_swapped;
    RadixNode *locked;    /* RADIX: where its match (or its prompt's full pages) ended, locked while it runs */
    size_t in_tree;       /* RADIX: its positions the tree spells along that path */
    int cow;              /* its last mapped page is the tree's, partly filled: its next write copies it */
    int seen;             /* admitted before (prefix hits count at the first admission only) */
} Seq;

typedef struct {
    const Model *m;
    KvCache *cache;
    const ServeOptions *o;
    ServeResult *out;
    Seq *seq;             /* [n_seqs] by request, then sample */
    size_t n_seqs;
    size_t *left;         /* [n_requests] samples not finished */
    void *scratch;        /* sample_scratch_bytes(vocab) */
    size_t *free_slots, n_free; /* a stack of cache sequences */
    size_t page, pages_total, n_admitted;
    ForwardState fs;
    float *logits;
    ServeStep cur;
    int *page_owner;        /* [pages_total] scratch for the step callback */
    unsigned char *state;   /* [n_requests] */
    size_t *held;           /* [n_requests] */
    size_t *table;          /* [pages_total] one sequence's page table */
    size_t *first_seq;      /* [n_requests] index of each request's sample 0 in seq */
    size_t *pause;          /* [n_requests] CHAT: steps a turn waits after the previous one */
    size_t last_arrival;    /* a bound on the arrivals (chat turns come after their previous) */
    RadixTree *tree;        /* RADIX */
    RadixView *view;        /* [view_cap] the tree for the step callback */
    size_t view_cap;
} Loop;

/* Pages a sequence maps past `from` positions to reach `to`. */
static inline size_t serve_pages_for(size_t page, size_t from, size_t to)
{
    return (to + page - 1) / page - (from + page - 1) / page;
}

/* Free pages, and hashed ones no sequence maps (taken back on demand). */
size_t serve_pages_available(const Loop *L);
/* The same after evicting radix leaves to reach `want` (serve_prefix.c). */
size_t serve_pages_room(Loop *L, size_t want);

/* What a prefix cache found for a waiting sequence, before it is admitted. */
typedef struct {
    size_t rows;          /* positions found, all but the last token at most */
    size_t need;          /* pages the sequence needs past them (a copied tail page included) */
    RadixNode *node;      /* RADIX: where the match ended, locked; NULL otherwise */
} ServePrefixHit;

/* Look up waiting sequence s (fresh: nothing of it held, not swapped):
 * RADIX matches its tokens and locks the match. -1 out of memory. */
int serve_prefix_look(Loop *L, Seq *s, int fresh, ServePrefixHit *h, Err *e);
/* s will not be admitted now: the match's lock goes. */
void serve_prefix_forget(Loop *L, ServePrefixHit *h);
/* s has its slot: map what was found (RADIX adopts the tree's pages, BLOCK
 * maps the hashed full pages) and count the prompt tokens not run. */
int serve_prefix_map(Loop *L, Seq *s, int fresh, const ServePrefixHit *h, Err *e);
/* RADIX: s's prompt is in; its full pages go to the tree now. */
int serve_share_prompt(Loop *L, Seq *s, Err *e);
/* RADIX: s finished: the tree keeps every row it held, then its lock goes. */
int serve_prefix_keep(Loop *L, Seq *s, Err *e);
/* RADIX: s gave its rows back (preempted): its lock goes. */
void serve_prefix_release(Loop *L, Seq *s);
/* RADIX: the tree, depth first, into the step being described. */
int serve_prefix_describe(Loop *L, Err *e);

#endif
