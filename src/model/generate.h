/* generate.h: autoregressive generation, with a cache or without.
 *
 * Generating N tokens from a prompt of P takes N forward passes: the first
 * (prefill) reads the prompt and yields token 1; each decode step feeds the
 * token just chosen and yields the next. With a cache a pass projects only
 * its new tokens: P, then 1, 1, ... Without one, pass s re-runs all P + s
 * tokens, as the source document's generate_without_cache does. */
#ifndef KVSCOPE_MODEL_GENERATE_H
#define KVSCOPE_MODEL_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "kv/cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "stats/counters.h"

typedef struct {
    size_t n_generate;   /* tokens to generate, >= 1 */
    size_t chunk;        /* prefill in chunks of this many tokens; 0 = all at once */
    double temperature;  /* 0 = greedy */
    size_t top_k;        /* with temperature > 0: sample among the top k (0 = all) */
    uint64_t sample_seed;
    int keep_probs;      /* record attention weights and outputs of sequence 0 (ForwardState) */
    const int *force;    /* optional [n_seqs][n_generate]: feed these tokens instead of the ones chosen
                            (teacher forcing; StepReport.sampled still says what was chosen). Read
                            when each token is appended, so a caller may fill it as it goes. */
    size_t n_forks;      /* with a cache: the last n_forks sequences are not prefilled; when the prompt is in
                            they are forked from sequence 0 (kv_fork: a paged cache shares its pages and
                            copies one on its first write) and choose from its logits. Their prompts are
                            sequence 0's. 0 = none; fewer than n_seqs */
    int stop_at_eos;     /* 1: generation ends after the pass in which every sequence has chosen the
                            model's end-of-text token (cfg.eos_token, when it has one), that token the
                            last generated; 0: it runs to n_generate */
} GenOptions;

typedef enum { PHASE_PREFILL, PHASE_DECODE } Phase;

typedef struct {
    size_t step;          /* forward pass number, from 0 */
    Phase phase;
    size_t n_new;         /* tokens this pass ran, per sequence */
    size_t pos0;          /* position of the first of them */
    size_t context;       /* positions attention saw for the last token (= cache length after, when cached) */
    const int *sampled;   /* [n_seqs] tokens chosen by this pass; NULL for a prefill chunk that is not last */
    int at_eos;           /* 1: with stop_at_eos, every sequence has now chosen the end-of-text token
                             (this pass or before): the last pass of the generation */
    const float *logits;  /* [n_seqs][vocab] logits of the last token */
    const ForwardState *state; /* activations and, with keep_probs, attention weights */
    Counters ctr;         /* work of this pass */
} StepReport;

/* Called after every pass; a non-zero return stops generation (returned). */
typedef int (*StepFn)(void *user, const StepReport *r);

/* A generation that advances one forward pass at a time (the interactive
 * view steps it; generate() runs it to the end). */
typedef struct Generator Generator;

/* Same contract as generate(); *out receives a generator the caller frees
 * with gen_free. The cache (NULL = uncached) must outlive it. */
int gen_init(Generator **out, const Model *m, KvCache *cache, const int *prompt, size_t n_seqs, size_t prompt_len,
             const GenOptions *o, Err *e);
/* Run the next pass and describe it in *rep (its pointers stay valid until
 * the next call). Returns 1 after a pass, 0 when all tokens are generated
 * (rep untouched), -1 on error. */
int gen_step(Generator *g, StepReport *rep, Err *e);
/* Tokens of sequence seq so far (prompt, then generated); *len is set. */
const int *gen_sequence(const Generator *g, size_t seq, size_t *len);
/* Tokens generated per sequence so far. */
size_t gen_generated(const Generator *g);
/* 1 when generation ended at the end-of-text token (GenOptions.stop_at_eos). */
int gen_at_eos(const Generator *g);
void gen_free(Generator *g);

/* Generate o->n_generate tokens for each of n_seqs prompts of prompt_len
 * (fewer with stop_at_eos: the step function sees at_eos on the last pass;
 * out's later tokens are left as they were).
 *   prompt: [n_seqs][prompt_len]; out: [n_seqs][n_generate]
 *   cache:  NULL for the uncached path; otherwise an empty cache whose
 *           geometry has n_seqs sequences (it is filled, not reset, here).
 * Fails with ERR_USAGE, before any work, when prompt_len + n_generate - 1
 * positions exceed max_seq_len. */
int generate(const Model *m, KvCache *cache, const int *prompt, size_t n_seqs, size_t prompt_len,
             const GenOptions *o, int *out, StepFn fn, void *user, Err *e);

/* Positions a run needs: the last generated token is never fed back. */
size_t generate_positions(size_t prompt_len, size_t n_generate);

#endif
