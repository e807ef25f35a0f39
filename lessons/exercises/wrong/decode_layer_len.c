/* decode_layer.c, wrong on purpose (lesson 2): the rows are written and
 * attended as they should be, but the cache's length stays where it was: the
 * appended row is not counted, and a caller that reads c->len (the next
 * layer's step, a rollback, the memory count) sees one row too few. The lint
 * proves its check fails and names the mistake. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode_layer.h"
#include "kernels/kernels.h"

void layer_rope(float *x, size_t n_heads, size_t head_dim, size_t pos, double theta)
{
    rope_ref(x, n_heads, head_dim, pos, theta, NULL);
}

/* y [rows] = W [rows][cols] x [cols] */
static void matvec(float *y, const float *w, const float *x, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        float s = 0.0f;
        for (size_t i = 0; i < cols; i++)
            s += w[r * cols + i] * x[i];
        y[r] = s;
    }
}

/* out [d] = x / rms(x) * gain */
static void rmsnorm(float *out, const float *x, const float *gain, size_t d, float eps)
{
    float ss = 0.0f;
    for (size_t i = 0; i < d; i++)
        ss += x[i] * x[i];
    const float inv = 1.0f / sqrtf(ss / (float)d + eps);
    for (size_t i = 0; i < d; i++)
        out[i] = x[i] * inv * gain[i];
}

void decode_layer(const Layer *L, LayerCache *c, size_t pos, float *x)
{
    const size_t d = L->d_model, H = L->n_heads, Hkv = L->n_kv_heads, D = L->head_dim, F = L->ffn_dim;
    const size_t group = H / Hkv, n = pos + 1; /* rows attended: the cached ones and this token's */
    float *h = malloc(d * sizeof *h), *q = malloc(H * D * sizeof *q), *k = malloc(Hkv * D * sizeof *k);
    float *v = malloc(Hkv * D * sizeof *v), *a = malloc(H * D * sizeof *a), *o = malloc(d * sizeof *o);
    float *g = malloc(F * sizeof *g), *u = malloc(F * sizeof *u), *s = malloc(n * sizeof *s);
    if (!h || !q || !k || !v || !a || !o || !g || !u || !s)
        goto done; /* out of memory: x is left as it was */

    /* attention: norm, projections, RoPE on q and k */
    rmsnorm(h, x, L->attn_norm, d, L->norm_eps);
    matvec(q, L->wq, h, H * D, d);
    matvec(k, L->wk, h, Hkv * D, d);
    matvec(v, L->wv, h, Hkv * D, d);
    layer_rope(q, H, D, pos, L->rope_theta);
    layer_rope(k, Hkv, D, pos, L->rope_theta);

    /* append first: the token attends to itself too */
    for (size_t j = 0; j < Hkv; j++) {
        memcpy(c->k + (j * c->max_seq + pos) * D, k + j * D, D * sizeof(float));
        memcpy(c->v + (j * c->max_seq + pos) * D, v + j * D, D * sizeof(float));
    }
    c->len = pos;

    const float scale = 1.0f / sqrtf((float)D);
    for (size_t hh = 0; hh < H; hh++) {
        const size_t j = hh / group;
        const float *qh = q + hh * D;
        float mx = -INFINITY, sum = 0.0f;
        for (size_t i = 0; i < n; i++) {
            const float *kr = c->k + (j * c->max_seq + i) * D;
            float dot = 0.0f;
            for (size_t t = 0; t < D; t++)
                dot += qh[t] * kr[t];
            s[i] = dot * scale;
            mx = fmaxf(mx, s[i]);
        }
        for (size_t i = 0; i < n; i++)
            sum += s[i] = expf(s[i] - mx);
        float *ah = a + hh * D;
        memset(ah, 0, D * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            const float *vr = c->v + (j * c->max_seq + i) * D, w = s[i] / sum;
            for (size_t t = 0; t < D; t++)
                ah[t] += w * vr[t];
        }
    }
    matvec(o, L->wo, a, d, H * D);
    for (size_t i = 0; i < d; i++)
        x[i] += o[i];

    /* the feed-forward block: SwiGLU */
    rmsnorm(h, x, L->ffn_norm, d, L->norm_eps);
    matvec(g, L->w_gate, h, F, d);
    matvec(u, L->w_up, h, F, d);
    for (size_t i = 0; i < F; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    matvec(o, L->w_down, g, d, F);
    for (size_t i = 0; i < d; i++)
        x[i] += o[i];
done:
    free(h), free(q), free(k), free(v), free(a), free(o), free(g), free(u), free(s);
}
