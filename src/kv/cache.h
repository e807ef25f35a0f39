/* cache.h: the one interface every KV cache answers.
 *
 * The model appends the K and V rows of new tokens and reads them back as a
 * walk over blocks; it never asks what kind of cache it holds. A block is a
 * run of rows of one (layer, sequence, KV head) stored contiguously in one
 * format, with the absolute position of its first row: a contiguous cache
 * yields one block, a paged cache its pages, a ring at most two runs.
 *
 * Shapes: an append hands k and v as [n][n_kv_heads][head_dim] f32, token
 * major, the way the projections produce them; K already carries RoPE.
 * Positions are absolute and never reused within a sequence. */
#ifndef KVSCOPE_KV_CACHE_H
#define KVSCOPE_KV_CACHE_H

#include <stddef.h>

#include "kernels/block.h"
#include "kernels/codec.h"
#include "kernels/format.h"
#include "stats/counters.h"
#include "util/err.h"

typedef struct {
    size_t n_layers;
    size_t n_seqs;      /* batch: independent sequences */
    size_t n_kv_heads;
    size_t head_dim;
    size_t max_seq_len; /* positions a sequence may reach */
    const FormatOps *codec; /* [FMT_COUNT] codecs that encode appended rows; NULL = the reference ones */
    int k_only;         /* 1: store K rows only, V takes no memory (an MLA latent cache: the row is the
                           compressed latent and its RoPE key, and V is rebuilt from it, model/mla.h).
                           An append still passes a readable v (the latent again); blocks' v is then
                           not to be read. Layouts that honour it: contiguous, dynamic, paged, ring,
                           mixed (kv_v_row_stored); one that does not stores V anyway, wasting memory. */
    size_t mem_limit;   /* bytes the storage a spec sizes may take; 0 = this machine's physical memory.
                           A spec beyond it is refused before anything is allocated. */
    double rope_theta;  /* the RoPE base the K rows were rotated with (a cache that moves keys to new
                           positions rotates them again); 0 = unknown */
} KvGeometry;


typedef struct KvCache KvCache;

/* What a cache can say about its memory beyond bytes: zeros for a layout
 * without pages. Shared pages are counted once in pages_used. */
typedef struct {
    size_t page_rows;     /* rows per page; 0 when not paged */
    size_t pages_total;   /* the pool */
    size_t pages_used;    /* referenced by at least one sequence */
    size_t pages_free;    /* never used or given back clean */
    size_t pages_cached;  /* given back but still holding a hashed full page (reusable, LRU) */
    size_t pages_shared;  /* referenced by more than one sequence */
    size_t waste_rows;    /* reserved but empty slots (the tail of each sequence's last page) */
    size_t prefix_hits;   /* pages mapped from the prefix hash instead of written */
    size_t cow_copies;    /* shared pages copied before a write */
    size_t evictions;     /* cached pages reclaimed for new data */
    size_t pages_hashed;  /* pages the block hash names (mapped or cached): what it keeps for reuse */
    int sparse_on;        /* block-sparse mode active (past its threshold) */
    size_t pages_dropped; /* logical pages a policy gave back (block-sparse) */
    size_t pages_active;  /* logical pages still attended, all sequences */
    size_t bytes_saved;   /* memory those dropped pages would hold */
    size_t chan_groups;   /* groups of rows held with keys quantized per channel (kivi), all layers
                             and sequences */
    size_t shifts;        /* context shifts done (shift), all sequences */
    size_t shifted_out;   /* positions those shifts discarded */
} KvStats;

/* The state of one position's slot, for the views' cache map. */
typedef enum {
    CELL_EMPTY = 0, /* reserved or not yet reached */
    CELL_EXACT,     /* holds K and V in f32 */
    CELL_LOSSY,     /* holds K and V, at least one in a lossy format */
    CELL_EVICTED,   /* held once, dropped by a policy */
    CELL_SHARED,    /* held in memory shared with another sequence */
} CellState;

typedef struct {
    unsigned char state;      /* CellState */
    unsigned char k_fmt, v_fmt; /* Format, when held */
    unsigned char page_start; /* 1 when a page (or block of storage) starts here */
} KvCell;

/* Page-level sharing across sequences, for a serving loop's prefix cache
 * (sim/serve.h): a paged cache has it, other layouts leave it NULL. Page
 * numbers are physical pages of the pool (page_table's). */
typedef struct {
    /* 0 when sharing can be used; else ERR_USAGE naming why (+sparse gives
     * pages back behind a sequence's back). */
    int (*usable)(const KvCache *c, Err *e);
    /* Name full pages by the block hash (on at open) or not: off, a page
     * given back with no holder goes free at once. For an empty pool. */
    void (*hash)(KvCache *c, int on);
    /* Map into the empty sequence seq the leading full pages of tokens[0..n)
     * the hash names, as positions held in every layer (rows not run again);
     * returns those positions, a multiple of the page. */
    size_t (*map_hashed)(KvCache *c, size_t seq, const int *tokens, size_t n);
    /* One more (delta 1) or one fewer (-1) holder of page pg, beside the
     * sequences mapping it; a page with no holder left goes back to the pool. */
    void (*hold)(KvCache *c, size_t pg, int delta);
    /* Holders of page pg: sequences mapping it plus hold()'s. */
    size_t (*refs)(const KvCache *c, size_t pg);
    /* Map pages phys[0 .. ceil(rows / page)) into the empty sequence seq as
     * its positions 0 .. rows-1, held in every layer, with token ids
     * tokens[0 .. rows); each page one holder more. A last page that rows
     * ends inside is copied before the sequence's next write into it (it is
     * shared: the giver still holds it). */
    int (*adopt)(KvCache *c, size_t seq, const size_t *phys, size_t rows, const int *tokens, Err *e);
} KvShareOps;

typedef struct {
    const char *name;
    /* Optional (NULL = none): page sharing for prefix caches. */
    const KvShareOps *share;
    /* Optional (NULL = nothing to do): positions pos .. pos+n-1 of seq, whose
     * token ids are tokens[0..n), are about to be appended in every layer.
     * A paged cache maps pages here, sharing a full page whose tokens (and
     * prefix) it already holds, and copies a shared page before a write. */
    int (*reserve)(KvCache *c, size_t seq, size_t pos, const int *tokens, size_t n, Counters *ctr, Err *e);
    /* Store n rows for (layer, seq) at positions pos .. pos+n-1. */
    int (*append)(KvCache *c, size_t layer, size_t seq, size_t pos, size_t n,
                  const float *k, const float *v, Counters *ctr, Err *e);
    size_t (*n_blocks)(const KvCache *c, size_t layer, size_t seq);
    void (*block)(const KvCache *c, size_t layer, size_t seq, size_t kv_head, size_t i, KvBlock *out);
    size_t (*length)(const KvCache *c, size_t layer, size_t seq); /* rows held */
    /* Bytes of the rows held (what attention can reach), and bytes set aside
     * for rows: allocated at open, or as the cache grew. A paged cache sets
     * its whole pool aside at open (KvStats.pages_total); its reserved bytes
     * are the pages its sequences have mapped. test_cache_memory.c checks
     * both against the blocks and the heap. */
    size_t (*bytes_used)(const KvCache *c);
    size_t (*bytes_reserved)(const KvCache *c);
    void (*reset)(KvCache *c); /* empty every sequence, keep the memory */
    /* Make dst (an empty sequence) hold what src holds: a paged cache shares
     * the pages (copy on write), others copy the rows (counted). */
    int (*fork)(KvCache *c, size_t src, size_t dst, Counters *ctr, Err *e);
    /* Empty one sequence, giving its memory back. */
    void (*drop)(KvCache *c, size_t seq);
    /* Optional (NULL = the cache needs no feedback): the softmax weights of
     * the last nq queries of a pass (nq from observe_queries), for the G
     * query heads of kv_head, over the rows attention saw in block order:
     * query i (0 = the earliest of the nq, nq - 1 = the pass's last) and
     * head g at w[i * q_stride + g * g_stride + j]. The last query saw n
     * rows; query i saw the first n - (nq - 1 - i) (causal: the others are
     * the pass's later tokens, and what lies past them is not to be read).
     * Called for every KV head of a layer in order, after that layer's
     * attention. */
    void (*observe)(KvCache *c, size_t layer, size_t seq, size_t kv_head, const float *w, size_t q_stride,
                    size_t g_stride, size_t G, size_t nq, size_t n);
    /* Optional (NULL = 1 when observe is set): how many of the last queries
     * of a pass of n_new tokens observe wants, at most n_new. 0 skips
     * observe for that pass, so flash attention may run (SnapKV listens to
     * a prompt's window, never to a decode step). A model with a sliding
     * window hands over the last query only: its earlier queries' rows
     * start elsewhere. */
    size_t (*observe_queries)(const KvCache *c, size_t n_new);
    /* Optional (NULL = any): the most tokens one pass may append to a
     * sequence (a ring holds its window plus one pass). */
    size_t (*max_pass)(const KvCache *c);
    /* Optional (NULL = max_seq_len): the most rows one sequence can hold
     * (contiguous:max=ROWS reserves fewer), so a run that would overflow
     * can be refused before it prints or computes anything. */
    size_t (*capacity)(const KvCache *c);
    /* Optional (NULL = positions are the text's): how many positions of seq
     * the cache has discarded and moved its rows back over (a context
     * shift). The model runs seq's tokens at text position minus this, and
     * appends and reads at those positions: the cache's own. A cache with
     * this op makes room as it goes and never overflows (kv_check_room). */
    size_t (*pos_shift)(const KvCache *c, size_t seq);
    /* Optional (NULL = it cannot; `rollback` says why): keep positions
     * 0 .. len-1 of seq in every layer and forget the rest, as speculative
     * decoding forgets the rows of rejected draft tokens. len is at most the
     * rows seq holds. A kind that rolls back in some configurations only
     * refuses the others (ERR_USAGE, naming why) whatever len is, so a
     * caller may ask first with the length seq has (kv_can_roll_back). */
    int (*truncate)(KvCache *c, size_t seq, size_t len, Counters *ctr, Err *e);
    /* How the kind rolls rows back, or why it cannot: one sentence. */
    const char *rollback;
    /* Optional (NULL = no pages): fill *out. */
    void (*stats)(const KvCache *c, KvStats *out);
    /* Optional: the physical page of each logical page of seq into phys
     * (at most cap); returns the number of logical pages. */
    size_t (*page_table)(const KvCache *c, size_t seq, size_t *phys, size_t cap);
    /* Optional (NULL = every row in k_fmt/v_fmt): how rows are stored in
     * words, for a layout whose formats vary by row ("K/V f16 hot, q4_0 cold"). */
    void (*formats)(const KvCache *c, char *buf, size_t cap);
    /* Describe positions 0 .. n-1 of (layer, seq) into out[0 .. n). */
    void (*cells)(const KvCache *c, size_t layer, size_t seq, KvCell *out, size_t n);
    void (*destroy)(KvCache *c);
} KvCacheOps;

/* Every implementation starts with this header. */
struct KvCache {
    const KvCacheOps *ops;
    KvGeometry geo;
    char spec[128]; /* the spec string that made it, for reports */
    Format k_fmt, v_fmt; /* how its rows are stored (a layout may mix formats) */
    int lossy;           /* may return rows other than those appended: quantized, aged or dropped */
};

/* Build a cache from a spec string such as "contiguous", "dynamic" or
 * "contiguous+quant:k=q8_0,v=q4_0".
 * Returns NULL and fills e (ERR_USAGE naming the bad part and what is
 * accepted) on a bad spec; ERR_RUNTIME when memory runs out. The caller owns
 * the result and releases it with kv_free. */
KvCache *kv_open(const char *spec, const KvGeometry *geo, Err *e);
void kv_free(KvCache *c);

/* Whether spec names a cache that shifts (kv_shifts) and so runs past the
 * model's context, known before it is opened; 0 for a bad spec. */
int kv_spec_shifts(const char *spec);

/* One line per accepted cache spec, for --help, into buf. */
void kv_spec_help(char *buf, size_t cap);

/* Bytes of one position's K and V rows over all KV heads of one layer (a
 * geometry's unit of memory): the building block of every closed-form
 * memory figure. A k_only geometry counts K alone. */
size_t kv_row_pair_bytes(const KvGeometry *g, Format k_fmt, Format v_fmt);

static inline int kv_reserve(KvCache *c, size_t seq, size_t pos, const int *tokens, size_t n, Counters *ctr,
                             Err *e)
{
    return c->ops->reserve ? c->ops->reserve(c, seq, pos, tokens, n, ctr, e) : 0;
}
static inline int kv_fork(KvCache *c, size_t src, size_t dst, Counters *ctr, Err *e)
{
    return c->ops->fork(c, src, dst, ctr, e);
}
static inline void kv_drop(KvCache *c, size_t seq) { c->ops->drop(c, seq); }
void kv_stats(const KvCache *c, KvStats *out);
/* How c stores its rows, in words for the views: "K/V f32/f32", or the
 * layout's own description when formats vary by row (mixed, kivi). */
void kv_formats(const KvCache *c, char *buf, size_t cap);
static inline size_t kv_max_pass(const KvCache *c) { return c->ops->max_pass ? c->ops->max_pass(c) : 0; }
static inline size_t kv_capacity(const KvCache *c)
{
    return c->ops->capacity ? c->ops->capacity(c) : c->geo.max_seq_len;
}
/* Positions of seq discarded so far (cache.h's pos_shift); 0 for a cache
 * that never shifts. */
static inline size_t kv_pos_shift(const KvCache *c, size_t seq)
{
    return c->ops->pos_shift ? c->ops->pos_shift(c, seq) : 0;
}
/* 1 when c shifts its positions (a run may outgrow the model's context). */
static inline int kv_shifts(const KvCache *c) { return c->ops->pos_shift != NULL; }
/* Fail (ERR_RUNTIME, "cache overflow: ...") when a sequence of `rows`
 * positions would not fit in c; 0 when it would. */
int kv_check_room(const KvCache *c, size_t rows, Err *e);
static inline int kv_append(KvCache *c, size_t layer, size_t seq, size_t pos, size_t n,
                            const float *k, const float *v, Counters *ctr, Err *e)
{
    return c->ops->append(c, layer, seq, pos, n, k, v, ctr, e);
}
static inline size_t kv_n_blocks(const KvCache *c, size_t layer, size_t seq)
{
    return c->ops->n_blocks(c, layer, seq);
}
static inline void kv_block(const KvCache *c, size_t layer, size_t seq, size_t kv_head, size_t i, KvBlock *out)
{
    c->ops->block(c, layer, seq, kv_head, i, out);
}
static inline size_t kv_length(const KvCache *c, size_t layer, size_t seq)
{
    return c->ops->length(c, layer, seq);
}
/* Keep positions 0 .. len-1 of seq (cache.h's truncate); ERR_USAGE naming
 * why for a cache that cannot roll back. */
int kv_truncate(KvCache *c, size_t seq, size_t len, Counters *ctr, Err *e);
/* 0 when c can roll back rows; -1 with the reason (ERR_USAGE) when not. */
int kv_can_roll_back(KvCache *c, Err *e);
static inline size_t kv_bytes_used(const KvCache *c) { return c->ops->bytes_used(c); }
static inline size_t kv_bytes_reserved(const KvCache *c) { return c->ops->bytes_reserved(c); }
static inline void kv_reset(KvCache *c) { c->ops->reset(c); }
static inline void kv_cells(const KvCache *c, size_t layer, size_t seq, KvCell *out, size_t n)
{
    c->ops->cells(c, layer, seq, out, n);
}

/* The cells of a cache that holds positions 0 .. len-1 of a sequence in one
 * run of storage: held, then empty (contiguous and dynamic use it). */
void kv_cells_prefix(const KvCache *c, size_t len, KvCell *out, size_t n);

#endif
