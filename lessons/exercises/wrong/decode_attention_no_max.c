/* decode_attention.c, wrong on purpose (lesson 8): the softmax takes exp(score)
 * without subtracting the largest score first, which overflows once scores
 * reach about 88. The lint proves its check fails and names the mistake. */
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
    const size_t H = c->n_heads, Hkv = c->n_kv_heads, D = c->head_dim, group = H / Hkv;
    const float scale = 1.0f / sqrtf((float)D);

    /* RoPE at the absolute position: q and K carry position, V does not */
    decode_rope(q, H, D, pos, c->rope_theta);
    for (size_t j = 0; j < Hkv; j++) {
        float *krow = c->k + (j * c->max_seq + pos) * D;
        memcpy(krow, k + j * D, D * sizeof(float));
        decode_rope(krow, 1, D, pos, c->rope_theta);
        memcpy(c->v + (j * c->max_seq + pos) * D, v + j * D, D * sizeof(float));
    }
    c->len = pos + 1;

    /* every row held is at or before pos: no mask in a decode step */
    float *w = malloc(c->len * sizeof(float));
    if (!w)
        return;
    for (size_t h = 0; h < H; h++) {
        const size_t j = h / group;
        const float *qh = q + h * D, *K = c->k + j * c->max_seq * D, *V = c->v + j * c->max_seq * D;
        float mx = -INFINITY, sum = 0.0f;
        for (size_t i = 0; i < c->len; i++) {
            float s = 0.0f;
            for (size_t d = 0; d < D; d++)
                s += qh[d] * K[i * D + d];
            w[i] = s * scale;
            mx = w[i] > mx ? w[i] : mx;
        }
        for (size_t i = 0; i < c->len; i++)
            sum += w[i] = expf(w[i]); /* WRONG: the largest score is not subtracted */
        float *o = out + h * D;
        memset(o, 0, D * sizeof(float));
        for (size_t i = 0; i < c->len; i++)
            for (size_t d = 0; d < D; d++)
                o[d] += w[i] / sum * V[i * D + d];
    }
    free(w);
}
