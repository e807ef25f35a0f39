/* serve.h: many requests that arrive, grow and finish at different times,
 * served by one model over one page pool: continuous batching in the manner
 * of vLLM's scheduler, with the real model generating every token.
 *
 * Time is counted in engine steps. Each step:
 *   1. requests whose arrival step has come join the waiting queue;
 *   2. every running sequence that has its prompt in the cache decodes one
 *      token, oldest first; one that needs a new page when the pool has
 *      none preempts the newest running sequence (by recompute: its pages
 *      are given back and it waits again, its prompt and the tokens it has
 *      generated to be prefilled anew; or by swap: its rows are copied to
 *      host memory and copied back, not recomputed, when it runs again);
 *   3. what is left of the step's token budget goes to prompt chunks:
 *      sequences being prefilled first, then waiting requests, admitted
 *      only while a slot is free and the pool has the pages the whole
 *      prompt needs (prefix hits are not counted on, so this is cautious).
 * Greedy decoding: each request's tokens equal what it generates alone
 * with an exact cache (test_serve.c checks it, preempted ones included).
 *
 * Parallel sampling: a share of the requests fork into n samples. Such a
 * request is admitted only with a slot for every sample; its prompt is
 * prefilled once, then each sample is forked from it (kv_fork: the prompt's
 * pages shared, the partial last one copied on a sample's first write) and
 * decodes as a sequence of its own, in the slots and the token budget like
 * any other. Samples draw at temperature SERVE_SAMPLE_TEMPERATURE from a
 * uniform that depends only on (seed, request, sample, output position)
 * (serve_sample), so a sample recomputed after a preemption, or run alone,
 * draws the same tokens.
 *
 * A sequence is computed one at a time through model_forward_slots (the
 * step's tokens are a batch for the scheduler and the counters, not for the
 * matmuls). Nothing here prints. */
#ifndef KVSCOPE_SIM_SERVE_H
#define KVSCOPE_SIM_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "kv/cache.h"
#include "kv/radix.h"
#include "model/model.h"
#include "util/err.h"

/* How finished requests' rows are kept for later ones with the same
 * prefix. SERVE_PREFIX_PAGES, the default: the paged cache's block hash
 * maps a full page it already holds instead of writing it, yet the model
 * still runs every prompt token (memory saved, not compute). BLOCK: vLLM's
 * prefix caching, the same hash, and a request starts past the full pages
 * it finds (their tokens not run again). RADIX: SGLang's RadixAttention, a
 * radix tree over token ids (kv/radix.h) that shares any common prefix, a
 * partial last page included (copied on the request's first write into it),
 * and evicts least recently used leaves when the pool runs short. BLOCK and
 * RADIX leave at least the prompt's last token to run: its logits choose
 * the first output token. The block hash names a page only when one pass
 * fills it whole (a prompt chunk), so pages filled by decoding are never
 * found by it; the tree keeps every row a request held. */
typedef enum { SERVE_PREFIX_PAGES = 0, SERVE_PREFIX_BLOCK, SERVE_PREFIX_RADIX } ServePrefix;

/* What the requests ask. RANDOM: random prompts (shared_prefix tokens the
 * same for all). CHAT: conversations of `turns` requests; the first turn's
 * prompt is shared_prefix tokens common to all (a system prompt) and a
 * message, a later turn's the previous turn's whole text (its prompt and the tokens the model
 * generated) and a new message; it arrives 1 .. SERVE_CHAT_PAUSE steps after
 * the previous turn finished; first turns arrive at `rate`. FEWSHOT: every
 * prompt is one of SERVE_FEWSHOT_PREAMBLES preambles of shared_prefix tokens
 * (the first half common to all, then examples of its own) and a question
 * drawn from the prompt length range. */
typedef enum { SERVE_WORKLOAD_RANDOM = 0, SERVE_WORKLOAD_CHAT, SERVE_WORKLOAD_FEWSHOT } ServeWorkload;
#define SERVE_CHAT_PAUSE 4
#define SERVE_FEWSHOT_PREAMBLES 3

/* One request of a trace: when it arrives and how long it is. */
typedef struct {
    size_t arrival;       /* engine step */
    size_t prompt_len, output_len;
} ServeTraceEntry;

typedef struct {
    size_t n_requests;
    double rate;          /* arrivals per engine step (Poisson); > 0 */
    const ServeTraceEntry *trace; /* optional: these requests instead (n_requests of them, sorted by
                                     arrival); rate and the length ranges are then not used */
    size_t prompt_min, prompt_max; /* prompt lengths, uniform in [min, max] */
    size_t output_min, output_max; /* tokens each generates, uniform in [min, max] */
    size_t shared_prefix; /* the first tokens of every prompt are the same (a system prompt) */
    size_t token_budget;  /* tokens one step may run, decodes and prompt chunks together */
    int swap;             /* preempt by swap: the sequence's rows copied out to host memory and back
                             when it runs again (counted), instead of recomputed; f32 caches only */
    double fork_share;    /* share of requests that fork into n_samples (parallel sampling); 0 = none */
    size_t n_samples;     /* samples of a forked request, at least 2 when fork_share > 0 */
    uint64_t seed;        /* arrivals, lengths, prompts, which requests fork (gsl mt19937); samples' draws */
    ServePrefix prefix;
    ServeWorkload workload; /* not with a trace */
    size_t turns;         /* CHAT: requests a conversation has (its last may have fewer) */
    int stop_at_eos;      /* 1: a sequence that chooses the model's end-of-text token (cfg.eos_token)
                             ends there, before its output length; not CHAT (its turns' prompts hold
                             the whole previous output, their lengths drawn ahead) */
} ServeOptions;

/* Forked requests sample at this temperature (the others are greedy). */
#define SERVE_SAMPLE_TEMPERATURE 1.0

/* One request, as it went. Steps are engine steps from 0. */
typedef struct {
    size_t arrival, first_token, finished; /* steps */
    size_t prompt_len, n_output; /* n_output: tokens each sample generates */
    size_t n_samples;     /* 1, or the samples of a forked request */
    size_t preemptions;   /* of any of its samples */
    int *prompt;          /* [prompt_len] */
    int *output;          /* [n_samples][n_output] the tokens it generated (zeros past an
                             end-of-text stop) */
    size_t n_made;        /* the most tokens a sample generated: n_output, or fewer when every sample
                             stopped at the end-of-text token */
    size_t eos_samples;   /* samples that ended at the end-of-text token (stop_at_eos) */
} ServeRequest;

/* Where a request is. */
typedef enum { SERVE_FUTURE = 0, SERVE_WAITING, SERVE_RUNNING, SERVE_DONE } ServeState;

/* Who holds a page of the pool, in ServeStep.page_owner. */
#define SERVE_PAGE_FREE (-1)
#define SERVE_PAGE_SHARED (-2)
#define SERVE_PAGE_CACHED (-3) /* RADIX: held by the tree alone, for later requests */

/* One engine step. */
typedef struct {
    size_t step;
    size_t running, waiting; /* sequences: each sample of a forked request counts */
    size_t done;             /* requests, every sample finished */
    size_t decode_tokens;    /* tokens past a prompt this step ran, one a running sequence */
    size_t prefill_tokens;   /* prompt tokens (and, after a preemption, tokens run again) it ran */
    size_t preempted;     /* sequences preempted in this step */
    KvStats pool;         /* after the step */
    double seconds;
    size_t prefix_pages;  /* pages the prefix cache holds after the step: BLOCK and PAGES the pages the
                             hash names, RADIX the tree's */
    size_t prefix_evicted; /* pages the prefix cache gave up so far for room */
    size_t tree_nodes;    /* RADIX: nodes of the tree */
    /* during the step callback only (NULL in ServeResult.steps): */
    const int *page_owner;           /* [pool.pages_total] the request mapping each page, or SERVE_PAGE_* */
    const unsigned char *state;      /* [n_requests] ServeState of each request */
    const size_t *held;              /* [n_requests] positions each holds in the cache */
    const RadixView *tree;           /* RADIX: [tree_nodes] the tree, depth first (no token ids) */
} ServeStep;

typedef struct {
    ServeRequest *req;    /* [n_requests] */
    size_t n_requests;
    ServeStep *steps;     /* [n_steps] */
    size_t n_steps;
    size_t n_sequences;   /* a request's samples: 1 each, n_samples for a forked one */
    size_t forked_requests;
    size_t fork_shared_pages; /* prompt pages mapped into a sample at its fork instead of written */
    size_t preemptions, recomputed_tokens, prompt_tokens, generated_tokens;
    uint64_t swapped_out_bytes, swapped_in_bytes; /* with swap: rows copied to host memory and back */
    size_t prefix_hit_tokens; /* prompt tokens a request found cached at its first admission, not run */
    size_t eos_requests;  /* requests whose every sample ended at the end-of-text token */
    double seconds;
} ServeResult;

/* Called after each step; nonzero stops the run (returned as an error). */
typedef int (*ServeStepFn)(void *user, const ServeStep *st);

/* Read a trace: one request a line, `ARRIVAL PROMPT_LEN OUTPUT_LEN` (whole
 * numbers, arrivals in engine steps, sorted), `#` comments and blank lines
 * ignored. ERR_USAGE, naming the line, for anything else or no request at
 * all; ERR_RUNTIME for a file that cannot be read. *out is the caller's. */
int serve_trace_read(const char *path, ServeTraceEntry **out, size_t *n, Err *e);

/* Check o against the model's config and the cache before anything runs
 * (the weights need not be loaded): the cache must be paged with n_seqs
 * slots, no request may need more pages than the pool holds or more
 * positions than the model has, a forked request's samples must fit in the
 * slots, the arrivals must come within a million steps (expected,
 * for a rate) and the requests' records and a step's activations within
 * this machine's memory. ERR_USAGE with the reason. */
int serve_check(const Config *cfg, const KvCache *cache, const ServeOptions *o, Err *e);

/* Run the workload to its end (every request finished). The cache must be
 * empty. The run is bounded: the last arrival plus twice the steps every
 * request would take alone, one after another; a run that needs more has a
 * scheduling fault and fails (ERR_RUNTIME) rather than spin. Fill *out;
 * free it with serve_result_free, also after a failure. */
int serve_run(const Model *m, KvCache *cache, const ServeOptions *o, ServeStepFn fn, void *user, ServeResult *out,
              Err *e);
void serve_result_free(ServeResult *r);

/* What a finished run adds up to. Steps from each request's arrival to its
 * first token, and per output token after it; the pool over the steps. */
typedef struct {
    size_t ttft_median;       /* steps */
    double ttft_mean, tpot_mean;
    double ttft_median_ms, tpot_mean_ms; /* the same in wall time: the steps' own times added up */
    size_t peak_pages_used;
    size_t prefix_hit_pages, prefix_hit_rows;
    size_t cow_copies;        /* shared pages copied before a write: forked samples' partial last pages */
    double fragmentation;     /* empty rows in mapped pages over all mapped rows, summed over the steps */
} ServeSummary;

/* The token sample `sample` of forked request `request` draws at its output
 * position i from logits[n]: softmax at SERVE_SAMPLE_TEMPERATURE, with a
 * uniform hashed from (seed, request, sample, i) rather than taken from a
 * running stream. scratch holds sample_scratch_bytes(n). */
int serve_sample(const float *logits, size_t n, uint64_t seed, size_t request, size_t sample, size_t i,
                 void *scratch);

/* Fill *s from a finished run (at least one step); -1 when memory runs out. */
int serve_summarize(const ServeResult *r, ServeSummary *s);

#endif
