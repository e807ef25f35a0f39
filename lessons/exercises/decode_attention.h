/* decode_attention.h: one cached decode step of self-attention, written by
 * hand (lesson 8): the cache append, RoPE at the absolute position, the GQA
 * head mapping, and attention over every cached row with no mask.
 *
 * One layer, one sequence. The cache holds, for each KV head j, the K rows
 * (after RoPE) and the V rows (as projected: V is never rotated) of
 * positions 0 .. len-1:
 *
 *   K row of position p, KV head j:  c->k + (j * max_seq + p) * head_dim
 *   V row of position p, KV head j:  c->v + (j * max_seq + p) * head_dim
 *
 * n_heads query heads share n_kv_heads KV heads in groups of
 * n_heads / n_kv_heads neighbours: query heads 0 .. group-1 read KV head 0,
 * the next group KV head 1, and so on. */
#ifndef KVSCOPE_EXERCISE_DECODE_ATTENTION_H
#define KVSCOPE_EXERCISE_DECODE_ATTENTION_H

#include <stddef.h>

typedef struct {
    size_t n_heads, n_kv_heads, head_dim; /* head_dim is even */
    size_t max_seq;                       /* positions the buffers hold */
    double rope_theta;                    /* RoPE's base, 10000 in most models */
    float *k, *v;                         /* [n_kv_heads][max_seq][head_dim] each */
    size_t len;                           /* positions held: 0 .. len-1 */
} DecodeCache;

/* Allocate empty buffers (given). Returns 0, or -1 when memory runs out. */
int decode_cache_init(DecodeCache *c, size_t n_heads, size_t n_kv_heads, size_t head_dim, size_t max_seq,
                      double rope_theta);
void decode_cache_free(DecodeCache *c);

/* Rotate the n_heads vectors of x ([n_heads][head_dim]) by RoPE at absolute
 * position pos: each pair (x[2i], x[2i+1]) turns by the angle
 * pos * theta^(-2i / head_dim). Given: it is the library's rope_ref. */
void decode_rope(float *x, size_t n_heads, size_t head_dim, size_t pos, double theta);

/* The step of the token at absolute position `pos` (== c->len: the cache
 * holds positions 0 .. pos-1 on entry):
 *   q [n_heads][head_dim]     its query, before RoPE (may be overwritten)
 *   k, v [n_kv_heads][head_dim]  its K and V rows, before RoPE (read only)
 *   out [n_heads][head_dim]   softmax(q_h . K_j^T / sqrt(head_dim)) V_j for
 *                             each query head h and its KV head j, over the
 *                             pos + 1 rows held after the append
 * Append the new rows at position pos, then attend. */
void decode_step(DecodeCache *c, size_t pos, float *q, const float *k, const float *v, float *out);

#endif
