/* serve_workload.c: chat conversations and few-shot prompts for the
 * serving loop (serve_workload.h). */
#include "sim/serve_workload.h"

#include <gsl/gsl_randist.h>
#include <stdlib.h>
#include <string.h>

size_t serve_chat_users(const ServeOptions *o)
{
    const size_t turns = o->turns ? o->turns : 1;
    return (o->n_requests + turns - 1) / turns;
}

void serve_workload_lengths(const ServeOptions *o, size_t *shortest, size_t *longest)
{
    const size_t out_last = o->output_max ? o->output_max - 1 : 0;
    *shortest = o->prompt_min;
    *longest = o->prompt_max + out_last;
    if (o->workload == SERVE_WORKLOAD_CHAT) { /* the last turn: every message and every earlier output */
        const size_t turns = o->turns < o->n_requests ? o->turns : o->n_requests;
        *shortest = o->shared_prefix + o->prompt_min;
        *longest = o->shared_prefix + turns * o->prompt_max + (turns ? turns - 1 : 0) * o->output_max + out_last;
    } else if (o->workload == SERVE_WORKLOAD_FEWSHOT) {
        *shortest = o->shared_prefix + o->prompt_min;
        *longest = o->shared_prefix + o->prompt_max + out_last;
    }
}

static size_t uniform_in(gsl_rng *rng, size_t lo, size_t hi)
{
    return lo + gsl_rng_uniform_int(rng, hi - lo + 1);
}

static void draw_tokens(gsl_rng *rng, size_t vocab, int *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (int)gsl_rng_uniform_int(rng, vocab);
}

/* Chat: first turns arrive as a Poisson stream, each later one a pause
 * after the turn before it; lengths grow by the previous output and a
 * message. Every first turn starts with the same shared_prefix tokens (a
 * system prompt), then its message. */
static size_t draw_chat(const ServeOptions *o, size_t vocab, gsl_rng *rng, ServeRequest *req, size_t *pause)
{
    const size_t users = serve_chat_users(o);
    int *system = malloc((o->shared_prefix + 1) * sizeof *system);
    if (!system)
        return SIZE_MAX;
    draw_tokens(rng, vocab, system, o->shared_prefix);
    double t = 0;
    size_t bound = 0;
    for (size_t r = 0; r < o->n_requests; r++) {
        ServeRequest *q = &req[r];
        const size_t msg = uniform_in(rng, o->prompt_min, o->prompt_max);
        q->n_output = uniform_in(rng, o->output_min, o->output_max);
        if (r < users) {
            t += gsl_ran_exponential(rng, 1.0 / o->rate);
            q->arrival = (size_t)t, q->prompt_len = o->shared_prefix + msg;
            bound = q->arrival > bound ? q->arrival : bound;
        } else {
            pause[r] = 1 + gsl_rng_uniform_int(rng, SERVE_CHAT_PAUSE);
            q->arrival = SERVE_ARRIVAL_LATER;
            q->prompt_len = req[r - users].prompt_len + req[r - users].n_output + msg;
            bound += pause[r];
        }
        if (!(q->prompt = malloc(q->prompt_len * sizeof(int)))) {
            free(system);
            return SIZE_MAX;
        }
        memset(q->prompt, 0, q->prompt_len * sizeof(int));
        draw_tokens(rng, vocab, q->prompt + q->prompt_len - msg, msg);
        if (r < users)
            memcpy(q->prompt, system, o->shared_prefix * sizeof(int));
    }
    free(system);
    return bound;
}

/* Few-shot: preambles of shared_prefix tokens, the first half common to
 * all, then a question. */
static size_t draw_fewshot(const ServeOptions *o, size_t vocab, gsl_rng *rng, ServeRequest *req)
{
    const size_t S = o->shared_prefix;
    int *pre = malloc((SERVE_FEWSHOT_PREAMBLES * S + 1) * sizeof *pre);
    if (!pre)
        return SIZE_MAX;
    draw_tokens(rng, vocab, pre, S);
    for (size_t k = 1; k < SERVE_FEWSHOT_PREAMBLES; k++) {
        memcpy(pre + k * S, pre, S / 2 * sizeof *pre);
        draw_tokens(rng, vocab, pre + k * S + S / 2, S - S / 2);
    }
    draw_tokens(rng, vocab, pre + S / 2, S - S / 2); /* the first preamble's examples */
    double t = 0;
    size_t bound = 0;
    for (size_t r = 0; r < o->n_requests; r++) {
        ServeRequest *q = &req[r];
        t += gsl_ran_exponential(rng, 1.0 / o->rate);
        q->arrival = bound = (size_t)t;
        const size_t question = uniform_in(rng, o->prompt_min, o->prompt_max);
        q->n_output = uniform_in(rng, o->output_min, o->output_max);
        const size_t k = gsl_rng_uniform_int(rng, SERVE_FEWSHOT_PREAMBLES);
        q->prompt_len = S + question;
        if (!(q->prompt = malloc(q->prompt_len * sizeof(int)))) {
            free(pre);
            return SIZE_MAX;
        }
        memcpy(q->prompt, pre + k * S, S * sizeof(int));
        draw_tokens(rng, vocab, q->prompt + S, question);
    }
    free(pre);
    return bound;
}

size_t serve_workload_draw(const ServeOptions *o, size_t vocab, gsl_rng *rng, ServeRequest *req, size_t *pause)
{
    return o->workload == SERVE_WORKLOAD_CHAT ? draw_chat(o, vocab, rng, req, pause)
                                              : draw_fewshot(o, vocab, rng, req);
}

size_t serve_chat_next(const ServeOptions *o, ServeRequest *req, const size_t *pause, size_t r, size_t step)
{
    const size_t next = r + serve_chat_users(o);
    if (o->workload != SERVE_WORKLOAD_CHAT || next >= o->n_requests)
        return SIZE_MAX;
    const ServeRequest *q = &req[r];
    ServeRequest *n = &req[next];
    memcpy(n->prompt, q->prompt, q->prompt_len * sizeof(int));
    memcpy(n->prompt + q->prompt_len, q->output, q->n_output * sizeof(int)); /* sample 0's */
    n->arrival = step + pause[next];
    return next;
}
