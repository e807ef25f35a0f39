/* backprop.c: the training forward, keeping activations, and the backward
 * pass (backprop.h). Shapes: T tokens, d = d_model, H query heads of hd,
 * KV key/value heads (a group of G = H / KV query heads shares one), f the
 * FFN width, V the vocabulary. Matrices are [out][in], as the engine's. */
#include "train/backprop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What one layer's forward keeps for its backward. */
typedef struct {
    float *x_in;   /* [T][d] the residual stream entering the layer */
    float *xn1;    /* [T][d] rmsnorm(x_in) * attn_norm */
    float *rms1;   /* [T] 1 / rms(x_in) */
    float *q;      /* [T][H * hd] after RoPE */
    float *k, *v;  /* [T][KV * hd], K after RoPE */
    float *p;      /* [H][T][T] attention weights (row t: positions 0..t) */
    float *o;      /* [T][H * hd] attention output */
    float *x_mid;  /* [T][d] after the attention's residual add */
    float *xn2;    /* [T][d] rmsnorm(x_mid) * ffn_norm */
    float *rms2;   /* [T] */
    float *gate, *up, *h; /* [T][f]; h = silu(gate) * up */
} LayerAct;

struct BackpropState {
    Config c;
    size_t max_len, len;
    const int *tokens;  /* [len + 1] of the last forward */
    LayerAct *act;      /* [n_layers] */
    float *x_last;      /* [T][d] the stream after the last layer */
    float *xnf, *rmsf;  /* [T][d], [T] the final norm */
    float *probs;       /* [T][V] softmax of the logits */
    /* backward scratch */
    float *dx, *dxb;    /* [T][d] */
    float *dq, *dk, *dv, *datt; /* [T][qd], [T][kvd] x 2, [T][qd] */
    float *dgate, *dup, *dh;    /* [T][f] */
    float *dlogits;     /* [T][V] */
    float *dp;          /* [T] */
    float *tmp_a, *tmp_b, *col; /* transposes [max(V, f, qd, d)][T] x 2, and a column [max] */
    float *arena;
    size_t arena_floats;
    uint64_t flops;     /* floating-point operations of the matmuls and attention so far */
};

int backprop_check_config(const Config *c, Err *e)
{
    if (c->architecture != ARCH_DECODER || c->attention != ATTN_GQA)
        return err_set(e, ERR_USAGE, "train: model '%s' is not a decoder with GQA attention", c->name);
    if (c->shared_layers)
        return err_set(e, ERR_USAGE, "train: model '%s' shares its layers' weights; train one that does not",
                       c->name);
    if (c->sliding_window)
        return err_set(e, ERR_USAGE, "train: model '%s' has a sliding window; the trainer attends to all", c->name);
    return 0;
}

static size_t max4(size_t a, size_t b, size_t c, size_t d)
{
    size_t m = a > b ? a : b;
    m = m > c ? m : c;
    return m > d ? m : d;
}

int backprop_init(BackpropState **out, const Config *c, size_t max_len, Err *e)
{
    *out = NULL;
    const size_t T = max_len, d = c->d_model, qd = config_q_dim(c), kvd = config_kv_dim(c), f = c->ffn_dim;
    const size_t H = c->n_heads, V = c->vocab, L = c->n_layers, wide = max4(V, f, qd, d);
    const size_t per_layer = 5 * T * d + 2 * T + 2 * T * qd + 2 * T * kvd + H * T * T + 3 * T * f;
    const size_t total = L * per_layer + 2 * T * d + T + 2 * T * V + 2 * T * d + 2 * T * qd + 2 * T * kvd +
                         3 * T * f + T + 2 * wide * T + wide;
    BackpropState *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(e, ERR_RUNTIME, "out of memory");
    s->c = *c;
    s->max_len = T;
    s->act = calloc(L, sizeof *s->act);
    s->arena = malloc(total * sizeof(float));
    s->arena_floats = total;
    if (!s->act || !s->arena) {
        backprop_free(s);
        return err_set(e, ERR_RUNTIME, "out of memory for %zu MiB of training activations",
                       total * sizeof(float) >> 20);
    }
    float *p = s->arena;
#define TAKE(n) (p += (n), p - (n))
    for (size_t l = 0; l < L; l++) {
        LayerAct *a = &s->act[l];
        a->x_in = TAKE(T * d), a->xn1 = TAKE(T * d), a->rms1 = TAKE(T);
        a->q = TAKE(T * qd), a->k = TAKE(T * kvd), a->v = TAKE(T * kvd), a->p = TAKE(H * T * T);
        a->o = TAKE(T * qd), a->x_mid = TAKE(T * d), a->xn2 = TAKE(T * d), a->rms2 = TAKE(T);
        a->gate = TAKE(T * f), a->up = TAKE(T * f), a->h = TAKE(T * f);
    }
    s->x_last = TAKE(T * d), s->xnf = TAKE(T * d), s->rmsf = TAKE(T), s->probs = TAKE(T * V);
    s->dx = TAKE(T * d), s->dxb = TAKE(T * d), s->dq = TAKE(T * qd), s->dk = TAKE(T * kvd), s->dv = TAKE(T * kvd);
    s->datt = TAKE(T * qd), s->dgate = TAKE(T * f), s->dup = TAKE(T * f), s->dh = TAKE(T * f);
    s->dlogits = TAKE(T * V), s->dp = TAKE(T);
    s->tmp_a = TAKE(wide * T), s->tmp_b = TAKE(wide * T), s->col = TAKE(wide);
#undef TAKE
    *out = s;
    return 0;
}

void backprop_free(BackpropState *s)
{
    if (!s)
        return;
    free(s->act);
    free(s->arena);
    free(s);
}

/* --- forward ---------------------------------------------------------------- */

/* out = rmsnorm(x) * w by the engine's kernel; inv[t] = 1 / rms(x[t]). */
static void norm_fwd(const Kernels *k, float *out, float *inv, const float *x, const float *w, size_t T, size_t d,
                     float eps)
{
    Counters none = { 0 };
    k->rmsnorm(out, x, w, T, d, eps, &none);
    for (size_t t = 0; t < T; t++) {
        float ss = 0.0f;
        for (size_t i = 0; i < d; i++)
            ss += x[t * d + i] * x[t * d + i];
        inv[t] = 1.0f / sqrtf(ss / (float)d + eps);
    }
}

static void matmul(BackpropState *s, const Kernels *k, float *y, const float *x, const float *w, size_t n, size_t in,
                   size_t out)
{
    Counters none = { 0 };
    k->matmul(y, x, w, n, in, out, &s->flops, &none);
}

/* Multiply-adds of q.k and p.v over the causal pairs, 2 FLOPs each. */
static uint64_t attention_flops(const Config *c, size_t T)
{
    return 2 * 2 * (uint64_t)c->n_heads * c->head_dim * (uint64_t)(T * (T + 1) / 2);
}

/* Causal attention of every head: p [H][T][T], o [T][H * hd]. */
static void attention_fwd(const Config *c, LayerAct *a, size_t T)
{
    const size_t H = c->n_heads, hd = c->head_dim, G = H / c->n_kv_heads, qd = H * hd, kvd = c->n_kv_heads * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    memset(a->o, 0, T * qd * sizeof(float));
    for (size_t h = 0; h < H; h++) {
        const size_t kh = h / G;
        for (size_t t = 0; t < T; t++) {
            const float *q = a->q + t * qd + h * hd;
            float *p = a->p + (h * T + t) * T, mx = -INFINITY;
            for (size_t j = 0; j <= t; j++) {
                const float *kr = a->k + j * kvd + kh * hd;
                float s = 0.0f;
                for (size_t i = 0; i < hd; i++)
                    s += q[i] * kr[i];
                p[j] = s * scale;
                mx = p[j] > mx ? p[j] : mx;
            }
            float sum = 0.0f;
            for (size_t j = 0; j <= t; j++)
                sum += p[j] = expf(p[j] - mx);
            float *o = a->o + t * qd + h * hd;
            for (size_t j = 0; j <= t; j++) {
                p[j] /= sum;
                const float *vr = a->v + j * kvd + kh * hd;
                for (size_t i = 0; i < hd; i++)
                    o[i] += p[j] * vr[i];
            }
            for (size_t j = t + 1; j < T; j++)
                p[j] = 0.0f;
        }
    }
}

static void layer_fwd(const Model *m, BackpropState *s, const LayerWeights *w, LayerAct *a, float *x, size_t T)
{
    const Config *c = &m->cfg;
    const Kernels *k = m->kern;
    const size_t d = c->d_model, qd = config_q_dim(c), kvd = config_kv_dim(c), f = c->ffn_dim;
    Counters none = { 0 };
    memcpy(a->x_in, x, T * d * sizeof(float));
    norm_fwd(k, a->xn1, a->rms1, x, w->attn_norm, T, d, (float)c->norm_eps);
    matmul(s, k, a->q, a->xn1, w->wq, T, d, qd);
    matmul(s, k, a->k, a->xn1, w->wk, T, d, kvd);
    matmul(s, k, a->v, a->xn1, w->wv, T, d, kvd);
    for (size_t t = 0; t < T; t++) {
        k->rope(a->q + t * qd, c->n_heads, c->head_dim, t, c->rope_theta, &none);
        k->rope(a->k + t * kvd, c->n_kv_heads, c->head_dim, t, c->rope_theta, &none);
    }
    attention_fwd(c, a, T);
    s->flops += attention_flops(c, T);
    matmul(s, k, a->x_mid, a->o, w->wo, T, qd, d);
    for (size_t i = 0; i < T * d; i++)
        a->x_mid[i] += x[i];
    norm_fwd(k, a->xn2, a->rms2, a->x_mid, w->ffn_norm, T, d, (float)c->norm_eps);
    matmul(s, k, a->gate, a->xn2, w->w_gate, T, d, f);
    matmul(s, k, a->up, a->xn2, w->w_up, T, d, f);
    k->swiglu(a->h, a->gate, a->up, T * f, &none);
    matmul(s, k, x, a->h, w->w_down, T, f, d);
    for (size_t i = 0; i < T * d; i++)
        x[i] += a->x_mid[i];
}

double backprop_forward(const Model *m, BackpropState *s, const int *tokens, size_t len, float *logits)
{
    const Config *c = &m->cfg;
    const size_t T = len, d = c->d_model, V = c->vocab;
    s->len = T;
    s->tokens = tokens;
    float *x = s->x_last;
    for (size_t t = 0; t < T; t++)
        memcpy(x + t * d, m->embed + (size_t)tokens[t] * d, d * sizeof(float));
    for (size_t l = 0; l < c->n_layers; l++)
        layer_fwd(m, s, model_layer(m, l), &s->act[l], x, T);
    norm_fwd(m->kern, s->xnf, s->rmsf, x, m->final_norm, T, d, (float)c->norm_eps);
    matmul(s, m->kern, s->probs, s->xnf, m->unembed, T, d, V);
    if (logits)
        memcpy(logits, s->probs, T * V * sizeof(float));
    double loss = 0;
    for (size_t t = 0; t < T; t++) { /* softmax in place, and -ln p of the next token */
        float *p = s->probs + t * V, mx = p[0];
        for (size_t i = 1; i < V; i++)
            mx = p[i] > mx ? p[i] : mx;
        double sum = 0;
        for (size_t i = 0; i < V; i++)
            sum += p[i] = expf(p[i] - mx);
        loss += log(sum) - log((double)p[tokens[t + 1]]);
        for (size_t i = 0; i < V; i++)
            p[i] = (float)(p[i] / sum);
    }
    return loss / (double)T;
}

/* --- backward --------------------------------------------------------------- */

/* a [n][m] -> out [m][n] */
static void transpose(float *out, const float *a, size_t n, size_t m)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++)
            out[j * n + i] = a[i * m + j];
}

/* y [T][out] = x [T][in] W^T: dx [T][in] += dy W (when dx), dW [out][in] += dy^T x.
 * Through the f32 dot and axpy kernels, with dy and x transposed once so
 * each call works on whole rows. */
static void matmul_bwd(BackpropState *s, const FormatOps *f32, float *dx, float *dW, const float *dy, const float *x,
                       const float *W, size_t T, size_t in, size_t out)
{
    float *dyT = s->tmp_a, *xT = s->tmp_b, *col = s->col;
    s->flops += (dx ? 4 : 2) * (uint64_t)T * in * out;
    transpose(dyT, dy, T, out);
    if (dx)
        for (size_t o = 0; o < out; o++) /* dx[t] += dy[t][o] * W[o], every t at once */
            f32->axpy(dx, dyT + o * T, T, W + o * in, in);
    transpose(xT, x, T, in);
    for (size_t i = 0; i < in; i++) { /* column i of dW: dy^T[o] . x^T[i] for every o */
        f32->dot(col, dyT, out, xT + i * T, T);
        for (size_t o = 0; o < out; o++)
            dW[o * in + i] += col[o];
    }
}

/* y = x * inv * w: dw += sum_t dy x inv; dx += inv w dy - x inv^3 / d sum(dy w x). */
static void norm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *inv, size_t T,
                     size_t d)
{
    for (size_t t = 0; t < T; t++) {
        const float *xr = x + t * d, *dyr = dy + t * d;
        const float r = inv[t];
        float dot = 0.0f;
        for (size_t i = 0; i < d; i++) {
            dot += dyr[i] * w[i] * xr[i];
            dw[i] += dyr[i] * xr[i] * r;
        }
        const float k = dot * r * r * r / (float)d;
        for (size_t i = 0; i < d; i++)
            dx[t * d + i] += r * w[i] * dyr[i] - k * xr[i];
    }
}

/* The gradient of a RoPE'd vector back through the rotation: rotate by the
 * opposite angle (the same pairs, the same angles as rope_ref). */
static void rope_bwd(float *g, size_t n_heads, size_t hd, size_t pos, double theta)
{
    for (size_t h = 0; h < n_heads; h++) {
        float *v = g + h * hd;
        for (size_t i = 0; i < hd; i += 2) {
            double angle = (double)pos * pow(theta, -(double)i / (double)hd);
            float co = (float)cos(angle), si = (float)sin(angle), a = v[i], b = v[i + 1];
            v[i] = a * co + b * si;
            v[i + 1] = -a * si + b * co;
        }
    }
}

/* d o (s->datt) back through the softmax attention into s->dq, s->dk, s->dv. */
static void attention_bwd(BackpropState *s, const LayerAct *a, size_t T)
{
    const Config *c = &s->c;
    const size_t H = c->n_heads, hd = c->head_dim, G = H / c->n_kv_heads, qd = H * hd, kvd = c->n_kv_heads * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    memset(s->dq, 0, T * qd * sizeof(float));
    memset(s->dk, 0, T * kvd * sizeof(float));
    memset(s->dv, 0, T * kvd * sizeof(float));
    for (size_t h = 0; h < H; h++) {
        const size_t kh = h / G;
        for (size_t t = 0; t < T; t++) {
            const float *p = a->p + (h * T + t) * T, *d_o = s->datt + t * qd + h * hd, *q = a->q + t * qd + h * hd;
            float *dp = s->dp, pdp = 0.0f;
            for (size_t j = 0; j <= t; j++) { /* dp = do . v; dv += p do */
                const float *vr = a->v + j * kvd + kh * hd;
                float *dvr = s->dv + j * kvd + kh * hd, acc = 0.0f;
                for (size_t i = 0; i < hd; i++) {
                    acc += d_o[i] * vr[i];
                    dvr[i] += p[j] * d_o[i];
                }
                dp[j] = acc;
                pdp += p[j] * acc;
            }
            float *dqr = s->dq + t * qd + h * hd;
            for (size_t j = 0; j <= t; j++) { /* the softmax's backward, then the scaled dot's */
                const float ds = p[j] * (dp[j] - pdp) * scale;
                const float *kr = a->k + j * kvd + kh * hd;
                float *dkr = s->dk + j * kvd + kh * hd;
                for (size_t i = 0; i < hd; i++) {
                    dqr[i] += ds * kr[i];
                    dkr[i] += ds * q[i];
                }
            }
        }
    }
}

/* s->dx (d loss / d layer output) back through layer l into s->dx (d loss /
 * d layer input), the layer's weight gradients into gw. */
static void layer_bwd(const Model *m, BackpropState *s, const LayerWeights *w, LayerWeights *gw, const LayerAct *a,
                      size_t T)
{
    const Config *c = &m->cfg;
    const FormatOps *f32 = &m->kern->codec[FMT_F32];
    const size_t d = c->d_model, qd = config_q_dim(c), kvd = config_kv_dim(c), f = c->ffn_dim;
    /* the FFN: x_out = x_mid + W_down (silu(gate) * up) */
    memset(s->dh, 0, T * f * sizeof(float));
    matmul_bwd(s, f32, s->dh, gw->w_down, s->dx, a->h, w->w_down, T, f, d);
    for (size_t i = 0; i < T * f; i++) {
        const float g = a->gate[i], sg = 1.0f / (1.0f + expf(-g));
        s->dup[i] = s->dh[i] * g * sg;
        s->dgate[i] = s->dh[i] * a->up[i] * sg * (1.0f + g * (1.0f - sg));
    }
    memset(s->dxb, 0, T * d * sizeof(float));
    matmul_bwd(s, f32, s->dxb, gw->w_gate, s->dgate, a->xn2, w->w_gate, T, d, f);
    matmul_bwd(s, f32, s->dxb, gw->w_up, s->dup, a->xn2, w->w_up, T, d, f);
    norm_bwd(s->dx, gw->ffn_norm, s->dxb, a->x_mid, w->ffn_norm, a->rms2, T, d); /* s->dx is now d x_mid */
    /* attention: x_mid = x_in + W_o attention(rope(W_q xn1), rope(W_k xn1), W_v xn1) */
    memset(s->datt, 0, T * qd * sizeof(float));
    matmul_bwd(s, f32, s->datt, gw->wo, s->dx, a->o, w->wo, T, qd, d);
    attention_bwd(s, a, T);
    s->flops += 2 * attention_flops(c, T); /* dp and dv, then dq and dk */
    for (size_t t = 0; t < T; t++) {
        rope_bwd(s->dq + t * qd, c->n_heads, c->head_dim, t, c->rope_theta);
        rope_bwd(s->dk + t * kvd, c->n_kv_heads, c->head_dim, t, c->rope_theta);
    }
    memset(s->dxb, 0, T * d * sizeof(float));
    matmul_bwd(s, f32, s->dxb, gw->wq, s->dq, a->xn1, w->wq, T, d, qd);
    matmul_bwd(s, f32, s->dxb, gw->wk, s->dk, a->xn1, w->wk, T, d, kvd);
    matmul_bwd(s, f32, s->dxb, gw->wv, s->dv, a->xn1, w->wv, T, d, kvd);
    norm_bwd(s->dx, gw->attn_norm, s->dxb, a->x_in, w->attn_norm, a->rms1, T, d); /* d x_in */
}

void backprop_backward(const Model *m, BackpropState *s, Model *grad, float scale)
{
    const Config *c = &m->cfg;
    const size_t T = s->len, d = c->d_model, V = c->vocab;
    const FormatOps *f32 = &m->kern->codec[FMT_F32];
    /* d loss / d logits = (softmax - one-hot) / T */
    const float per = scale / (float)T;
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < V; i++)
            s->dlogits[t * V + i] = per * (s->probs[t * V + i] - (i == (size_t)s->tokens[t + 1] ? 1.0f : 0.0f));
    memset(s->dxb, 0, T * d * sizeof(float));
    matmul_bwd(s, f32, s->dxb, grad->unembed, s->dlogits, s->xnf, m->unembed, T, d, V);
    memset(s->dx, 0, T * d * sizeof(float));
    norm_bwd(s->dx, grad->final_norm, s->dxb, s->x_last, m->final_norm, s->rmsf, T, d);
    for (size_t l = c->n_layers; l-- > 0;)
        layer_bwd(m, s, model_layer(m, l), &grad->layers[l], &s->act[l], T);
    for (size_t t = 0; t < T; t++) {
        float *ge = grad->embed + (size_t)s->tokens[t] * d;
        for (size_t i = 0; i < d; i++)
            ge[i] += s->dx[t * d + i];
    }
}

uint64_t backprop_flops(const BackpropState *s)
{
    return s->flops;
}
