#include "sim/quality.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Exact weight of the last query (head h, layer l) on the positions the
 * lossy cache still holds: the shadow's weights are over every position. */
static double mass_kept(const Model *m, const ForwardState *exact, const KvCell *cells, size_t layer, size_t t,
                        size_t context)
{
    const Config *c = &m->cfg;
    double sum = 0;
    for (size_t h = 0; h < c->n_heads; h++) {
        const float *p = exact->probs + ((layer * c->n_heads + h) * exact->max_q + t) * c->max_seq_len;
        for (size_t j = 0; j < context; j++)
            if (cells[j].state != CELL_EMPTY && cells[j].state != CELL_EVICTED)
                sum += p[j];
    }
    return sum / (double)c->n_heads;
}

/* Add the exact weight of the last query on position 0, per head, into
 * first[layer][head]. */
static void add_first_mass(const Model *m, const ForwardState *exact, size_t t, double *first)
{
    const Config *c = &m->cfg;
    for (size_t l = 0; l < c->n_layers; l++)
        for (size_t h = 0; h < c->n_heads; h++)
            first[l * c->n_heads + h] += exact->probs[((l * c->n_heads + h) * exact->max_q + t) * c->max_seq_len];
}

static void summarise_first_mass(const Config *c, const double *first, double even, QualitySummary *sum)
{
    const size_t n = c->n_layers * c->n_heads;
    double all = 0;
    for (size_t i = 0; i < n; i++) {
        const double mean = first[i] / (double)sum->steps;
        all += mean;
        if (mean > sum->first_mass_top) {
            sum->first_mass_top = mean;
            sum->first_top_layer = i / c->n_heads;
            sum->first_top_head = i % c->n_heads;
        }
    }
    sum->first_mass = all / (double)n;
    sum->first_mass_even = even / (double)sum->steps;
}

/* The look-back measure of one query at position t (tokens [t + 1]):
 * weight per head on the positions after earlier copies of tokens[t] into
 * back[layer][head]; the even share of those positions into *even. Does
 * nothing when tokens[t] has no earlier copy; returns 1 when it had. */
static int add_lookback(const Model *m, const ForwardState *exact, size_t q, const int *tokens, size_t t,
                        double *back, double *even)
{
    const Config *c = &m->cfg;
    size_t n = 0;
    for (size_t j = 0; j + 1 < t; j++)
        n += tokens[j] == tokens[t];
    if (n == 0)
        return 0;
    for (size_t l = 0; l < c->n_layers; l++)
        for (size_t h = 0; h < c->n_heads; h++) {
            const float *p = exact->probs + ((l * c->n_heads + h) * exact->max_q + q) * c->max_seq_len;
            for (size_t j = 0; j + 1 < t; j++)
                if (tokens[j] == tokens[t])
                    back[l * c->n_heads + h] += p[j + 1];
        }
    *even += (double)n / (double)(t + 1);
    return 1;
}

static void summarise_lookback(const Config *c, const double *back, double even, QualitySummary *sum)
{
    if (!sum->lookback_queries)
        return;
    for (size_t i = 0; i < c->n_layers * c->n_heads; i++) {
        const double mean = back[i] / (double)sum->lookback_queries;
        if (mean > sum->lookback_top) {
            sum->lookback_top = mean;
            sum->lookback_layer = i / c->n_heads;
            sum->lookback_head = i % c->n_heads;
        }
    }
    sum->lookback_even = even / (double)sum->lookback_queries;
}

static double rel_err(const float *a, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

int quality_run(const Model *m, KvCache *lossy, const int *prompt, size_t prompt_len, const GenOptions *o,
                QualityFn fn, void *user, QualitySummary *sum, Err *e)
{
    const Config *c = &m->cfg;
    const size_t L = c->n_layers, q_dim = config_q_dim(c), n_gen = o->n_generate;
    Model exact_model = *m;
    exact_model.attend = ATTEND_NAIVE; /* the weights it needs come from the naive form */
    exact_model.bugs = BUG_NONE;
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *exact = kv_open("contiguous", &geo, e);
    int *forced = calloc(n_gen, sizeof(int));
    double *attn_err = calloc(L, sizeof(double)), *kept = calloc(L, sizeof(double));
    KvCell *cells = calloc(c->max_seq_len, sizeof *cells);
    double *first = calloc(L * c->n_heads, sizeof(double)), even = 0;
    double *back = calloc(L * c->n_heads, sizeof(double)), back_even = 0;
    int *seq = malloc((prompt_len + n_gen) * sizeof(int)); /* the tokens fed: the prompt, then the choices */
    Generator *gl = NULL, *gx = NULL;
    int rc = -1;
    if (!exact || !forced || !attn_err || !kept || !cells || !first || !back || !seq) {
        err_set(e, ERR_RUNTIME, "out of memory for the exact shadow");
        goto done;
    }
    GenOptions ol = *o, ox = *o;
    ol.keep_probs = 1, ol.force = NULL;
    ox.keep_probs = 1, ox.force = forced, ox.temperature = 0; /* the shadow is fed the lossy run's tokens */
    if (gen_init(&gl, m, lossy, prompt, 1, prompt_len, &ol, e) < 0 ||
        gen_init(&gx, &exact_model, exact, prompt, 1, prompt_len, &ox, e) < 0)
        goto done;

    *sum = (QualitySummary){ .first_divergence = n_gen, .min_mass_kept = 1.0 };
    memcpy(seq, prompt, prompt_len * sizeof(int));
    StepReport rl, rx;
    int sl, sx;
    while ((sl = gen_step(gl, &rl, e)) == 1) {
        if (!rl.sampled) /* a prefill chunk that chooses nothing: the shadow waits */
            continue;
        size_t g = gen_generated(gl) - 1;
        forced[g] = rl.sampled[0];
        do /* the shadow's next pass that chooses: its whole prefill, or one decode step */
            if ((sx = gen_step(gx, &rx, e)) != 1)
                goto done;
        while (!rx.sampled);
        const size_t tl = rl.n_new - 1, tx = rx.n_new - 1; /* the last query of each pass */
        for (size_t l = 0; l < L; l++) {
            kv_cells(lossy, l, 0, cells, rl.context);
            attn_err[l] = rel_err(rl.state->att_layers + (l * rl.state->max_q + tl) * q_dim,
                                  rx.state->att_layers + (l * rx.state->max_q + tx) * q_dim, q_dim);
            kept[l] = mass_kept(m, rx.state, cells, l, tx, rx.context);
            sum->max_attn_err = fmax(sum->max_attn_err, attn_err[l]);
            sum->min_mass_kept = fmin(sum->min_mass_kept, kept[l]);
        }
        add_first_mass(m, rx.state, tx, first);
        even += 1.0 / (double)rx.context;
        for (size_t q = 0; q < rx.n_new; q++) /* every query of the pass: a prefill's too */
            sum->lookback_queries += (size_t)add_lookback(m, rx.state, q, seq, rx.context - rx.n_new + q, back,
                                                          &back_even);
        seq[prompt_len + g] = rl.sampled[0];
        double logit_err = 0;
        for (size_t i = 0; i < c->vocab; i++)
            logit_err = fmax(logit_err, fabs((double)rl.logits[i] - rx.logits[i]));
        sum->max_logit_err = fmax(sum->max_logit_err, logit_err);
        if (rl.sampled[0] != rx.sampled[0] && sum->first_divergence == n_gen)
            sum->first_divergence = g;
        sum->steps = g + 1;
        QualityStep q = { .step = g, .context = rl.context, .n_layers = L, .attn_err = attn_err, .mass_kept = kept,
                          .logit_err = logit_err, .token = rl.sampled[0], .exact_token = rx.sampled[0] };
        if (fn && fn(user, &q)) {
            err_set(e, ERR_RUNTIME, "stopped");
            goto done;
        }
    }
    rc = sl < 0 ? -1 : 0;
    if (rc == 0 && sum->steps) {
        summarise_first_mass(c, first, even, sum);
        summarise_lookback(c, back, back_even, sum);
    }
done:
    gen_free(gl);
    gen_free(gx);
    kv_free(exact);
    free(forced);
    free(attn_err);
    free(kept);
    free(cells);
    free(first);
    free(back);
    free(seq);
    return rc;
}
