/* decode_layer.h: one transformer layer's cached decode step, written by
 * hand (lesson 2): the whole layer, as kvscope's models run it.
 *
 * The layer, for the hidden state x [d_model] of the token at absolute
 * position pos:
 *
 *   h = RMSNorm(x) * attn_norm        RMSNorm(x) = x / sqrt(mean(x^2) + norm_eps)
 *   q = Wq h, k = Wk h, v = Wv h      q [n_heads][head_dim], k, v [n_kv_heads][head_dim]
 *   RoPE on q and k at pos            (layer_rope; v carries no position)
 *   append k, v to the cache at pos   the cache then holds positions 0 .. pos
 *   a_h = softmax(q_h . K_j / sqrt(head_dim)) V_j over rows 0 .. pos,
 *                                     j = h / (n_heads / n_kv_heads)
 *   x = x + Wo a                      a [n_heads * head_dim]
 *   h = RMSNorm(x) * ffn_norm
 *   x = x + W_down (silu(W_gate h) * W_up h)     silu(g) = g / (1 + exp(-g))
 *
 * A matrix W [rows][cols] is stored row after row: (W h)[r] = sum over c of
 * W[r * cols + c] * h[c]. */
#ifndef KVSCOPE_EXERCISE_DECODE_LAYER_H
#define KVSCOPE_EXERCISE_DECODE_LAYER_H

#include <stddef.h>

typedef struct {
    size_t d_model, n_heads, n_kv_heads, head_dim, ffn_dim;
    float norm_eps;
    double rope_theta;
    const float *attn_norm;     /* [d_model] */
    const float *wq;            /* [n_heads * head_dim][d_model] */
    const float *wk, *wv;       /* [n_kv_heads * head_dim][d_model] */
    const float *wo;            /* [d_model][n_heads * head_dim] */
    const float *ffn_norm;      /* [d_model] */
    const float *w_gate, *w_up; /* [ffn_dim][d_model] */
    const float *w_down;        /* [d_model][ffn_dim] */
} Layer;

/* The layer's cache: K rows (after RoPE) and V rows of positions 0 .. len-1,
 *   K row of position p, KV head j:  k + (j * max_seq + p) * head_dim
 *   V row of position p, KV head j:  v + (j * max_seq + p) * head_dim */
typedef struct {
    float *k, *v; /* [n_kv_heads][max_seq][head_dim] each */
    size_t max_seq;
    size_t len;   /* positions held */
} LayerCache;

/* Rotate the n_heads vectors of x ([n_heads][head_dim]) by RoPE at position
 * pos. Given: the library's rope_ref. */
void layer_rope(float *x, size_t n_heads, size_t head_dim, size_t pos, double theta);

/* The decode step of layer L for the token at position pos (== c->len: the
 * cache holds positions 0 .. pos-1 on entry, and pos < c->max_seq). x
 * [d_model] is the token's hidden state; on return it is the layer's output.
 * The cache gains the token's K and V rows at pos, and c->len is pos + 1. */
void decode_layer(const Layer *L, LayerCache *c, size_t pos, float *x);

#endif
