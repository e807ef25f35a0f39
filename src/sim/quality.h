/* quality.h: what a lossy cache costs, measured against an exact shadow.
 *
 * The lossy run and an exact run (a contiguous f32 cache, naive attention)
 * step together in one process on the same prompt. The shadow is fed the
 * lossy run's tokens (teacher forcing), so at every step both see the same
 * inputs and any difference is the cache's doing. Sequence 0 is measured. */
#ifndef KVSCOPE_SIM_QUALITY_H
#define KVSCOPE_SIM_QUALITY_H

#include <stddef.h>

#include "model/generate.h"
#include "model/model.h"

typedef struct {
    size_t step;        /* generated token index, from 0 */
    size_t context;     /* positions the last token attended over */
    size_t n_layers;
    const double *attn_err;  /* [n_layers] ||a - a*|| / ||a*|| of the last token's attention output */
    const double *mass_kept; /* [n_layers] exact softmax weight on the positions the lossy cache holds,
                                mean over query heads (1 when it drops nothing) */
    double logit_err;   /* max |logit - exact logit| */
    int token;          /* the lossy run's choice */
    int exact_token;    /* the exact run's choice on the same inputs */
} QualityStep;

typedef int (*QualityFn)(void *user, const QualityStep *q);

typedef struct {
    size_t steps;
    size_t first_divergence; /* first step whose choices differ; == steps when none */
    double max_attn_err, min_mass_kept, max_logit_err;
    /* Attention sinks, in the exact run: the weight the generated tokens'
     * queries put on position 0, mean over steps, layers and heads; what an
     * even spread over the positions would give; and the head that puts the
     * most there (its mean over steps). */
    double first_mass, first_mass_even, first_mass_top;
    size_t first_top_layer, first_top_head;
    /* Heads that look back at an earlier copy: for a query (every query of
     * every exact pass, the prompt's included) whose token appeared before,
     * the exact weight on the positions right after those earlier copies
     * (what an induction head reads to predict the repeat; in the first
     * layer, only a token's own statistics can lead there).
     * The head with the most, its mean over such queries, and the share an
     * even spread would give them; lookback_queries: how many queries had
     * an earlier copy (0: the text repeats nothing, the rest is 0). */
    double lookback_top, lookback_even;
    size_t lookback_layer, lookback_head, lookback_queries;
} QualitySummary;

/* Generate o->n_generate tokens from prompt [prompt_len] with `lossy` (an
 * empty one-sequence cache) and the exact shadow, calling fn after each
 * step. m's attention form is used for the lossy run. */
int quality_run(const Model *m, KvCache *lossy, const int *prompt, size_t prompt_len, const GenOptions *o,
                QualityFn fn, void *user, QualitySummary *sum, Err *e);

#endif
