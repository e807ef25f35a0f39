/* eval.h: a cache judged by what it does to a model's predictions on a text.
 *
 * The tokens are streamed through the model as a deployment would: a
 * prefill of the first P tokens, then one token per decode step, each cache
 * keeping what its policy keeps. Every prediction from position P - 1 on is
 * scored: the negative log-likelihood of the token that follows, and, for
 * each cache after the first (the reference, normally an exact one), how
 * far its next-token distribution is from the reference's at that step: the
 * KL divergence KL(ref || cache), whether the top-1 token agrees, and the
 * largest logit difference. All caches step in lockstep on the same tokens,
 * so no logits are kept beyond one step. The scored predictions can be cut
 * into contiguous segments, each with its own sums, for the intervals of
 * sim/eval_ci.h. Nothing here prints. */
#ifndef KVSCOPE_SIM_EVAL_H
#define KVSCOPE_SIM_EVAL_H

#include <stddef.h>

#include "kv/cache.h"
#include "model/model.h"
#include "stats/counters.h"
#include "util/err.h"

/* A row that is no cache: the window recomputed, StreamingLLM's costly
 * baseline (its Figure 1 c). The lane's exact cache holds at most `window`
 * rows; when it is full it empties, and the last window - stride + 1 tokens
 * run again from position 0 (after the model's first token, for an add_bos
 * model): a pass of that many tokens every stride steps, and every
 * prediction reads between window - stride + 1 and window tokens, at
 * positions the model trained on. window 0: an ordinary cache's lane. */
typedef struct {
    size_t window, stride;
} EvalRecompute;

typedef struct {
    size_t prefill;          /* P: tokens of the first pass, >= 1 */
    const size_t *token_bytes; /* [n] bytes each token stands for (bits per byte); NULL = 1 each */
    int per_position;        /* keep every scored token's negative log-likelihood */
    size_t segments;         /* cut the scored predictions into this many segments (at most one
                                per prediction); 0: none */
    const EvalRecompute *recompute; /* [n_caches]: the lanes whose window is recomputed (their
                                caches exact, of window rows); NULL: every lane a cache */
} EvalOptions;

/* One segment of the scored predictions: its place and its sums. */
typedef struct {
    size_t first, count;     /* predictions first .. first + count - 1 (0: the one after the prefill) */
    size_t first_byte, end_byte; /* the text bytes of the tokens they predict: [first_byte, end_byte) */
    double bytes;            /* end_byte - first_byte */
    double nll;              /* sum of -ln p, nats */
    double kl;               /* sum of KL(reference || this), nats (0 for the reference) */
    double agree;            /* predictions whose greedy token agrees with the reference's */
} EvalSegment;

typedef struct {
    size_t scored;           /* predictions scored: n - P */
    double bytes;            /* bytes of the scored tokens */
    double nll;              /* sum of -ln p(next token), nats */
    double bits_per_byte;    /* nll / ln 2 / bytes */
    double perplexity;       /* exp(nll / scored) */
    /* against the reference (cache 0); zero for the reference itself */
    double kl;               /* mean KL(reference || this) per scored step, nats */
    double top1_agree;       /* share of steps whose greedy token agrees */
    double max_logit_err;    /* largest |logit - reference logit| */
    size_t reach;            /* the most positions a step spanned: from the oldest row the cache holds
                                after it (any layer, KV head) to its query, at the cache's positions */
    double *nll_at;          /* [scored] -ln p per scored token (per_position), else NULL; owned */
    EvalSegment *seg;        /* [n_seg] the segments in text order (EvalOptions.segments), else NULL; owned */
    size_t n_seg;
    Counters total;          /* the run's work */
} EvalResult;

/* Called after each step with the positions done so far (of n - 1); a
 * non-zero return stops the run (returned as an error). */
typedef int (*EvalProgressFn)(void *user, size_t done, size_t total);

/* Stream ids [n] through m with each of caches[n_caches] (empty, one
 * sequence, geometry from model_kv_geometry with max_seq_len >= n) and fill
 * results[n_caches]. m's config must allow n positions (max_seq_len >= n).
 * Fails with ERR_USAGE when n <= P or P is 0, ERR_RUNTIME when a pass
 * fails; free the results with eval_result_free either way. */
int eval_run(const Model *m, KvCache *const *caches, size_t n_caches, const int *ids, size_t n,
             const EvalOptions *o, EvalResult *results, EvalProgressFn progress, void *user, Err *e);

void eval_result_free(EvalResult *r);

/* Parse a row spec "recompute[:window=W,stride=S]" (defaults: W the model's
 * trained context, S an eighth of W): 1 and *out filled when spec names
 * it, 0 when spec is some cache's, -1 (ERR_USAGE) when its options are
 * wrong. */
int eval_recompute_parse(const char *spec, size_t context, EvalRecompute *out, Err *e);

/* StreamingLLM's baseline, which no cache is: at every step, the last
 * `window` tokens (fewer at the start) run from scratch, at positions 0 ..
 * window - 1, without a cache. For a model with add_bos, ids[0] must be its
 * bos_token (ERR_USAGE otherwise) and every window starts with it, as the
 * model trained: the first token and the last window - 1 tokens, as
 * llama.cpp's context shift keeps it. The same steps as eval_run with
 * prefill P: nll_at [n - P] gets -ln p of each next token, or, to sample
 * (stride > 1), of every stride-th from the first, NAN at the others. Costs
 * a window's forward per sampled step. */
int eval_recompute_window(const Model *m, const int *ids, size_t n, size_t prefill, size_t window, size_t stride,
                          double *nll_at, Err *e);

#endif
