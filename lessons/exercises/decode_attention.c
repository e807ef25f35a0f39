/* decode_attention.c: one cached decode step of self-attention (lesson 8).
 * Fill in the TODOs; check it with `kvscope lesson check 8 --file THIS_FILE`.
 * The checker runs your step on random model shapes, token after token, and
 * compares every output with the engine's; when they differ it tells you
 * which mistake your output matches (a RoPE position, the head mapping, a
 * mask, ...). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode_attention.h"
#include "kernels/kernels.h"

int decode_cache_init(DecodeCache *c, size_t n_heads, size_t n_kv_heads, size_t head_dim, size_t max_seq,
                      double rope_theta)
{
    *c = (DecodeCache){ .n_heads = n_heads, .n_kv_heads = n_kv_heads, .head_dim = head_dim,
                        .max_seq = max_seq, .rope_theta = rope_theta };
    c->k = calloc(n_kv_heads * max_seq * head_dim, sizeof(float));
    c->v = calloc(n_kv_heads * max_seq * head_dim, sizeof(float));
    if (!c->k || !c->v) {
        decode_cache_free(c);
        return -1;
    }
    return 0;
}

void decode_cache_free(DecodeCache *c)
{
    free(c->k);
    free(c->v);
    c->k = c->v = NULL;
}

void decode_rope(float *x, size_t n_heads, size_t head_dim, size_t pos, double theta)
{
    rope_ref(x, n_heads, head_dim, pos, theta, NULL);
}

void decode_step(DecodeCache *c, size_t pos, float *q, const float *k, const float *v, float *out)
{
    const size_t H = c->n_heads, Hkv = c->n_kv_heads, D = c->head_dim;
    (void)H;
    (void)Hkv;
    (void)D;
    (void)pos;
    (void)q;
    (void)k;
    (void)v;

    /* TODO 1: RoPE. Rotate the query (all n_heads) and a copy of the new K
     * rows (all n_kv_heads) with decode_rope, at the token's absolute
     * position. Which of q, k, v carry position, and which do not? */

    /* TODO 2: append. Copy the rotated K row and the V row of each KV head j
     * into the cache at position pos, and count the row (c->len). */

    /* TODO 3: attend. For each query head h: its KV head j (groups of
     * H / Hkv neighbours), the scores q_h . K_j[i] / sqrt(D) for every row
     * i held (is any of them in the future?), their softmax, and
     * out_h = sum_i weight_i * V_j[i]. */
    memset(out, 0, c->n_heads * c->head_dim * sizeof(float));
}
