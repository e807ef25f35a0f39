/* decode_layer.c: one layer's cached decode step (lesson 2). Fill in the
 * TODOs; check it with `kvscope lesson check 2 --file THIS_FILE`.
 *
 * The checker embeds a few tokens, runs your decode_layer through every
 * layer of a real model (kvscope's tiny model and the trained kjv-small),
 * token after token from position 0, finishes with the model's final norm
 * and unembedding, and compares the logits and every cached row with the
 * engine's own forward pass. When they differ it tells you which usual
 * mistake gives your numbers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode_layer.h"
#include "kernels/kernels.h"

void layer_rope(float *x, size_t n_heads, size_t head_dim, size_t pos, double theta)
{
    rope_ref(x, n_heads, head_dim, pos, theta, NULL);
}

void decode_layer(const Layer *L, LayerCache *c, size_t pos, float *x)
{
    (void)L;
    (void)c;
    (void)pos;
    (void)x;

    /* TODO 1: h = RMSNorm(x) times attn_norm, then q = Wq h, k = Wk h,
     * v = Wv h (decode_layer.h says how a matrix is stored). */

    /* TODO 2: RoPE at the token's absolute position, on q and k. */

    /* TODO 3: write k and v into the cache at position pos, for every KV
     * head, and count the row in c->len. */

    /* TODO 4: for each query head h, its KV head j = h / (n_heads /
     * n_kv_heads): scores q_h . K_j[i] / sqrt(head_dim) for every row i
     * held, including this token's; their softmax (subtract the largest
     * first); a_h = sum of weight_i * V_j[i]. Then x += Wo a. */

    /* TODO 5: h = RMSNorm(x) times ffn_norm; x += W_down (silu(W_gate h) *
     * W_up h). */
}
