/* eval.c: streaming a text through caches in lockstep (eval.h). */
#include "sim/eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kv/spec.h"
#include "model/forward.h"
#include "util/pool.h"

/* log of the sum of exp(x[i]), stable: the softmax's normaliser. */
static double log_sum_exp(const float *x, size_t n)
{
    float mx = x[0];
    for (size_t i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += exp((double)x[i] - mx);
    return mx + log(s);
}

static size_t argmax(const float *x, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* KL(p || q) of the softmaxes of logits a (p) and b (q), with their
 * normalisers la and lb: sum p_i (ln p_i - ln q_i). */
static double kl_div(const float *a, double la, const float *b, double lb, size_t n)
{
    double kl = 0;
    for (size_t i = 0; i < n; i++) {
        double lp = (double)a[i] - la, lq = (double)b[i] - lb;
        kl += exp(lp) * (lp - lq);
    }
    return kl > 0 ? kl : 0; /* rounding can dip below 0 when the two agree */
}

/* One cache's run: its scratch, the last pass's logits, and the pass's
 * outcome (lanes run side by side on the pool, util/pool.h). */
typedef struct {
    KvCache *cache;
    ForwardState fs;
    int fs_ready;
    float *logits; /* [vocab] */
    Counters ctr;  /* the last pass's work */
    size_t reach;  /* the most positions a step spanned so far (EvalResult.reach) */
    int rc;        /* the last pass's return */
    Err err;       /* its error, when rc < 0 */
    size_t window, stride; /* a recomputed window's (EvalRecompute); window 0: a cache */
    int *win;      /* [window - stride + 1, or the prefill if longer] the tokens a restart runs */
} Lane;

/* One step of every lane: the same tokens through each cache. */
typedef struct {
    const Model *m;
    Lane *lanes;
    const int *ids;
    size_t n_new, pos0;
} Step;

/* The positions the last query at text position t spans in c: from the
 * oldest row held in any layer and KV head to the query, both at the
 * cache's positions (a shift cache's are below the text's); a model's
 * sliding window caps it, as attention reads no further. */
static size_t reach_at(const KvCache *c, const Config *cfg, size_t t)
{
    const size_t q = t - kv_pos_shift(c, 0);
    size_t oldest = q;
    for (size_t l = 0; l < cfg->n_layers; l++)
        for (size_t h = 0; h < cfg->n_kv_heads; h++)
            for (size_t i = 0, nb = c->ops->n_blocks(c, l, 0); i < nb; i++) {
                KvBlock b;
                c->ops->block(c, l, 0, h, i, &b);
                if (b.n && b.pos < oldest)
                    oldest = b.pos;
            }
    const size_t span = q - oldest + 1;
    return cfg->sliding_window && span > cfg->sliding_window ? cfg->sliding_window : span;
}

/* A recomputed window's step, at the lane's own positions: when the new
 * token would overflow the window, the cache empties and the last
 * window - stride + 1 tokens up to this step's run again from position 0,
 * the model's first token first if it reads one; stride steps later the
 * window is full again. */
static void recompute_step(const Step *s, Lane *l)
{
    const int bos = s->m->cfg.add_bos;
    const int *tokens = s->ids + s->pos0;
    size_t held = kv_length(l->cache, 0, 0), n_new = s->n_new;
    if (held + n_new > l->window) {
        const size_t keep = l->window - l->stride + 1, t = s->pos0 + n_new - 1; /* t: the newest token */
        size_t k = 0;
        if (bos)
            l->win[k++] = s->ids[0];
        memcpy(l->win + k, s->ids + t + 1 - (keep - k), (keep - k) * sizeof *l->win);
        kv_reset(l->cache);
        tokens = l->win;
        n_new = keep;
        held = 0;
    }
    l->rc = model_forward(s->m, &l->fs, l->cache, tokens, 1, n_new, held, l->logits, &l->ctr, &l->err);
    if (l->rc == 0 && held + n_new > l->reach)
        l->reach = held + n_new;
}

static void step_lane(void *ctx, size_t k)
{
    const Step *s = ctx;
    Lane *l = &s->lanes[k];
    l->ctr = (Counters){ 0 };
    if (l->window) {
        recompute_step(s, l);
        return;
    }
    l->rc = model_forward(s->m, &l->fs, l->cache, s->ids + s->pos0, 1, s->n_new, s->pos0, l->logits, &l->ctr,
                          &l->err);
    if (l->rc == 0) {
        const size_t r = reach_at(l->cache, &s->m->cfg, s->pos0 + s->n_new - 1);
        l->reach = r > l->reach ? r : l->reach;
    }
}

/* The segment of prediction k when m predictions are cut into S segments:
 * segment j starts at floor(j m / S), so j is the largest with
 * j m < (k + 1) S. */
static size_t segment_of(size_t k, size_t m, size_t S)
{
    return ((k + 1) * S - 1) / m;
}

/* r's segments: S of the m predictions after a prefill of P, in order, each
 * with the text bytes of the tokens it predicts (1 a token without
 * token_bytes). */
static int segments_init(EvalResult *r, size_t S, size_t P, const size_t *token_bytes)
{
    const size_t m = r->scored;
    r->n_seg = S < m ? S : m;
    if (!(r->seg = calloc(r->n_seg, sizeof *r->seg)))
        return -1;
    size_t off = 0, tok = 0; /* the text offset of token tok */
    for (size_t j = 0; j < r->n_seg; j++) {
        EvalSegment *g = &r->seg[j];
        g->first = j * m / r->n_seg;
        g->count = (j + 1) * m / r->n_seg - g->first;
        for (; tok < P + g->first; tok++)
            off += token_bytes ? token_bytes[tok] : 1;
        g->first_byte = off;
        for (; tok < P + g->first + g->count; tok++)
            off += token_bytes ? token_bytes[tok] : 1;
        g->end_byte = off;
        g->bytes = (double)(g->end_byte - g->first_byte);
    }
    return 0;
}

/* The score of step t (logits predicting ids[t + 1]) for every lane. */
static void score(Lane *lanes, size_t n_lanes, const int *ids, size_t t, size_t k, size_t V, const EvalOptions *o,
                  EvalResult *res)
{
    const double ref_lse = log_sum_exp(lanes[0].logits, V);
    const size_t ref_top = argmax(lanes[0].logits, V);
    for (size_t c = 0; c < n_lanes; c++) {
        const float *lg = lanes[c].logits;
        const double lse = c == 0 ? ref_lse : log_sum_exp(lg, V);
        const double nll = lse - lg[ids[t + 1]];
        EvalSegment *sg = res[c].seg ? &res[c].seg[segment_of(k, res[c].scored, res[c].n_seg)] : NULL;
        res[c].nll += nll;
        res[c].bytes += o->token_bytes ? (double)o->token_bytes[t + 1] : 1.0;
        if (res[c].nll_at)
            res[c].nll_at[k] = nll;
        if (sg)
            sg->nll += nll;
        if (c == 0) {
            if (sg)
                sg->agree += 1; /* the reference agrees with itself; its KL is 0 */
            continue;
        }
        const double kl = kl_div(lanes[0].logits, ref_lse, lg, lse, V);
        const int agree = argmax(lg, V) == ref_top;
        res[c].kl += kl;
        res[c].top1_agree += agree;
        if (sg) {
            sg->kl += kl;
            sg->agree += agree;
        }
        for (size_t i = 0; i < V; i++)
            res[c].max_logit_err = fmax(res[c].max_logit_err, fabs((double)lg[i] - lanes[0].logits[i]));
    }
}

static void finish(EvalResult *res, size_t n_lanes)
{
    for (size_t c = 0; c < n_lanes; c++) {
        EvalResult *r = &res[c];
        r->bits_per_byte = r->bytes > 0 ? r->nll / log(2.0) / r->bytes : 0;
        r->perplexity = r->scored ? exp(r->nll / (double)r->scored) : 0;
        r->kl = c && r->scored ? r->kl / (double)r->scored : 0;
        r->top1_agree = c && r->scored ? r->top1_agree / (double)r->scored : c ? 0 : 1;
    }
}

int eval_run(const Model *m, KvCache *const *caches, size_t n_caches, const int *ids, size_t n,
             const EvalOptions *o, EvalResult *results, EvalProgressFn progress, void *user, Err *e)
{
    const Config *c = &m->cfg;
    const size_t V = c->vocab, P = o->prefill;
    memset(results, 0, n_caches * sizeof *results);
    if (n_caches == 0)
        return err_set(e, ERR_USAGE, "eval: no cache to measure");
    if (P == 0 || n <= P)
        return err_set(e, ERR_USAGE, "eval: %zu tokens leave nothing to score after a prefill of %zu", n, P);
    if (n > c->max_seq_len)
        return err_set(e, ERR_USAGE, "eval: %zu tokens; model '%s' is set up for %zu positions", n, c->name,
                       c->max_seq_len);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= V)
            return err_set(e, ERR_USAGE, "eval: token %d at %zu is outside the vocabulary 0..%zu", ids[i], i, V - 1);
    for (size_t k = 0; o->recompute && k < n_caches; k++) {
        const EvalRecompute *rw = &o->recompute[k];
        if (rw->window && (rw->window > c->max_seq_len || rw->stride >= rw->window || P > rw->window))
            return err_set(e, ERR_USAGE, "eval: a window of %zu recomputed every %zu tokens after a prefill of %zu "
                           "(want stride < window, window <= %zu, prefill <= window)", rw->window, rw->stride, P,
                           c->max_seq_len);
        if (rw->window && c->add_bos && ids[0] != c->bos_token)
            return err_set(e, ERR_USAGE, "eval: the model reads every sequence from token %d, and this one starts "
                           "with %d", c->bos_token, ids[0]);
    }
    Lane *lanes = calloc(n_caches, sizeof *lanes);
    if (!lanes)
        return err_set(e, ERR_RUNTIME, "out of memory");
    int rc = -1;
    for (size_t k = 0; k < n_caches; k++) {
        const EvalRecompute *rw = o->recompute ? &o->recompute[k] : NULL;
        size_t max_pass = P;
        lanes[k].cache = caches[k];
        if (rw && rw->window) {
            lanes[k].window = rw->window;
            lanes[k].stride = rw->stride;
            max_pass = rw->window - rw->stride + 1 > P ? rw->window - rw->stride + 1 : P;
            if (!(lanes[k].win = malloc(max_pass * sizeof *lanes[k].win))) {
                err_set(e, ERR_RUNTIME, "out of memory for cache %zu's run", k);
                goto done;
            }
        }
        lanes[k].logits = malloc(V * sizeof(float));
        results[k].scored = n - P;
        if (o->per_position)
            results[k].nll_at = calloc(n - P, sizeof(double));
        if (!lanes[k].logits || (o->per_position && !results[k].nll_at) ||
            (o->segments && segments_init(&results[k], o->segments, P, o->token_bytes) < 0) ||
            forward_state_init(&lanes[k].fs, c, max_pass, 0, e) < 0) {
            err_set(e, ERR_RUNTIME, "out of memory for cache %zu's run", k);
            goto done;
        }
        lanes[k].fs_ready = 1;
    }
    /* step t feeds token t (the prefill feeds 0 .. P-1 at once) and its
     * logits predict token t + 1 */
    for (size_t t = P - 1; t + 1 < n; t++) {
        Step step = { .m = m, .lanes = lanes, .ids = ids, .pos0 = t == P - 1 ? 0 : t, .n_new = t == P - 1 ? P : 1 };
        pool_run(n_caches, step_lane, &step);
        for (size_t k = 0; k < n_caches; k++) {
            if (lanes[k].rc < 0) {
                if (e)
                    *e = lanes[k].err;
                goto done;
            }
            counters_add(&results[k].total, &lanes[k].ctr);
        }
        score(lanes, n_caches, ids, t, t - (P - 1), V, o, results);
        if (progress && progress(user, t + 1, n - 1)) {
            err_set(e, ERR_RUNTIME, "eval: stopped at position %zu of %zu", t + 1, n - 1);
            goto done;
        }
    }
    for (size_t k = 0; k < n_caches; k++)
        results[k].reach = lanes[k].reach;
    finish(results, n_caches);
    rc = 0;
done:
    for (size_t k = 0; k < n_caches; k++) {
        free(lanes[k].logits);
        free(lanes[k].win);
        if (lanes[k].fs_ready)
            forward_state_free(&lanes[k].fs);
    }
    free(lanes);
    return rc;
}

void eval_result_free(EvalResult *r)
{
    free(r->nll_at);
    free(r->seg);
    r->nll_at = NULL;
    r->seg = NULL;
    r->n_seg = 0;
}

int eval_recompute_parse(const char *spec, size_t context, EvalRecompute *out, Err *e)
{
    static const char name[] = "recompute";
    if (strncmp(spec, name, sizeof name - 1) != 0 || !strchr(":+", spec[sizeof name - 1]))
        return 0; /* another name: some cache's (strchr finds the terminating 0 too) */
    KvSpec sp;
    if (spec_parse(spec, &sp, e) < 0)
        return -1;
    if (sp.n_parts != 1)
        return err_set(e, ERR_USAGE, "'%s': a recomputed window takes no modifier (its cache is exact)", spec);
    *out = (EvalRecompute){ .window = context, .stride = context / 8 ? context / 8 : 1 };
    KvSpecPart *p = &sp.part[0];
    if (spec_take_size(p, "window", &out->window, e) < 0 || spec_take_size(p, "stride", &out->stride, e) < 0 ||
        spec_check_all_taken(p, "window, stride", e) < 0)
        return -1;
    if (out->stride >= out->window)
        return err_set(e, ERR_USAGE, "'%s': the stride must be below the window (%zu)", spec, out->window);
    return 1;
}

int eval_recompute_window(const Model *m, const int *ids, size_t n, size_t prefill, size_t window, size_t stride,
                          double *nll_at, Err *e)
{
    const size_t V = m->cfg.vocab, P = prefill;
    const int bos = m->cfg.add_bos;
    if (P == 0 || n <= P || window < 1 + (size_t)bos || window > m->cfg.max_seq_len || stride == 0)
        return err_set(e, ERR_USAGE, "eval: a window of %zu over %zu tokens after a prefill of %zu", window, n, P);
    if (bos && ids[0] != m->cfg.bos_token)
        return err_set(e, ERR_USAGE, "eval: the model reads every sequence from token %d, and this one starts "
                       "with %d", m->cfg.bos_token, ids[0]);
    ForwardState fs;
    float *logits = malloc(V * sizeof(float));
    int *win = malloc(window * sizeof *win); /* [window] the tokens one step runs */
    if (!logits || !win || forward_state_init(&fs, &m->cfg, window, 0, e) < 0) {
        free(logits);
        free(win);
        return e->kind ? -1 : err_set(e, ERR_RUNTIME, "out of memory");
    }
    int rc = 0;
    for (size_t t = P - 1; rc == 0 && t + 1 < n; t++) {
        if ((t - (P - 1)) % stride) {
            nll_at[t - (P - 1)] = NAN;
            continue;
        }
        /* A model trained with a first token saw it at position 0 of every
         * sequence: the window is that token and the last window - 1 tokens,
         * as llama.cpp's context shift keeps it; otherwise the last window. */
        const size_t first = t + 1 > window ? t + 1 - window + (size_t)bos : 0, len = t + 1 - first + (first ? bos : 0);
        size_t k = 0;
        if (first && bos)
            win[k++] = ids[0];
        memcpy(win + k, ids + first, (t + 1 - first) * sizeof *win);
        Counters ctr = { 0 };
        rc = model_forward(m, &fs, NULL, win, 1, len, 0, logits, &ctr, e);
        if (rc == 0)
            nll_at[t - (P - 1)] = log_sum_exp(logits, V) - logits[ids[t + 1]];
    }
    forward_state_free(&fs);
    free(logits);
    free(win);
    return rc;
}
