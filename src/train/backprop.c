/* backprop.c: the training forward, keeping activations, and the backward
 * pass (backprop.h). Shapes: T tokens, d = d_model, H query heads of hd,
 * KV key/value heads (a group of G = H / KV query heads shares one), f the
 * FFN width, V the vocabulary. Matrices are [out][in], as the engine's. */
#include "train/backprop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/pool.h"

/* What one layer's forward keeps for its backward. */
typedef struct {
    float *x_in;   /* [T][d] the residual stream entering the layer */
    float *xn1;    /* [T][d] rmsnorm(x_in) * attn_norm */
    float *rms1;   /* [T] 1 / rms(x_in) */
    float *q;      /* [T][H * hd] after RoPE */
    float *k, *v;  /* [T][KV * hd], K after RoPE */
    float *p;      /* [H][T][T] attention weights (row t: positions 0..t, zeros after) */
    float *psink;  /* [H][T] the learnt sink's weight in row t (attn_sink; the rows' sum to 1 minus it) */
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
    double *row_loss;   /* [T] -ln p of each next token */
    /* backward scratch */
    float *dx, *dxb;    /* [T][d] */
    float *dq, *dk, *dv, *datt; /* [T][qd], [T][kvd] x 2, [T][qd] */
    float *dgate, *dup, *dh;    /* [T][f] */
    float *dlogits;     /* [T][V] */
    float *ds;          /* [H][T][T] d scores (d p first) */
    float *kvt;         /* [KV][hd][T] K (forward) or V (backward) transposed, per KV head */
    float *wt;          /* [3 * d * wide] weights transposed, [in][out], for the forward's products */
    float *rope_cos, *rope_sin; /* [T][hd] RoPE's angles per position, each twice (rope_tables) */
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
    const size_t H = c->n_heads, V = c->vocab, L = c->n_layers, hd = c->head_dim, wide = max4(V, f, qd, d);
    const size_t sink_rows = c->attn_sink ? H * T : 0; /* none without sinks: the others' layout stays as it was */
    const size_t per_layer = 5 * T * d + 2 * T + 2 * T * qd + 2 * T * kvd + H * T * T + sink_rows + 3 * T * f;
    const size_t total = L * per_layer + 2 * T * d + T + 2 * T * V + 2 * T * d + 2 * T * qd + 2 * T * kvd +
                         3 * T * f + H * T * T + kvd * T + 3 * d * wide + 2 * T * hd;
    BackpropState *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(e, ERR_RUNTIME, "out of memory");
    s->c = *c;
    s->max_len = T;
    s->act = calloc(L, sizeof *s->act);
    s->row_loss = calloc(T, sizeof *s->row_loss);
    s->arena = malloc(total * sizeof(float));
    s->arena_floats = total;
    if (!s->act || !s->row_loss || !s->arena) {
        backprop_free(s);
        return err_set(e, ERR_RUNTIME, "out of memory for %zu MiB of training activations",
                       total * sizeof(float) >> 20);
    }
    float *p = s->arena;
#define TAKE(n) (p += (n), p - (n))
    for (size_t l = 0; l < L; l++) {
        LayerAct *a = &s->act[l];
        a->x_in = TAKE(T * d), a->xn1 = TAKE(T * d), a->rms1 = TAKE(T);
        a->q = TAKE(T * qd), a->k = TAKE(T * kvd), a->v = TAKE(T * kvd), a->p = TAKE(H * T * T), a->psink = TAKE(sink_rows);
        a->o = TAKE(T * qd), a->x_mid = TAKE(T * d), a->xn2 = TAKE(T * d), a->rms2 = TAKE(T);
        a->gate = TAKE(T * f), a->up = TAKE(T * f), a->h = TAKE(T * f);
    }
    s->x_last = TAKE(T * d), s->xnf = TAKE(T * d), s->rmsf = TAKE(T), s->probs = TAKE(T * V);
    s->dx = TAKE(T * d), s->dxb = TAKE(T * d), s->dq = TAKE(T * qd), s->dk = TAKE(T * kvd), s->dv = TAKE(T * kvd);
    s->datt = TAKE(T * qd), s->dgate = TAKE(T * f), s->dup = TAKE(T * f), s->dh = TAKE(T * f);
    s->dlogits = TAKE(T * V), s->ds = TAKE(H * T * T), s->kvt = TAKE(kvd * T), s->wt = TAKE(3 * d * wide);
    s->rope_cos = TAKE(T * hd), s->rope_sin = TAKE(T * hd);
#undef TAKE
    for (size_t t = 0; t < T; t++) /* the angles of rope_ref, in double from the position */
        for (size_t i = 0; i < hd; i += 2) {
            const double angle = (double)t * pow(c->rope_theta, -(double)i / (double)hd);
            s->rope_cos[t * hd + i] = s->rope_cos[t * hd + i + 1] = (float)cos(angle);
            s->rope_sin[t * hd + i] = s->rope_sin[t * hd + i + 1] = (float)sin(angle);
        }
    *out = s;
    return 0;
}

void backprop_free(BackpropState *s)
{
    if (!s)
        return;
    free(s->act);
    free(s->row_loss);
    free(s->arena);
    free(s);
}

/* --- work on the pool -------------------------------------------------------
 * Every piece writes only its own rows (or heads, or columns of a
 * reduction's result), and the kernels give every element the same bytes
 * however the work is cut (kernels.h, GemmFn), so the weights learnt are
 * the same for every thread count. */

static size_t min2(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Rows per piece of n: about four pieces per thread (a thread that falls
 * behind then holds up less), in whole register tiles of 4 rows. */
static size_t piece_rows(size_t n)
{
    const size_t threads = pool_threads();
    if (threads < 2 || n < 8)
        return n ? n : 1;
    size_t r = (n + 4 * threads - 1) / (4 * threads);
    return (r + 3) / 4 * 4;
}

typedef void (*RowsFn)(void *ctx, size_t r0, size_t r1);
typedef struct {
    RowsFn fn;
    void *ctx;
    size_t n, per;
} RowsJob;

static void rows_piece(void *ctx, size_t i)
{
    const RowsJob *j = ctx;
    j->fn(j->ctx, i * j->per, min2((i + 1) * j->per, j->n));
}

/* Floats below which an element-wise step runs on the calling thread: the
 * pool's hand-over would cost more (a small model's norms and RoPE). */
#define PAR_MIN_FLOATS 16384

/* fn(ctx, r0, r1) over [0, n) rows of `width` floats, in pieces side by side. */
static void par_rows(size_t n, size_t width, RowsFn fn, void *ctx)
{
    if (n * width < PAR_MIN_FLOATS) {
        fn(ctx, 0, n);
        return;
    }
    RowsJob j = { fn, ctx, n, piece_rows(n) };
    pool_run((n + j.per - 1) / j.per, rows_piece, &j);
}

/* y (+)= the sum of up to three products of [n][m]: a . b (gemm_nn) or
 * a^T . b (gemm_tn), taken in order for each piece of rows of y. */
enum { PROD_NN, PROD_TN };
typedef struct {
    int kind;
    float *y;
    size_t ldy, n, m, n_terms;
    struct {
        const float *a, *b;
        size_t lda, ldb, k;
    } t[3];
} Prod;

/* Products computed side by side, each cut into pieces of rows. */
#define STAGE_MAX 4
typedef struct {
    const Kernels *kern;
    Prod p[STAGE_MAX];
    size_t n, per[STAGE_MAX], first[STAGE_MAX + 1]; /* rows a piece, first piece of each product */
} Stage;

static Prod *stage_add(Stage *st, int kind, float *y, size_t ldy, size_t n, size_t m)
{
    Prod *p = &st->p[st->n++];
    *p = (Prod){ .kind = kind, .y = y, .ldy = ldy, .n = n, .m = m };
    return p;
}

static void prod_term(Prod *p, const float *a, size_t lda, const float *b, size_t ldb, size_t k)
{
    p->t[p->n_terms].a = a, p->t[p->n_terms].lda = lda;
    p->t[p->n_terms].b = b, p->t[p->n_terms].ldb = ldb, p->t[p->n_terms].k = k;
    p->n_terms++;
}

static void stage_piece(void *ctx, size_t i)
{
    const Stage *st = ctx;
    size_t j = 0;
    while (i >= st->first[j + 1])
        j++;
    const Prod *p = &st->p[j];
    const size_t r0 = (i - st->first[j]) * st->per[j], r1 = min2(r0 + st->per[j], p->n);
    const GemmFn fn = p->kind == PROD_NN ? st->kern->gemm_nn : st->kern->gemm_tn;
    for (size_t k = 0; k < p->n_terms; k++) { /* rows of a (nn) or its columns (tn) */
        const float *a = p->kind == PROD_NN ? p->t[k].a + r0 * p->t[k].lda : p->t[k].a + r0;
        fn(p->y + r0 * p->ldy, p->ldy, a, p->t[k].lda, p->t[k].b, p->t[k].ldb, r1 - r0, p->t[k].k, p->m);
    }
}

static void stage_run(Stage *st)
{
    st->first[0] = 0;
    for (size_t j = 0; j < st->n; j++) {
        st->per[j] = piece_rows(st->p[j].n);
        st->first[j + 1] = st->first[j] + (st->p[j].n + st->per[j] - 1) / st->per[j];
    }
    pool_run(st->first[st->n], stage_piece, st);
}

/* Up to three matrices [rows][cols] transposed into [cols][rows], in pieces. */
#define TR_PIECES 8
typedef struct {
    size_t n;
    struct {
        const float *src;
        float *dst;
        size_t rows, cols;
    } m[3];
} Transposes;

static void transpose_piece(void *ctx, size_t i)
{
    const Transposes *tr = ctx;
    const size_t rows = tr->m[i / TR_PIECES].rows, cols = tr->m[i / TR_PIECES].cols;
    const float *src = tr->m[i / TR_PIECES].src;
    float *dst = tr->m[i / TR_PIECES].dst;
    const size_t per = (rows + TR_PIECES - 1) / TR_PIECES, r1 = min2((i % TR_PIECES + 1) * per, rows);
    for (size_t r = (i % TR_PIECES) * per; r < r1; r++)
        for (size_t c = 0; c < cols; c++)
            dst[c * rows + r] = src[r * cols + c];
}

static void transposes_run(Transposes *tr)
{
    pool_run(tr->n * TR_PIECES, transpose_piece, tr);
}

static void transpose_add(Transposes *tr, float *dst, const float *src, size_t rows, size_t cols)
{
    tr->m[tr->n].src = src, tr->m[tr->n].dst = dst, tr->m[tr->n].rows = rows, tr->m[tr->n].cols = cols;
    tr->n++;
}

/* --- forward ---------------------------------------------------------------- */

typedef struct {
    const Kernels *k;
    float *out, *inv;
    const float *x, *w;
    size_t d;
    float eps;
} NormJob;

static void norm_rows(void *ctx, size_t r0, size_t r1)
{
    const NormJob *j = ctx;
    const size_t d = j->d;
    Counters none = { 0 };
    j->k->rmsnorm(j->out + r0 * d, j->x + r0 * d, j->w, r1 - r0, d, j->eps, &none);
    for (size_t t = r0; t < r1; t++) {
        float ss = 0.0f;
        for (size_t i = 0; i < d; i++)
            ss += j->x[t * d + i] * j->x[t * d + i];
        j->inv[t] = 1.0f / sqrtf(ss / (float)d + j->eps);
    }
}

/* out = rmsnorm(x) * w by the engine's kernel; inv[t] = 1 / rms(x[t]). */
static void norm_fwd(const Kernels *k, float *out, float *inv, const float *x, const float *w, size_t T, size_t d,
                     float eps)
{
    NormJob j = { k, out, inv, x, w, d, eps };
    par_rows(T, d, norm_rows, &j);
}

/* y[T][out] = init + x[T][in] W^T, W [out][in]: the weights transposed
 * first (s->wt), so the product is gemm_nn's rows of W^T added. Up to
 * three matrices of the same input at once (q, k, v; gate, up). init is
 * y's own start: zeros, or the residual stream. */
typedef struct {
    float *y;
    const float *w;
    size_t out;
} Proj;

static void project(BackpropState *s, const Kernels *k, const float *x, size_t T, size_t in, Proj *pr, size_t n)
{
    Transposes tr = { 0 };
    float *wt = s->wt;
    Stage st = { .kern = k };
    for (size_t i = 0; i < n; i++) {
        transpose_add(&tr, wt, pr[i].w, pr[i].out, in);
        prod_term(stage_add(&st, PROD_NN, pr[i].y, pr[i].out, T, pr[i].out), x, in, wt, pr[i].out, in);
        wt += in * pr[i].out;
        s->flops += 2 * (uint64_t)T * in * pr[i].out;
    }
    transposes_run(&tr);
    stage_run(&st);
}

/* Multiply-adds of q.k and p.v over the causal pairs, 2 FLOPs each. */
static uint64_t attention_flops(const Config *c, size_t T)
{
    return 2 * 2 * (uint64_t)c->n_heads * c->head_dim * (uint64_t)(T * (T + 1) / 2);
}

/* Query rows a block of attention takes at a time: its scores are computed
 * for keys up to the block's last row, the rest of the causal triangle's
 * corner wasted (a sixteenth at 512 rows). */
#define ATT_ROWS 32

typedef struct {
    const Config *c;
    const Kernels *k;
    BackpropState *s;
    const LayerAct *a;
    float *la_p, *la_o; /* the layer's p and o (forward) */
    size_t T;
    const float *sink;  /* [H] the layer's learnt sink logits, or NULL */
    float *dsink;       /* [H] backward: their gradient, added to */
} AttnJob;

static void rope_rows(void *ctx, size_t r0, size_t r1)
{
    const AttnJob *j = ctx;
    const Config *c = j->c;
    const size_t qd = config_q_dim(c), kvd = config_kv_dim(c);
    Counters none = { 0 };
    for (size_t t = r0; t < r1; t++) {
        j->k->rope(j->a->q + t * qd, c->n_heads, c->head_dim, t, c->rope_theta, &none);
        j->k->rope(j->a->k + t * kvd, c->n_kv_heads, c->head_dim, t, c->rope_theta, &none);
    }
}

/* kvt [KV][hd][T]: K's (or V's) heads transposed, so a head's scores are
 * gemm_nn's rows of them added. */
typedef struct {
    BackpropState *s;
    const float *kv;
    size_t T;
} KvtJob;

static void kv_transpose_head(void *ctx, size_t kh)
{
    const KvtJob *j = ctx;
    const size_t T = j->T, hd = j->s->c.head_dim, kvd = j->s->c.n_kv_heads * hd;
    float *dst = j->s->kvt + kh * hd * T;
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < hd; i++)
            dst[i * T + t] = j->kv[t * kvd + kh * hd + i];
}

static void kv_transpose(BackpropState *s, const float *kv, size_t T)
{
    KvtJob j = { s, kv, T };
    pool_run(s->c.n_kv_heads, kv_transpose_head, &j);
}

/* One head of causal attention: p [T][T], its columns of o [T][qd]. */
static void attention_fwd_head(void *ctx, size_t h)
{
    const AttnJob *j = ctx;
    const Config *c = j->c;
    const size_t T = j->T, hd = c->head_dim, G = c->n_heads / c->n_kv_heads, kh = h / G;
    const size_t qd = config_q_dim(c), kvd = config_kv_dim(c);
    const float scale = 1.0f / sqrtf((float)hd);
    const float *kt = j->s->kvt + kh * hd * T, *vh = j->a->v + kh * hd, *qh = j->a->q + h * hd;
    float *ph = j->la_p + h * T * T, *oh = j->la_o + h * hd;
    for (size_t t0 = 0; t0 < T; t0 += ATT_ROWS) {
        const size_t t1 = min2(t0 + ATT_ROWS, T);
        for (size_t t = t0; t < t1; t++)
            memset(ph + t * T, 0, t1 * sizeof(float));
        j->k->gemm_nn(ph + t0 * T, T, qh + t0 * qd, qd, kt, T, t1 - t0, hd, t1); /* scores q . k */
        for (size_t t = t0; t < t1; t++) {
            float *p = ph + t * T, mx = -INFINITY;
            for (size_t i = 0; i <= t; i++) {
                p[i] *= scale;
                mx = p[i] > mx ? p[i] : mx;
            }
            float sum;
            if (j->sink) { /* one more term in the denominator, no value: p_sink = e^(z - m) / sum */
                const float z = j->sink[h];
                mx = z > mx ? z : mx;
                const float ez = expf(z - mx);
                sum = j->k->exp_sum(p, t + 1, mx) + ez;
                j->a->psink[h * T + t] = ez / sum;
            } else {
                sum = j->k->exp_sum(p, t + 1, mx);
            }
            for (size_t i = 0; i <= t; i++)
                p[i] /= sum;
            memset(p + t + 1, 0, (T - t - 1) * sizeof(float));
        }
        j->k->gemm_nn(oh + t0 * qd, qd, ph + t0 * T, T, vh, kvd, t1 - t0, t1, hd); /* o += p v */
    }
}

static void attention_fwd(const Model *m, BackpropState *s, const LayerWeights *w, LayerAct *a, size_t T)
{
    AttnJob j = { &m->cfg, m->kern, s, a, a->p, a->o, T, w->attn_sink, NULL };
    memset(a->o, 0, T * config_q_dim(&m->cfg) * sizeof(float));
    kv_transpose(s, a->k, T);
    pool_run(m->cfg.n_heads, attention_fwd_head, &j);
}

typedef struct {
    const Kernels *k;
    float *h;
    const float *gate, *up;
    size_t f;
} SwigluJob;

static void swiglu_rows(void *ctx, size_t r0, size_t r1)
{
    const SwigluJob *j = ctx;
    Counters none = { 0 };
    for (size_t t = r0; t < r1; t++) /* row by row: where a SIMD kernel's tail falls must not move with the piece */
        j->k->swiglu(j->h + t * j->f, j->gate + t * j->f, j->up + t * j->f, j->f, &none);
}

static void layer_fwd(const Model *m, BackpropState *s, const LayerWeights *w, LayerAct *a, float *x, size_t T)
{
    const Config *c = &m->cfg;
    const Kernels *k = m->kern;
    const size_t d = c->d_model, qd = config_q_dim(c), kvd = config_kv_dim(c), f = c->ffn_dim;
    memcpy(a->x_in, x, T * d * sizeof(float));
    norm_fwd(k, a->xn1, a->rms1, x, w->attn_norm, T, d, (float)c->norm_eps);
    memset(a->q, 0, T * qd * sizeof(float));
    memset(a->k, 0, T * kvd * sizeof(float));
    memset(a->v, 0, T * kvd * sizeof(float));
    Proj qkv[3] = { { a->q, w->wq, qd }, { a->k, w->wk, kvd }, { a->v, w->wv, kvd } };
    project(s, k, a->xn1, T, d, qkv, 3);
    AttnJob rj = { c, k, s, a, a->p, a->o, T, NULL, NULL };
    par_rows(T, qd + kvd, rope_rows, &rj);
    attention_fwd(m, s, w, a, T);
    s->flops += attention_flops(c, T);
    memcpy(a->x_mid, x, T * d * sizeof(float)); /* x_mid = x + o W_o^T */
    Proj o = { a->x_mid, w->wo, d };
    project(s, k, a->o, T, qd, &o, 1);
    norm_fwd(k, a->xn2, a->rms2, a->x_mid, w->ffn_norm, T, d, (float)c->norm_eps);
    memset(a->gate, 0, T * f * sizeof(float));
    memset(a->up, 0, T * f * sizeof(float));
    Proj gu[2] = { { a->gate, w->w_gate, f }, { a->up, w->w_up, f } };
    project(s, k, a->xn2, T, d, gu, 2);
    SwigluJob sj = { k, a->h, a->gate, a->up, f };
    par_rows(T, f, swiglu_rows, &sj);
    memcpy(x, a->x_mid, T * d * sizeof(float)); /* x_out = x_mid + h W_down^T */
    Proj down = { x, w->w_down, d };
    project(s, k, a->h, T, f, &down, 1);
}

typedef struct {
    BackpropState *s;
    size_t V;
} SoftmaxJob;

/* Softmax of each row of logits in place, and -ln p of the next token. */
static void softmax_rows(void *ctx, size_t r0, size_t r1)
{
    const SoftmaxJob *j = ctx;
    const size_t V = j->V;
    for (size_t t = r0; t < r1; t++) {
        float *p = j->s->probs + t * V, mx = p[0];
        for (size_t i = 1; i < V; i++)
            mx = p[i] > mx ? p[i] : mx;
        double sum = 0;
        for (size_t i = 0; i < V; i++)
            sum += p[i] = expf(p[i] - mx);
        j->s->row_loss[t] = log(sum) - log((double)p[j->s->tokens[t + 1]]);
        for (size_t i = 0; i < V; i++)
            p[i] = (float)(p[i] / sum);
    }
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
    memset(s->probs, 0, T * V * sizeof(float));
    Proj un = { s->probs, m->unembed, V };
    project(s, m->kern, s->xnf, T, d, &un, 1);
    if (logits)
        memcpy(logits, s->probs, T * V * sizeof(float));
    SoftmaxJob sj = { s, V };
    par_rows(T, V, softmax_rows, &sj);
    double loss = 0;
    for (size_t t = 0; t < T; t++) /* in order: the same sum for every thread count */
        loss += s->row_loss[t];
    return loss / (double)T;
}

/* --- backward --------------------------------------------------------------- */

/* The product y [T][out] = x [T][in] W^T, W [out][in], backward into a
 * stage: dx [T][in] += dy W (when dx: a term of prod dxp, which may sum
 * several) and dW [out][in] += dy^T x, a product of its own. */
static void matmul_bwd(BackpropState *s, Stage *st, Prod *dxp, float *dW, const float *dy, const float *x,
                       const float *W, size_t T, size_t in, size_t out)
{
    s->flops += (dxp ? 4 : 2) * (uint64_t)T * in * out;
    if (dxp)
        prod_term(dxp, dy, out, W, in, out);
    prod_term(stage_add(st, PROD_TN, dW, in, out, in), dy, out, x, in, T);
}

typedef struct {
    float *dx;
    const float *dy, *x, *w, *inv;
    size_t d;
} NormBwdJob;

static void norm_bwd_rows(void *ctx, size_t r0, size_t r1)
{
    const NormBwdJob *j = ctx;
    const size_t d = j->d;
    for (size_t t = r0; t < r1; t++) {
        const float *xr = j->x + t * d, *dyr = j->dy + t * d;
        const float r = j->inv[t];
        float dot = 0.0f;
        for (size_t i = 0; i < d; i++)
            dot += dyr[i] * j->w[i] * xr[i];
        const float k = dot * r * r * r / (float)d;
        for (size_t i = 0; i < d; i++)
            j->dx[t * d + i] += r * j->w[i] * dyr[i] - k * xr[i];
    }
}

/* y = x * inv * w: dw += sum_t dy x inv (here, t in order); dx += inv w dy -
 * x inv^3 / d sum(dy w x) (rows side by side). */
static void norm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *inv, size_t T,
                     size_t d)
{
    NormBwdJob j = { dx, dy, x, w, inv, d };
    par_rows(T, d, norm_bwd_rows, &j);
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < d; i++)
            dw[i] += dy[t * d + i] * x[t * d + i] * inv[t];
}

/* The gradient of a RoPE'd vector back through the rotation: rotate by the
 * opposite angle (the same pairs, the same angles as rope_ref). */
static void rope_bwd_rows(void *ctx, size_t r0, size_t r1)
{
    BackpropState *s = ctx;
    const Config *c = &s->c;
    const size_t hd = c->head_dim, qd = config_q_dim(c), kvd = config_kv_dim(c);
    for (size_t t = r0; t < r1; t++) {
        const float *co = s->rope_cos + t * hd, *si = s->rope_sin + t * hd;
        for (size_t part = 0; part < 2; part++) {
            float *g = part ? s->dk + t * kvd : s->dq + t * qd;
            const size_t heads = part ? c->n_kv_heads : c->n_heads;
            for (size_t h = 0; h < heads; h++) {
                float *v = g + h * hd;
                for (size_t i = 0; i < hd; i += 2) {
                    const float a = v[i], b = v[i + 1];
                    v[i] = a * co[i] + b * si[i];
                    v[i + 1] = -a * si[i] + b * co[i];
                }
            }
        }
    }
}

/* One query head: d p = d o . v and the softmax's backward into s->ds (d
 * scores, scaled; zero past each row's position), then dq += ds k. A learnt
 * sink z is a score whose value is 0: its d p is 0, so the rows' ds keep
 * their form and d z = -p_sink sum_j p_j d p_j, summed over the rows in
 * order (one head a job: the same bytes for every thread count). */
static void attention_bwd_head(void *ctx, size_t h)
{
    const AttnJob *j = ctx;
    const Config *c = j->c;
    BackpropState *s = j->s;
    const size_t T = j->T, hd = c->head_dim, G = c->n_heads / c->n_kv_heads, kh = h / G;
    const size_t qd = config_q_dim(c), kvd = config_kv_dim(c);
    const float scale = 1.0f / sqrtf((float)hd);
    const float *vt = s->kvt + kh * hd * T, *kh_rows = j->a->k + kh * hd, *ph = j->a->p + h * T * T;
    const float *doh = s->datt + h * hd;
    float *dsh = s->ds + h * T * T, *dqh = s->dq + h * hd, dz = 0.0f;
    for (size_t t0 = 0; t0 < T; t0 += ATT_ROWS) {
        const size_t t1 = min2(t0 + ATT_ROWS, T);
        for (size_t t = t0; t < t1; t++)
            memset(dsh + t * T, 0, t1 * sizeof(float));
        j->k->gemm_nn(dsh + t0 * T, T, doh + t0 * qd, qd, vt, T, t1 - t0, hd, t1); /* d p = d o . v */
        for (size_t t = t0; t < t1; t++) {
            const float *p = ph + t * T;
            float *dp = dsh + t * T, pdp = 0.0f;
            for (size_t i = 0; i <= t; i++)
                pdp += p[i] * dp[i];
            for (size_t i = 0; i <= t; i++)
                dp[i] = p[i] * (dp[i] - pdp) * scale;
            memset(dp + t + 1, 0, (T - t - 1) * sizeof(float));
            if (j->dsink)
                dz -= j->a->psink[h * T + t] * pdp;
        }
        j->k->gemm_nn(dqh + t0 * qd, qd, dsh + t0 * T, T, kh_rows, kvd, t1 - t0, t1, hd); /* dq += ds k */
    }
    if (j->dsink)
        j->dsink[h] += dz;
}

/* Rows [j0, j0 + ATT_ROWS) of one KV head's dv and dk: the sums over the
 * queries at or after them, the group's heads in order. */
static void attention_bwd_keys(void *ctx, size_t i)
{
    const AttnJob *j = ctx;
    const Config *c = j->c;
    BackpropState *s = j->s;
    const size_t T = j->T, hd = c->head_dim, G = c->n_heads / c->n_kv_heads, qd = config_q_dim(c);
    const size_t kvd = config_kv_dim(c), blocks = (T + ATT_ROWS - 1) / ATT_ROWS;
    const size_t kh = i / blocks, j0 = (i % blocks) * ATT_ROWS, j1 = min2(j0 + ATT_ROWS, T);
    for (size_t g = 0; g < G; g++) {
        const size_t h = kh * G + g, at = (h * T + j0) * T + j0; /* row j0, column j0 of head h */
        j->k->gemm_tn(s->dv + j0 * kvd + kh * hd, kvd, j->a->p + at, T, s->datt + j0 * qd + h * hd, qd, j1 - j0,
                      T - j0, hd); /* dv += p^T d o */
        j->k->gemm_tn(s->dk + j0 * kvd + kh * hd, kvd, s->ds + at, T, j->a->q + j0 * qd + h * hd, qd, j1 - j0,
                      T - j0, hd); /* dk += ds^T q */
    }
}

/* d o (s->datt) back through the softmax attention into s->dq, s->dk, s->dv. */
static void attention_bwd(const Model *m, BackpropState *s, const LayerWeights *w, LayerWeights *gw,
                          const LayerAct *a, size_t T)
{
    const Config *c = &m->cfg;
    const size_t qd = config_q_dim(c), kvd = config_kv_dim(c);
    AttnJob j = { c, m->kern, s, a, NULL, NULL, T, w->attn_sink, w->attn_sink ? gw->attn_sink : NULL };
    memset(s->dq, 0, T * qd * sizeof(float));
    memset(s->dk, 0, T * kvd * sizeof(float));
    memset(s->dv, 0, T * kvd * sizeof(float));
    kv_transpose(s, a->v, T);
    pool_run(c->n_heads, attention_bwd_head, &j);
    pool_run(c->n_kv_heads * ((T + ATT_ROWS - 1) / ATT_ROWS), attention_bwd_keys, &j);
}

typedef struct {
    BackpropState *s;
    const LayerAct *a;
    size_t f;
} SiluBwdJob;

static void silu_bwd_rows(void *ctx, size_t r0, size_t r1)
{
    const SiluBwdJob *j = ctx;
    BackpropState *s = j->s;
    for (size_t i = r0 * j->f; i < r1 * j->f; i++) {
        const float g = j->a->gate[i], sg = 1.0f / (1.0f + expf(-g));
        s->dup[i] = s->dh[i] * g * sg;
        s->dgate[i] = s->dh[i] * j->a->up[i] * sg * (1.0f + g * (1.0f - sg));
    }
}

/* s->dx (d loss / d layer output) back through layer l into s->dx (d loss /
 * d layer input), the layer's weight gradients into gw. */
static void layer_bwd(const Model *m, BackpropState *s, const LayerWeights *w, LayerWeights *gw, const LayerAct *a,
                      size_t T)
{
    const Config *c = &m->cfg;
    const Kernels *k = m->kern;
    const size_t d = c->d_model, qd = config_q_dim(c), kvd = config_kv_dim(c), f = c->ffn_dim;
    /* the FFN: x_out = x_mid + W_down (silu(gate) * up) */
    memset(s->dh, 0, T * f * sizeof(float));
    Stage st = { .kern = k };
    Prod *dh = stage_add(&st, PROD_NN, s->dh, f, T, f);
    matmul_bwd(s, &st, dh, gw->w_down, s->dx, a->h, w->w_down, T, f, d);
    stage_run(&st);
    SiluBwdJob sj = { s, a, f };
    par_rows(T, f, silu_bwd_rows, &sj);
    memset(s->dxb, 0, T * d * sizeof(float));
    st = (Stage){ .kern = k };
    Prod *dxb = stage_add(&st, PROD_NN, s->dxb, d, T, d);
    matmul_bwd(s, &st, dxb, gw->w_gate, s->dgate, a->xn2, w->w_gate, T, d, f);
    matmul_bwd(s, &st, dxb, gw->w_up, s->dup, a->xn2, w->w_up, T, d, f);
    stage_run(&st);
    norm_bwd(s->dx, gw->ffn_norm, s->dxb, a->x_mid, w->ffn_norm, a->rms2, T, d); /* s->dx is now d x_mid */
    /* attention: x_mid = x_in + W_o attention(rope(W_q xn1), rope(W_k xn1), W_v xn1) */
    memset(s->datt, 0, T * qd * sizeof(float));
    st = (Stage){ .kern = k };
    Prod *datt = stage_add(&st, PROD_NN, s->datt, qd, T, qd);
    matmul_bwd(s, &st, datt, gw->wo, s->dx, a->o, w->wo, T, qd, d);
    stage_run(&st);
    attention_bwd(m, s, w, gw, a, T);
    s->flops += 2 * attention_flops(c, T); /* dp and dv, then dq and dk */
    par_rows(T, qd + kvd, rope_bwd_rows, s);
    memset(s->dxb, 0, T * d * sizeof(float));
    st = (Stage){ .kern = k };
    dxb = stage_add(&st, PROD_NN, s->dxb, d, T, d);
    matmul_bwd(s, &st, dxb, gw->wq, s->dq, a->xn1, w->wq, T, d, qd);
    matmul_bwd(s, &st, dxb, gw->wk, s->dk, a->xn1, w->wk, T, d, kvd);
    matmul_bwd(s, &st, dxb, gw->wv, s->dv, a->xn1, w->wv, T, d, kvd);
    stage_run(&st);
    norm_bwd(s->dx, gw->attn_norm, s->dxb, a->x_in, w->attn_norm, a->rms1, T, d); /* d x_in */
}

typedef struct {
    BackpropState *s;
    size_t V;
    float per;
} DlogitsJob;

/* d loss / d logits = (softmax - one-hot) / T, scaled */
static void dlogits_rows(void *ctx, size_t r0, size_t r1)
{
    const DlogitsJob *j = ctx;
    BackpropState *s = j->s;
    const size_t V = j->V;
    for (size_t t = r0; t < r1; t++)
        for (size_t i = 0; i < V; i++)
            s->dlogits[t * V + i] = j->per * (s->probs[t * V + i] - (i == (size_t)s->tokens[t + 1] ? 1.0f : 0.0f));
}

void backprop_backward(const Model *m, BackpropState *s, Model *grad, float scale)
{
    const Config *c = &m->cfg;
    const size_t T = s->len, d = c->d_model, V = c->vocab;
    DlogitsJob dj = { s, V, scale / (float)T };
    par_rows(T, V, dlogits_rows, &dj);
    memset(s->dxb, 0, T * d * sizeof(float));
    Stage st = { .kern = m->kern };
    Prod *dxb = stage_add(&st, PROD_NN, s->dxb, d, T, d);
    matmul_bwd(s, &st, dxb, grad->unembed, s->dlogits, s->xnf, m->unembed, T, d, V);
    stage_run(&st);
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
