/* speculate.c: greedy speculative decoding (speculate.h).
 *
 * The committed tokens are toks[0 .. n); the last of them is pending: the
 * target's cache holds the rows of toks[0 .. n-1), the draft's of at least
 * as many (fewer rows than tokens is the rule of every decode loop: a
 * token's row is written when it is fed). A round:
 *   1. the draft feeds what it has not yet seen and proposes d_1; then d_2
 *      from d_1, ... d_K: K passes of one row (the first may have two);
 *   2. the target feeds toks[n-1], d_1 .. d_K at positions n-1 .. n-1+K in
 *      one pass and chooses y_0 .. y_K, y_i from the row of the token
 *      before position n+i;
 *   3. j = how many d_i equal y_{i-1} in a row from i = 1; d_1 .. d_j and
 *      y_j are committed, and each cache keeps the rows of toks[0 .. n+j).
 * Near the end a round drafts fewer, so no token past n_generate is made. */
#include "sim/speculate.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/sample.h"
#include "model/sublayers.h"
#include "util/clock.h"

typedef struct {
    ForwardState ts, ds;
    float *tlog; /* [K + 1][vocab]: the target's logits of every row of a round */
    float *dlog; /* [vocab] */
    int *toks;   /* [plen + n_generate + K]: committed tokens, then the round's proposals */
    /* sampling only */
    const SpecSampling *smp;
    gsl_rng *rng;
    double *q;   /* [K][vocab]: the draft's distribution at each proposal */
    double *p;   /* [vocab]: the target's, one row at a time */
    float *sorted; /* [vocab]: scratch for the top-k threshold */
    const SpecSampling *watch; /* the options holding a watcher, or NULL */
} Spec;

int spec_accept(const double *p, const double *q, size_t n, int d, double u, double v, int *kept)
{
    if (u * q[d] < p[d]) { /* probability min(1, p(d) / q(d)) */
        *kept = 1;
        return d;
    }
    *kept = 0;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += p[i] > q[i] ? p[i] - q[i] : 0.0;
    double at = v * sum, run = 0.0;
    size_t last = 0;
    for (size_t i = 0; i < n; i++) {
        const double r = p[i] > q[i] ? p[i] - q[i] : 0.0;
        if (r <= 0.0)
            continue;
        last = i;
        run += r;
        if (at < run)
            return (int)i;
    }
    return (int)last; /* v * sum rounded past the total */
}

static int cmp_desc(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* probs [n] = softmax(logits / temperature) among the top_k largest
 * logits (0: all; ties with the k-th are in). */
static void distribution(Spec *s, const float *logits, size_t n, double *probs)
{
    const SpecSampling *m = s->smp;
    float floor = -INFINITY;
    if (m->top_k && m->top_k < n) {
        memcpy(s->sorted, logits, n * sizeof *logits);
        qsort(s->sorted, n, sizeof *s->sorted, cmp_desc);
        floor = s->sorted[m->top_k - 1];
    }
    float mx = -INFINITY;
    for (size_t i = 0; i < n; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        probs[i] = logits[i] >= floor ? exp(((double)logits[i] - mx) / m->temperature) : 0.0;
        sum += probs[i];
    }
    for (size_t i = 0; i < n; i++)
        probs[i] /= sum;
}

/* A token drawn from probs [n]. */
static int draw(Spec *s, const double *probs, size_t n)
{
    const double at = gsl_rng_uniform(s->rng);
    double run = 0.0;
    size_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (probs[i] <= 0.0)
            continue;
        last = i;
        run += probs[i];
        if (at < run)
            return (int)i;
    }
    return (int)last;
}

/* The token a model's logits choose: greedy, or drawn (its distribution
 * into probs). */
static int choose(Spec *s, const float *logits, size_t n, double *probs)
{
    if (!s->rng)
        return sample_greedy(logits, n);
    distribution(s, logits, n, probs);
    return draw(s, probs, n);
}

static void spec_free(Spec *s)
{
    forward_state_free(&s->ts);
    forward_state_free(&s->ds);
    free(s->tlog);
    free(s->dlog);
    free(s->toks);
    free(s->q);
    free(s->p);
    free(s->sorted);
    if (s->rng)
        gsl_rng_free(s->rng);
}

/* Tell the watcher, if there is one, what the round just did. */
static int tell(const Spec *s, SpecEvent ev, const SpecStats *st, Err *e)
{
    if (!s->watch)
        return 0;
    ev.st = st;
    const int rc = s->watch->watch(s->watch->watch_user, &ev);
    return rc ? err_set(e, ERR_RUNTIME, "speculative decoding stopped by its watcher (%d)", rc) : 0;
}

static int check(const Model *target, KvCache *tc, const Model *draft, KvCache *dc, size_t plen, size_t n_generate,
                 size_t k, Err *e)
{
    if (k < 1 || k > SPEC_MAX_K)
        return err_set(e, ERR_USAGE, "--speculate: %zu draft tokens a round (1 .. %d)", k, SPEC_MAX_K);
    if (target->cfg.vocab != draft->cfg.vocab)
        return err_set(e, ERR_USAGE, "the draft '%s' has %zu tokens, the target '%s' %zu: they must share one "
                       "vocabulary", draft->cfg.name, draft->cfg.vocab, target->cfg.name, target->cfg.vocab);
    if (target->cfg.attention == ATTN_MLA || draft->cfg.attention == ATTN_MLA)
        return err_set(e, ERR_USAGE, "--speculate: model '%s' uses MLA, whose decompressed tiles would keep rows "
                       "rolled back; speculative decoding runs GQA models",
                       target->cfg.attention == ATTN_MLA ? target->cfg.name : draft->cfg.name);
    if (plen == 0 || n_generate == 0)
        return err_set(e, ERR_USAGE, "speculative decoding needs a prompt and a token to generate");
    const size_t need = plen + n_generate - 1; /* the positions a plain run needs; a round never goes past */
    if (need > target->cfg.max_seq_len || need > draft->cfg.max_seq_len)
        return err_set(e, ERR_USAGE, "a prompt of %zu plus %zu generated tokens needs %zu positions; the target has "
                       "%zu, the draft %zu", plen, n_generate, need, target->cfg.max_seq_len,
                       draft->cfg.max_seq_len);
    if (kv_can_roll_back(tc, e) < 0 || kv_can_roll_back(dc, e) < 0)
        return err_wrap(e, "--speculate");
    return 0;
}

int speculate_greedy(const Model *target, KvCache *tc, const Model *draft, KvCache *dc, const int *prompt,
                     size_t plen, size_t n_generate, size_t k, int *out, SpecStats *st, Err *e)
{
    return speculate(target, tc, draft, dc, prompt, plen, n_generate, k, NULL, out, st, e);
}

int speculate(const Model *target, KvCache *tc, const Model *draft, KvCache *dc, const int *prompt, size_t plen,
              size_t n_generate, size_t k, const SpecSampling *smp, int *out, SpecStats *st, Err *e)
{
    memset(st, 0, sizeof *st);
    if (check(target, tc, draft, dc, plen, n_generate, k, e) < 0)
        return -1;
    const size_t vocab = target->cfg.vocab;
    Spec s = { 0 };
    int rc = -1;
    const double t0 = clock_seconds();
    if (forward_state_init(&s.ts, &target->cfg, plen > k + 1 ? plen : k + 1, 0, e) < 0 ||
        forward_state_init(&s.ds, &draft->cfg, plen > 2 ? plen : 2, 0, e) < 0)
        goto out;
    s.tlog = malloc((k + 1) * vocab * sizeof(float));
    s.dlog = malloc(vocab * sizeof(float));
    s.toks = malloc((plen + n_generate + k) * sizeof(int));
    if (smp && smp->temperature > 0) {
        s.smp = smp;
        s.rng = gsl_rng_alloc(gsl_rng_mt19937);
        s.q = malloc(k * vocab * sizeof(double));
        s.p = malloc(vocab * sizeof(double));
        s.sorted = malloc(vocab * sizeof(float));
        if (!s.rng || !s.q || !s.p || !s.sorted) {
            err_set(e, ERR_RUNTIME, "speculative decoding: out of memory");
            goto out;
        }
        gsl_rng_set(s.rng, smp->seed);
    }
    if (!s.tlog || !s.dlog || !s.toks) {
        err_set(e, ERR_RUNTIME, "speculative decoding: out of memory");
        goto out;
    }
    memcpy(s.toks, prompt, plen * sizeof(int));
    s.watch = smp && smp->watch ? smp : NULL;

    /* the prompt through both: the target chooses the first token */
    if (model_forward(target, &s.ts, tc, prompt, 1, plen, 0, s.tlog, &st->target, e) < 0 ||
        model_forward(draft, &s.ds, dc, prompt, 1, plen, 0, s.dlog, &st->draft, e) < 0)
        goto out;
    st->target_passes = st->draft_passes = 1;
    size_t n = plen, dlen = plen; /* committed tokens; rows the draft holds */
    s.toks[n++] = out[0] = choose(&s, s.tlog, vocab, s.p);
    st->generated = 1;
    const int eos = smp && smp->stop_at_eos ? target->cfg.eos_token : -1;
    st->at_eos = eos >= 0 && out[0] == eos;

    for (size_t round = 1; st->generated < n_generate && !st->at_eos; round++) {
        const size_t left = n_generate - st->generated;
        const size_t kr = k < left - 1 ? k : left - 1; /* proposals this round: at most left - 1 */
        /* 1. draft: toks[n .. n + kr) */
        for (size_t i = 0; i < kr; i++) {
            const size_t end = n + i; /* tokens known: committed and proposed so far; the last is pending */
            if (model_forward(draft, &s.ds, dc, s.toks + dlen, 1, end - dlen, dlen, s.dlog, &st->draft, e) < 0)
                goto out;
            st->draft_passes++;
            dlen = end;
            s.toks[end] = choose(&s, s.dlog, vocab, s.q ? s.q + i * vocab : NULL);
            const SpecEvent ev = { SPEC_EV_DRAFT, round, n, s.toks + n, i + 1, 0, -1, n - 1, dlen, NULL };
            if (tell(&s, ev, st, e) < 0)
                goto out;
        }
        /* 2. the target: the pending token and the proposals, one pass of kr + 1 rows */
        const size_t rows = kr + 1;
        if (model_forward(target, &s.ts, tc, s.toks + n - 1, 1, rows, n - 1, s.tlog + kr * vocab, &st->target,
                          e) < 0)
            goto out;
        if (kr) /* the logits of the rows before the last (model_forward gave the last) */
            sublayer_logits(target, &s.ts, kr, 1, s.tlog, &st->target);
        st->target_passes++;
        /* 3. the longest agreeing prefix, then the target's own choice */
        size_t j = 0;
        int next = -1;
        if (!s.rng) {
            while (j < kr && s.toks[n + j] == sample_greedy(s.tlog + j * vocab, vocab))
                j++;
            next = sample_greedy(s.tlog + j * vocab, vocab);
        } else {
            for (; j < kr; j++) { /* the acceptance rule, proposal by proposal */
                distribution(&s, s.tlog + j * vocab, vocab, s.p);
                const double u = gsl_rng_uniform(s.rng), v = gsl_rng_uniform(s.rng);
                int kept;
                const int t = spec_accept(s.p, s.q + j * vocab, vocab, s.toks[n + j], u, v, &kept);
                if (!kept) {
                    next = t;
                    break;
                }
            }
            if (j == kr) /* every proposal kept: one more from the target */
                next = choose(&s, s.tlog + kr * vocab, vocab, s.p);
        }
        const SpecEvent seen = { SPEC_EV_VERIFY, round, n, s.toks + n, kr, j, next, n + kr, dlen, NULL };
        if (tell(&s, seen, st, e) < 0)
            goto out;
        for (size_t i = 0; i < kr; i++) {
            st->proposed_at[i]++;
            st->accepted_at[i] += i < j;
        }
        st->drafted += kr;
        st->accepted += j;
        st->refused += j < kr;
        for (size_t i = 0; i < j; i++)
            out[st->generated + i] = s.toks[n + i];
        out[st->generated + j] = next;
        s.toks[n + j] = next;
        /* roll back: each cache keeps the rows of toks[0 .. n + j) */
        const size_t keep = n + j;
        st->target_rolled += (n + kr) - keep;
        if (kv_truncate(tc, 0, keep, &st->target, e) < 0)
            goto out;
        if (dlen > keep) {
            st->draft_rolled += dlen - keep;
            if (kv_truncate(dc, 0, keep, &st->draft, e) < 0)
                goto out;
            dlen = keep;
        }
        const SpecEvent back = { SPEC_EV_ROLLBACK, round, n, NULL, kr, j, next, keep, dlen, NULL };
        n += j + 1;
        for (size_t i = 0; i <= j && !st->at_eos; i++)
            if (out[st->generated + i] == eos && eos >= 0) { /* the tokens past it are dropped */
                st->at_eos = 1;
                memset(out + st->generated + i + 1, 0, (j - i) * sizeof *out);
                j = i;
            }
        st->generated += j + 1;
        if (tell(&s, back, st, e) < 0)
            goto out;
    }
    rc = 0;
out:
    st->seconds = clock_seconds() - t0;
    spec_free(&s);
    return rc;
}

/* The work of every pass, summed (generate's step callback). */
static int add_work(void *user, const StepReport *r)
{
    counters_add(user, &r->ctr);
    return 0;
}

int speculate_baseline(const Model *target, KvCache *c, const int *prompt, size_t plen, const GenOptions *go,
                       int *out, Counters *ctr, double *seconds, Err *e)
{
    memset(ctr, 0, sizeof *ctr);
    const double t0 = clock_seconds();
    const int rc = generate(target, c, prompt, 1, plen, go, out, add_work, ctr, e);
    *seconds = clock_seconds() - t0;
    return rc;
}
