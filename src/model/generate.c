#include "model/generate.h"

#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/sample.h"

size_t generate_positions(size_t prompt_len, size_t n_generate)
{
    return prompt_len + n_generate - 1;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    const Model *m;
    KvCache *cache;
    const GenOptions *o;
    size_t n_seqs, stride; /* seq holds [n_seqs][stride] tokens */
    int *seq, *input, *sampled;
    float *logits;
    void *sample_scratch;
    gsl_rng *rng;
    ForwardState fs;
} Run;

/* One forward pass over tokens [pos0, pos0 + n_new) of every sequence; if
 * `choose`, pick each sequence's next token into r->sampled. */
static int run_pass(Run *r, size_t step, Phase phase, size_t pos0, size_t n_new, int choose, StepFn fn,
                    void *user, Err *e)
{
    const size_t vocab = r->m->cfg.vocab;
    for (size_t b = 0; b < r->n_seqs; b++)
        memcpy(r->input + b * n_new, r->seq + b * r->stride + pos0, n_new * sizeof(int));

    StepReport rep = { .step = step, .phase = phase, .n_new = n_new, .pos0 = pos0, .context = pos0 + n_new };
    double t0 = now_seconds();
    if (model_forward(r->m, &r->fs, r->cache, r->input, r->n_seqs, n_new, pos0, r->logits, &rep.ctr, e) < 0)
        return -1;
    if (choose)
        for (size_t b = 0; b < r->n_seqs; b++) {
            const float *lg = r->logits + b * vocab;
            r->sampled[b] = r->o->temperature > 0
                                ? sample_topk(lg, vocab, r->o->temperature, r->o->top_k, r->rng, r->sample_scratch)
                                : sample_greedy(lg, vocab);
        }
    rep.ctr.seconds = now_seconds() - t0;
    if (r->cache) {
        rep.ctr.cache_bytes_used = kv_bytes_used(r->cache);
        rep.ctr.cache_bytes_reserved = kv_bytes_reserved(r->cache);
    }
    rep.sampled = choose ? r->sampled : NULL;
    rep.logits = r->logits;
    rep.state = &r->fs;
    int stop = fn ? fn(user, &rep) : 0;
    return stop ? err_set(e, ERR_RUNTIME, "stopped") : 0;
}

static void run_free(Run *r)
{
    free(r->seq);
    free(r->input);
    free(r->sampled);
    free(r->logits);
    free(r->sample_scratch);
    if (r->rng)
        gsl_rng_free(r->rng);
    forward_state_free(&r->fs);
}

int generate(const Model *m, KvCache *cache, const int *prompt, size_t n_seqs, size_t prompt_len,
             const GenOptions *o, int *out, StepFn fn, void *user, Err *e)
{
    const Config *c = &m->cfg;
    if (n_seqs == 0 || prompt_len == 0 || o->n_generate == 0)
        return err_set(e, ERR_USAGE, "generation needs at least one prompt token and one token to generate");
    size_t need = generate_positions(prompt_len, o->n_generate);
    if (need > c->max_seq_len)
        return err_set(e, ERR_USAGE,
                       "a prompt of %zu plus %zu generated tokens needs %zu positions; model '%s' has "
                       "max_seq_len %zu",
                       prompt_len, o->n_generate, need, c->name, c->max_seq_len);
    if (cache && cache->geo.n_seqs != n_seqs)
        return err_set(e, ERR_RUNTIME, "cache holds %zu sequences, batch is %zu", cache->geo.n_seqs, n_seqs);

    const size_t chunk = (o->chunk == 0 || o->chunk > prompt_len) ? prompt_len : o->chunk;
    const size_t max_new = cache ? chunk : need; /* uncached passes grow to the whole sequence */
    Run r = { .m = m, .cache = cache, .o = o, .n_seqs = n_seqs, .stride = need + 1 };
    r.seq = malloc(n_seqs * r.stride * sizeof(int));
    r.input = malloc(n_seqs * max_new * sizeof(int));
    r.sampled = malloc(n_seqs * sizeof(int));
    r.logits = malloc(n_seqs * c->vocab * sizeof(float));
    r.sample_scratch = malloc(sample_scratch_bytes(c->vocab));
    if (o->temperature > 0) {
        r.rng = gsl_rng_alloc(gsl_rng_mt19937);
        if (r.rng)
            gsl_rng_set(r.rng, (unsigned long)o->sample_seed);
    }
    if (!r.seq || !r.input || !r.sampled || !r.logits || !r.sample_scratch || (o->temperature > 0 && !r.rng)) {
        run_free(&r);
        return err_set(e, ERR_RUNTIME, "out of memory for generation buffers");
    }
    if (forward_state_init(&r.fs, c, n_seqs * max_new, o->keep_probs, e) < 0) {
        run_free(&r);
        return -1;
    }
    for (size_t b = 0; b < n_seqs; b++)
        memcpy(r.seq + b * r.stride, prompt + b * prompt_len, prompt_len * sizeof(int));

    int rc = 0;
    size_t step = 0, len = prompt_len; /* len: tokens known per sequence */
    for (size_t g = 0; g < o->n_generate && rc == 0; g++) {
        if (!cache) {
            rc = run_pass(&r, step++, g == 0 ? PHASE_PREFILL : PHASE_DECODE, 0, len, 1, fn, user, e);
        } else if (g == 0) {
            for (size_t pos = 0; pos < prompt_len && rc == 0; pos += chunk) {
                size_t n = prompt_len - pos < chunk ? prompt_len - pos : chunk;
                rc = run_pass(&r, step++, PHASE_PREFILL, pos, n, pos + n == prompt_len, fn, user, e);
            }
        } else {
            rc = run_pass(&r, step++, PHASE_DECODE, len - 1, 1, 1, fn, user, e);
        }
        for (size_t b = 0; b < n_seqs && rc == 0; b++) {
            r.seq[b * r.stride + len] = r.sampled[b];
            out[b * o->n_generate + g] = r.sampled[b];
        }
        len++;
    }
    run_free(&r);
    return rc;
}
