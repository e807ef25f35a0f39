/* decode_layer_check.c: checks lessons/exercises/decode_layer.c (lesson 2).
 *
 * For two models, kvscope's tiny model (random weights) and the trained
 * kjv-small, a fixed run of tokens is fed one at a time from position 0:
 * the engine runs each as a one-token pass of its forward pass
 * (model_forward) over a contiguous f32 cache; beside it the checker embeds
 * the token, runs the learner's decode_layer through every layer with one
 * LayerCache each, and finishes with the model's final RMSNorm and
 * unembedding. After every token the learner's cache lengths, the K and V
 * rows it appended (every layer, every KV head) and the logits must match
 * the engine's.
 *
 * When they do not, the checker names the mistake: beside the learner it
 * runs its own plain layer with each usual mistake committed (attending
 * before appending, no 1/sqrt(head_dim), RoPE at position 0, V rotated, the
 * wrong KV head, the norm's gain left out, a residual add left out), and
 * says which one gives the learner's logits. */
#include <math.h>
#include <string.h>

#include "decode_layer.h"
#include "harness.h"
#include "model/forward.h"

#define N_TOKENS 9
#define TOL 1e-4 /* relative to the largest logit: the learner adds in another order than the engine's kernels */

typedef enum {
    M_NONE,
    M_ATTEND_FIRST,
    M_NO_SCALE,
    M_ROPE_ZERO,
    M_ROPE_ON_V,
    M_HEAD_MOD,
    M_NO_GAIN,
    M_NO_RESIDUAL,
    M_COUNT
} Mistake;

static const char *const mistake_text[M_COUNT] = {
    "(none)",
    "attention over the rows the cache held before this token: append this token's K and V before attending, "
    "so that it sees itself (at position 0 it is the only row)",
    "scores not divided by sqrt(head_dim)",
    "RoPE at position 0 (or no RoPE) instead of the token's absolute position pos",
    "V rotated by RoPE too: only q and K carry position",
    "query head h reading KV head h % n_kv_heads: a group is h / (n_heads / n_kv_heads), neighbours",
    "RMSNorm without its gain: multiply the normalized x by attn_norm (and ffn_norm) element by element",
    "a residual add left out: x = x + Wo a, and x = x + W_down (...), not x = ...",
};

/* y [rows] = W [rows][cols] x */
static void matvec(float *y, const float *w, const float *x, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t i = 0; i < cols; i++)
            s += (double)w[r * cols + i] * x[i];
        y[r] = (float)s;
    }
}

static void norm(float *out, const float *x, const float *gain, size_t d, float eps, int use_gain)
{
    double ss = 0;
    for (size_t i = 0; i < d; i++)
        ss += (double)x[i] * x[i];
    const float inv = 1.0f / sqrtf((float)(ss / (double)d) + eps);
    for (size_t i = 0; i < d; i++)
        out[i] = x[i] * inv * (use_gain ? gain[i] : 1.0f);
}

/* The checker's own layer, with mistake mk committed (M_NONE: right). */
static void ref_layer(Mistake mk, const Layer *L, LayerCache *c, size_t pos, float *x)
{
    const size_t d = L->d_model, H = L->n_heads, Hkv = L->n_kv_heads, D = L->head_dim, F = L->ffn_dim;
    const size_t group = H / Hkv;
    float h[4096], q[4096], k[1024], v[1024], a[4096], o[4096], g[16384], u[16384], s[64];
    norm(h, x, L->attn_norm, d, L->norm_eps, mk != M_NO_GAIN);
    matvec(q, L->wq, h, H * D, d);
    matvec(k, L->wk, h, Hkv * D, d);
    matvec(v, L->wv, h, Hkv * D, d);
    const size_t rp = mk == M_ROPE_ZERO ? 0 : pos;
    rope_ref(q, H, D, rp, L->rope_theta, NULL);
    rope_ref(k, Hkv, D, rp, L->rope_theta, NULL);
    if (mk == M_ROPE_ON_V)
        rope_ref(v, Hkv, D, pos, L->rope_theta, NULL);
    for (size_t j = 0; j < Hkv; j++) {
        memcpy(c->k + (j * c->max_seq + pos) * D, k + j * D, D * sizeof(float));
        memcpy(c->v + (j * c->max_seq + pos) * D, v + j * D, D * sizeof(float));
    }
    c->len = pos + 1;
    const size_t n = mk == M_ATTEND_FIRST ? pos : pos + 1;
    const float scale = mk == M_NO_SCALE ? 1.0f : 1.0f / sqrtf((float)D);
    for (size_t hh = 0; hh < H; hh++) {
        const size_t j = mk == M_HEAD_MOD ? hh % Hkv : hh / group;
        float mx = -INFINITY;
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            double dot = 0;
            for (size_t t = 0; t < D; t++)
                dot += (double)q[hh * D + t] * c->k[(j * c->max_seq + i) * D + t];
            s[i] = (float)dot * scale;
            mx = fmaxf(mx, s[i]);
        }
        for (size_t i = 0; i < n; i++)
            sum += s[i] = expf(s[i] - mx);
        for (size_t t = 0; t < D; t++) {
            double acc = 0;
            for (size_t i = 0; i < n; i++)
                acc += s[i] / sum * c->v[(j * c->max_seq + i) * D + t];
            a[hh * D + t] = (float)acc;
        }
    }
    matvec(o, L->wo, a, d, H * D);
    for (size_t i = 0; i < d; i++)
        x[i] = (mk == M_NO_RESIDUAL ? 0.0f : x[i]) + o[i];
    norm(h, x, L->ffn_norm, d, L->norm_eps, mk != M_NO_GAIN);
    matvec(g, L->w_gate, h, F, d);
    matvec(u, L->w_up, h, F, d);
    for (size_t i = 0; i < F; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    matvec(o, L->w_down, g, d, F);
    for (size_t i = 0; i < d; i++)
        x[i] += o[i];
}

/* The model's final norm and unembedding of x into logits [vocab]. */
static void finish(const Model *m, const float *x, float *logits)
{
    const Config *c = &m->cfg;
    float xb[4096];
    rmsnorm_ref(xb, x, m->final_norm, 1, c->d_model, (float)c->norm_eps, NULL);
    matvec(logits, m->unembed, xb, c->vocab, c->d_model);
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]))
            return INFINITY;
        d = fmax(d, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return scale > 0 ? d / scale : d;
}

/* One run of every layer: its caches and the hidden state. */
typedef struct {
    LayerCache *lc;
    float x[4096];
    float logits[4096];
} Run;

static int run_init(Run *r, const Config *c)
{
    r->lc = calloc(c->n_layers, sizeof *r->lc);
    if (!r->lc)
        return -1;
    for (size_t l = 0; l < c->n_layers; l++) {
        r->lc[l].max_seq = N_TOKENS;
        r->lc[l].k = calloc(c->n_kv_heads * N_TOKENS * c->head_dim, sizeof(float));
        r->lc[l].v = calloc(c->n_kv_heads * N_TOKENS * c->head_dim, sizeof(float));
        if (!r->lc[l].k || !r->lc[l].v)
            return -1;
    }
    return 0;
}

static void run_free(Run *r, const Config *c)
{
    for (size_t l = 0; r->lc && l < c->n_layers; l++)
        free(r->lc[l].k), free(r->lc[l].v);
    free(r->lc);
}

/* The Layer the learner is handed for layer l of m. */
static Layer layer_of(const Model *m, size_t l)
{
    const Config *c = &m->cfg;
    const LayerWeights *w = model_layer(m, l);
    return (Layer){ .d_model = c->d_model, .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads,
                    .head_dim = c->head_dim, .ffn_dim = c->ffn_dim, .norm_eps = (float)c->norm_eps,
                    .rope_theta = c->rope_theta, .attn_norm = w->attn_norm, .wq = w->wq, .wk = w->wk,
                    .wv = w->wv, .wo = w->wo, .ffn_norm = w->ffn_norm, .w_gate = w->w_gate, .w_up = w->w_up,
                    .w_down = w->w_down };
}

/* Check one model; 0 when it ran (passed or not), -1 when it could not be set up. */
static int check_model(const char *name, Tally *t, const char **named)
{
    Model m;
    if (harness_model(&m, name) < 0)
        return -1;
    Err e = { 0 };
    if (model_has_stored(&m) && model_dequantize(&m, &e) < 0) {
        printf("cannot dequantize %s: %s\n", name, e.msg);
        return -1;
    }
    const Config *c = &m.cfg;
    const size_t d = c->d_model, V = c->vocab;
    if (d > 4096 || V > 4096 || c->ffn_dim > 16384 || c->n_heads * c->head_dim > 4096 ||
        c->n_kv_heads * c->head_dim > 1024) {
        printf("model %s is too large for this checker\n", name);
        return -1;
    }
    KvGeometry geo = model_kv_geometry(&m, 1);
    KvCache *cache = kv_open("contiguous", &geo, &e);
    ForwardState s;
    float *logits = malloc(V * sizeof *logits);
    Run *runs = calloc(M_COUNT + 1, sizeof *runs); /* [0 .. M_COUNT): the mistakes; [M_COUNT]: the learner */
    if (!cache || !logits || !runs || forward_state_init(&s, c, 1, 0, &e) < 0) {
        printf("setup failed: %s\n", e.msg[0] ? e.msg : "out of memory");
        return -1;
    }
    for (int r = 0; r <= M_COUNT; r++)
        if (run_init(&runs[r], c) < 0) {
            printf("out of memory\n");
            return -1;
        }
    printf("model %s: %zu layers, d_model %zu, %zu query heads on %zu KV heads of %zu, ffn %zu, %d tokens\n", name,
           c->n_layers, d, c->n_heads, c->n_kv_heads, c->head_dim, c->ffn_dim, N_TOKENS);
    Run *me = &runs[M_COUNT];
    int failed = 0;
    for (size_t pos = 0; pos < N_TOKENS && !failed; pos++) {
        const int tok = (int)((pos * 7919u + 13u) % V);
        Counters ctr = { 0 };
        if (model_forward(&m, &s, cache, &tok, 1, 1, pos, logits, &ctr, &e) < 0) {
            printf("the engine's forward pass failed: %s\n", e.msg);
            return -1;
        }
        for (int r = 0; r <= M_COUNT; r++) {
            memcpy(runs[r].x, m.embed + (size_t)tok * d, d * sizeof(float));
            for (size_t l = 0; l < c->n_layers; l++) {
                const Layer L = layer_of(&m, l);
                if (r == M_COUNT)
                    decode_layer(&L, &me->lc[l], pos, me->x);
                else
                    ref_layer((Mistake)r, &L, &runs[r].lc[l], pos, runs[r].x);
            }
            finish(&m, runs[r].x, runs[r].logits);
        }
        if (rel_diff(runs[M_NONE].logits, logits, V) > TOL) { /* the checker's own layer must be the engine's */
            printf("internal: the checker's layer differs from the engine's at position %zu\n", pos);
            return -1;
        }
        /* the cache: lengths, then the rows appended at pos */
        for (size_t l = 0; l < c->n_layers && !failed; l++) {
            if (me->lc[l].len != pos + 1) {
                /* the rows may be right and only the count wrong, or nothing was appended at all */
                KvBlock b;
                kv_block(cache, l, 0, 0, 0, &b);
                const int rows_ok =
                    rel_diff(me->lc[l].k + pos * c->head_dim, harness_row(b.k, b.k_stride, pos), c->head_dim) <= TOL;
                const int counted_not = rows_ok && me->lc[l].len == pos;
                failed = 1;
                if (tally(t, 0))
                    printf("  position %zu, layer %zu: the cache holds %zu positions after the step (c->len), "
                           "expected %zu%s\n", pos, l, me->lc[l].len, pos + 1,
                           counted_not ? ": the appended row was not counted"
                           : rows_ok   ? ""
                                       : "; and the K row at position pos is not the engine's (was anything "
                                         "appended?)");
                if (!*named && counted_not)
                    *named = "the appended row was not counted in c->len";
                break;
            }
            tally(t, 1);
            for (size_t j = 0; j < c->n_kv_heads && !failed; j++) {
                KvBlock b;
                kv_block(cache, l, 0, j, 0, &b);
                const float *ek = harness_row(b.k, b.k_stride, pos), *ev = harness_row(b.v, b.v_stride, pos);
                const float *lk = me->lc[l].k + (j * N_TOKENS + pos) * c->head_dim;
                const float *lv = me->lc[l].v + (j * N_TOKENS + pos) * c->head_dim;
                const double dk = rel_diff(lk, ek, c->head_dim), dv = rel_diff(lv, ev, c->head_dim);
                failed = !(dk <= TOL && dv <= TOL);
                if (tally(t, !failed))
                    printf("  position %zu, layer %zu, KV head %zu: the cached rows differ from the engine's (K off "
                           "by %.3g, V off by %.3g, relative): expected K [%.5f, %.5f, ...], got [%.5f, %.5f, ...]\n",
                           pos, l, j, dk, dv, ek[0], ek[1], lk[0], lk[1]);
            }
        }
        if (!failed) {
            const double dl = rel_diff(me->logits, logits, V);
            failed = !(dl <= TOL);
            if (tally(t, !failed))
                printf("  position %zu: the logits differ from the engine's by %.3g of the largest: expected [%.5f, "
                       "%.5f, ...], got [%.5f, %.5f, ...]\n", pos, dl, logits[0], logits[1], me->logits[0],
                       me->logits[1]);
        }
        if (failed && (me->lc[0].len == pos + 1)) {
            int mk = M_NONE + 1;
            for (; mk < M_COUNT; mk++)
                if (rel_diff(me->logits, runs[mk].logits, V) <= TOL)
                    break;
            if (mk < M_COUNT) {
                printf("  your numbers are the engine's with this mistake: %s\n", mistake_text[mk]);
                if (!*named)
                    *named = mistake_text[mk];
            } else {
                printf("  (they match none of the usual mistakes: attending before appending, the scale, RoPE's "
                       "position, V rotated, the head mapping, the norm's gain, a residual)\n");
            }
        }
    }
    if (!failed)
        printf("  all %d tokens: every layer's cache rows and the logits match\n", N_TOKENS);
    for (int r = 0; r <= M_COUNT; r++)
        run_free(&runs[r], c);
    free(runs);
    free(logits);
    forward_state_free(&s);
    kv_free(cache);
    model_free(&m);
    return 0;
}

int main(void)
{
    static const char *const models[] = { "tiny", "kjv-small" };
    Tally t = { 0, 0 };
    const char *named = NULL;
    printf("reference: the engine's forward pass, one token at a time over a contiguous cache\n");
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (check_model(models[i], &t, &named) < 0)
            return 2;
    if (named)
        printf("the mistake: %s\n", named);
    return verdict(&t, "comparisons");
}
