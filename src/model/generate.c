#include "model/generate.h"

#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "model/sample.h"
#include "util/checked.h"
#include "util/clock.h"

struct Generator {
    const Model *m;
    KvCache *cache;
    GenOptions o;
    size_t n_seqs, prompt_len, chunk;
    size_t stride;    /* seq holds [n_seqs][stride] tokens */
    int *seq;         /* prompt, then the tokens generated */
    int *input;       /* [n_seqs][max_new] the tokens of one pass */
    int *sampled;     /* [n_seqs] */
    float *logits;    /* [n_seqs][vocab] */
    void *sample_scratch;
    gsl_rng *rng;     /* sampling only */
    ForwardState fs;
    size_t step;      /* passes run */
    size_t cached;    /* positions already in the cache */
    size_t len;       /* tokens known per sequence */
    size_t generated; /* tokens chosen per sequence */
    unsigned char *ended; /* [n_seqs] 1: the sequence has chosen the end-of-text token (stop_at_eos) */
    int at_eos;       /* every sequence has: no pass more */
};

size_t generate_positions(size_t prompt_len, size_t n_generate)
{
    return size_add_sat(prompt_len, n_generate) - 1; /* saturated: more positions than any model has */
}

void gen_free(Generator *g)
{
    if (!g)
        return;
    free(g->seq);
    free(g->input);
    free(g->sampled);
    free(g->ended);
    free(g->logits);
    free(g->sample_scratch);
    if (g->rng)
        gsl_rng_free(g->rng);
    forward_state_free(&g->fs);
    free(g);
}

int gen_init(Generator **out, const Model *m, KvCache *cache, const int *prompt, size_t n_seqs, size_t prompt_len,
             const GenOptions *o, Err *e)
{
    const Config *c = &m->cfg;
    *out = NULL;
    if (c->architecture != ARCH_DECODER)
        return err_set(e, ERR_USAGE, "model '%s' is an encoder-decoder: it generates by beam search (kvscope run "
                       "--model %s --beams W)", c->name, c->name);
    if (n_seqs == 0 || prompt_len == 0 || o->n_generate == 0)
        return err_set(e, ERR_USAGE, "generation needs at least one prompt token and one token to generate");
    size_t need = generate_positions(prompt_len, o->n_generate);
    if (need > c->max_seq_len && !(cache && kv_shifts(cache))) /* a shifting cache keeps positions inside */
        return err_set(e, ERR_USAGE,
                       "a prompt of %zu plus %zu generated tokens needs %zu positions; model '%s' has "
                       "max_seq_len %zu",
                       prompt_len, o->n_generate, need, c->name, c->max_seq_len);
    if (cache && kv_check_room(cache, need, e) < 0) /* before any pass: nothing half done */
        return -1;
    if (cache && cache->geo.n_seqs != n_seqs)
        return err_set(e, ERR_RUNTIME, "cache holds %zu sequences, batch is %zu", cache->geo.n_seqs, n_seqs);
    if (o->n_forks >= n_seqs)
        return err_set(e, ERR_USAGE, "%zu forks need more than %zu sequences", o->n_forks, n_seqs);

    Generator *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(e, ERR_RUNTIME, "out of memory");
    g->m = m, g->cache = cache, g->o = *o, g->n_seqs = n_seqs, g->prompt_len = prompt_len;
    g->chunk = (o->chunk == 0 || o->chunk > prompt_len) ? prompt_len : o->chunk;
    size_t max_pass = cache ? kv_max_pass(cache) : 0;
    if (max_pass && g->chunk > max_pass) /* a ring holds its window plus one pass: prefill in pieces that fit */
        g->chunk = max_pass;
    g->stride = need + 1;
    g->len = prompt_len;
    const size_t max_new = cache ? g->chunk : need; /* uncached passes grow to the whole sequence */
    g->seq = malloc(n_seqs * g->stride * sizeof(int));
    g->input = malloc(n_seqs * max_new * sizeof(int));
    g->sampled = malloc(n_seqs * sizeof(int));
    g->ended = calloc(n_seqs, 1);
    g->logits = malloc(n_seqs * c->vocab * sizeof(float));
    g->sample_scratch = malloc(sample_scratch_bytes(c->vocab));
    if (o->temperature > 0) {
        g->rng = gsl_rng_alloc(gsl_rng_mt19937);
        if (g->rng)
            gsl_rng_set(g->rng, (unsigned long)o->sample_seed);
    }
    if (!g->seq || !g->input || !g->sampled || !g->ended || !g->logits || !g->sample_scratch || (o->temperature > 0 && !g->rng)) {
        gen_free(g);
        return err_set(e, ERR_RUNTIME, "out of memory for generation buffers");
    }
    if (forward_state_init(&g->fs, c, n_seqs * max_new, o->keep_probs, e) < 0) {
        gen_free(g);
        return -1;
    }
    for (size_t b = 0; b < n_seqs; b++) /* a fork's prompt is sequence 0's */
        memcpy(g->seq + b * g->stride, prompt + (b + o->n_forks < n_seqs ? b : 0) * prompt_len,
               prompt_len * sizeof(int));
    *out = g;
    return 0;
}

int gen_step(Generator *g, StepReport *rep, Err *e)
{
    if (g->generated == g->o.n_generate || g->at_eos)
        return 0;
    /* which tokens this pass runs: a prefill chunk, one decode token, or
     * (uncached) the whole sequence from position 0 */
    size_t pos0, n_new;
    Phase phase = g->generated == 0 ? PHASE_PREFILL : PHASE_DECODE;
    if (!g->cache) {
        pos0 = 0, n_new = g->len;
    } else if (g->cached < g->prompt_len) {
        pos0 = g->cached;
        n_new = g->prompt_len - pos0 < g->chunk ? g->prompt_len - pos0 : g->chunk;
    } else {
        pos0 = g->len - 1, n_new = 1;
    }
    const int choose = pos0 + n_new == g->len;
    const size_t vocab = g->m->cfg.vocab;
    for (size_t b = 0; b < g->n_seqs; b++)
        memcpy(g->input + b * n_new, g->seq + b * g->stride + pos0, n_new * sizeof(int));

    memset(rep, 0, sizeof *rep);
    rep->step = g->step++, rep->phase = phase, rep->n_new = n_new, rep->pos0 = pos0, rep->context = pos0 + n_new;
    double t0 = clock_seconds();
    /* forks wait out the prefill: they are made from sequence 0 when it is in */
    const size_t forks = g->cache && phase == PHASE_PREFILL ? g->o.n_forks : 0, run = g->n_seqs - forks;
    if (model_forward(g->m, &g->fs, g->cache, g->input, run, n_new, pos0, g->logits, &rep->ctr, e) < 0)
        return -1;
    for (size_t b = run; choose && b < g->n_seqs; b++) {
        if (kv_fork(g->cache, 0, b, &rep->ctr, e) < 0)
            return -1;
        memcpy(g->logits + b * vocab, g->logits, vocab * sizeof(float));
    }
    if (choose)
        for (size_t b = 0; b < g->n_seqs; b++) {
            const float *lg = g->logits + b * vocab;
            g->sampled[b] = g->o.temperature > 0 ? sample_topk(lg, vocab, g->o.temperature, g->o.top_k, g->rng,
                                                               g->sample_scratch)
                                                 : sample_greedy(lg, vocab);
        }
    rep->ctr.seconds = clock_seconds() - t0;
    if (g->cache) {
        g->cached = pos0 + n_new;
        rep->ctr.cache_bytes_used = kv_bytes_used(g->cache);
        rep->ctr.cache_bytes_reserved = kv_bytes_reserved(g->cache);
    }
    if (choose) {
        for (size_t b = 0; b < g->n_seqs; b++)
            g->seq[b * g->stride + g->len] =
                g->o.force ? g->o.force[b * g->o.n_generate + g->generated] : g->sampled[b];
        g->len++;
        g->generated++;
        const int eos = g->m->cfg.eos_token;
        if (g->o.stop_at_eos && eos >= 0) {
            int all = 1;
            for (size_t b = 0; b < g->n_seqs; b++) {
                g->ended[b] |= g->sampled[b] == eos;
                all &= g->ended[b];
            }
            g->at_eos = all;
        }
    }
    rep->at_eos = g->at_eos;
    rep->sampled = choose ? g->sampled : NULL;
    rep->logits = g->logits;
    rep->state = &g->fs;
    return 1;
}

const int *gen_sequence(const Generator *g, size_t seq, size_t *len)
{
    *len = g->len;
    return g->seq + seq * g->stride;
}

size_t gen_generated(const Generator *g)
{
    return g->generated;
}

int gen_at_eos(const Generator *g)
{
    return g->at_eos;
}

int generate(const Model *m, KvCache *cache, const int *prompt, size_t n_seqs, size_t prompt_len,
             const GenOptions *o, int *out, StepFn fn, void *user, Err *e)
{
    Generator *g;
    if (gen_init(&g, m, cache, prompt, n_seqs, prompt_len, o, e) < 0)
        return -1;
    StepReport rep;
    int rc;
    while ((rc = gen_step(g, &rep, e)) == 1) {
        if (rep.sampled)
            for (size_t b = 0; b < n_seqs; b++)
                out[b * o->n_generate + gen_generated(g) - 1] = rep.sampled[b];
        if (fn && fn(user, &rep)) {
            rc = err_set(e, ERR_RUNTIME, "stopped");
            break;
        }
    }
    gen_free(g);
    return rc < 0 ? -1 : 0;
}
