/* forward.h: one forward pass of the decoder over new tokens.
 *
 * With a cache, the new tokens' K and V rows are appended at their absolute
 * positions and attention reads the cache's blocks: this is prefill (many
 * tokens) and decode (one). Without a cache, the tokens must be the whole
 * sequence from position 0 and attention reads their own K and V: this is
 * the uncached path that recomputes everything. */
#ifndef KVSCOPE_MODEL_FORWARD_H
#define KVSCOPE_MODEL_FORWARD_H

#include <stddef.h>

#include "kernels/block.h"
#include "kv/cache.h"
#include "model/model.h"
#include "stats/counters.h"

struct MlaState; /* model/mla.h */

/* Scratch activations for up to max_rows token rows (all sequences). */
typedef struct {
    size_t max_rows;
    float *x;      /* [rows][d_model] residual stream */
    float *xb;     /* [rows][d_model] normed input of a sublayer */
    float *q;      /* [rows][q_dim] */
    float *k, *v;  /* [rows][kv_dim] */
    float *att;    /* [rows][q_dim] attention output per head */
    float *hb;     /* [rows][ffn_dim] gate, then swiglu */
    float *hb2;    /* [rows][ffn_dim] up */
    float *scores; /* [group][max_seq_len] */
    float *view;   /* [2][max_seq_len][head_dim]: the materialized f32 view */
    float *chan_q; /* [group][head_dim]: a query with per-channel key scales folded in */
    void *q8;      /* [group] q8_0 rows of head_dim: the queries rounded for integer key scores (int_dot) */
    void *iv;      /* flash's integer value sums (int_dot; attend_iv_bytes) */
    KvBlock *blocks, *view_blocks; /* [blocks_cap] each */
    size_t blocks_cap;
    /* When not NULL, filled by every pass that uses a naive form (flash never
     * holds them all): the attention weights of sequence
     * 0, [n_layers][n_heads][max_q][max_seq_len]; query t of the pass, head h,
     * row j (j-th visible position) of layer l is
     * probs[((l * n_heads + h) * max_q + t) * max_seq_len + j]. */
    float *probs;
    size_t max_q;
    float *observed; /* [observed_q][group][max_seq_len]: weights handed to a cache that observes them */
    size_t observed_q; /* queries observed holds: 1, grown when a cache asks for more (observe_queries) */
    /* Rows the last query of sequence 0 saw in KV head 0 over the layers of
     * the newest pass, fewest and most (a cache that evicts or a window reads
     * fewer than the positions; h2o's layers differ); 0 when not counted. */
    size_t seen_min, seen_max;
    /* With probs: the attention output (before W_o) of sequence 0's queries,
     * [n_layers][max_q][q_dim]. */
    float *att_layers;
    /* MLA models only (NULL otherwise): MLA's scratch, its LRU of
     * decompressed tiles and its prefetch queue, with their statistics
     * (mla_state_stats), for the passes run through this state. */
    struct MlaState *mla;
} ForwardState;

int forward_state_init(ForwardState *s, const Config *c, size_t max_rows, int keep_probs, Err *e);
void forward_state_free(ForwardState *s);

/* Run n_new tokens of each of n_seqs sequences.
 *   tokens: [n_seqs][n_new] token ids, each < vocab
 *   pos0:   absolute position of tokens[.][0] (0 when cache is NULL); a
 *           cache that shifts (kv_shifts) runs them at pos0 minus its
 *           kv_pos_shift, the same for every sequence, which must stay
 *           below max_seq_len (pos0 need not)
 *   logits: [n_seqs][vocab], the last token of each sequence; NULL: none
 *           (a pass whose logits nobody reads, such as a prefill's early chunk)
 * Counts its work into ctr (tokens_projected: n_seqs * n_new rows). */
int model_forward(const Model *m, ForwardState *s, KvCache *cache, const int *tokens, size_t n_seqs,
                  size_t n_new, size_t pos0, float *logits, Counters *ctr, Err *e);
/* The same with group b in cache sequence slots[b] (NULL: b), for callers
 * that keep sequences in slots of their own choosing (a serving loop). */
int model_forward_slots(const Model *m, ForwardState *s, KvCache *cache, const size_t *slots, const int *tokens,
                        size_t n_seqs, size_t n_new, size_t pos0, float *logits, Counters *ctr, Err *e);

#endif
