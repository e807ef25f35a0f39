/* paged_pool.h: the paged cache's state and the pool bookkeeping its two
 * files share (paged.c: the cache interface; paged_share.c: page sharing
 * for prefix caches). Private to src/kv/paged*.c. */
#ifndef KVSCOPE_KV_PAGED_POOL_H
#define KVSCOPE_KV_PAGED_POOL_H

#include <stdint.h>

#include "kv/layouts.h"

#define NONE SIZE_MAX
#define DROPPED (SIZE_MAX - 1) /* a logical page the block-sparse policy gave back */

typedef struct {
    KvCache base;
    KvStorage st;
    size_t page, max_pages, max_logical; /* rows per page, pool size, pages a sequence may map */
    size_t k_row, v_row, page_bytes;
    unsigned char *pool;                 /* [max_pages][page_bytes] */
    /* per physical page */
    uint32_t *ref;        /* sequences mapping it */
    uint64_t *hash;       /* of a full page, 0 = none */
    int *page_tokens;     /* [max_pages][page] token ids, to confirm a hash match */
    size_t *bucket_next;  /* hash chains */
    size_t *lru_prev, *lru_next; /* cached pages, least recently used at lru_head */
    size_t *free_stack;
    size_t n_free, lru_head, lru_tail, n_cached;
    size_t *buckets;      /* [n_buckets] */
    size_t n_buckets;
    /* per sequence */
    size_t *table;        /* [n_seqs][max_logical] */
    size_t *reserved;     /* [n_seqs] positions mapped */
    size_t *layer_len;    /* [n_layers][n_seqs] rows written (or shared) per layer */
    int *tokens;          /* [n_seqs][max_seq_len] */
    unsigned char *prefilled; /* [n_seqs][max_logical]: page mapped from the hash, rows already there */
    size_t *first_active; /* [n_seqs] logical pages before it were dropped by the sparse policy */
    int hash_on;          /* name full pages by the block hash (KvShareOps.hash) */
    size_t *held;         /* [max_pages] holders beside the sequences (KvShareOps.hold) */
    int sparse;           /* +sparse given */
    size_t threshold;
    double keep;
    KvStats st_counts;    /* prefix_hits, cow_copies, evictions, pages_dropped */
} Paged;

/* Take cached page pg off the LRU list (a prefix hit maps it again). */
void paged_lru_unlink(Paged *p, size_t pg);
/* Map cached page hit as sequence seq's logical page lp: a prefix hit
 * (one more holder, off the LRU list, the page's rows prefilled). */
void paged_map_hit(Paged *p, size_t seq, size_t lp, size_t hit);
/* The page holding the full page of tokens whose chained hash is h; NONE. */
size_t paged_hash_find(const Paged *p, uint64_t h, const int *tokens);
/* FNV-1a over the previous page's hash and this page's token ids. */
uint64_t paged_page_hash(uint64_t prev, const int *tokens, size_t n);
/* One reference fewer on pg: at 0, cached if hashed, else free. */
void paged_give_back(Paged *p, size_t pg);
/* seq's block table: [max_logical] physical pages. */
size_t *paged_table_of(const Paged *p, size_t seq);

extern const KvShareOps paged_share_ops;

#endif
