/* eval_ci.h: how sure an eval's figures are: 95% intervals for each
 * cache's bits per byte, KL and top-1 agreement, and for the difference of
 * two caches, by a bootstrap over the segments of the scored text
 * (stats/bootstrap.h: resampling whole segments with replacement, a fixed
 * seed, percentile intervals).
 *
 * Two caches are compared on the same segments and the same resamples (a
 * paired bootstrap): the interval is that of their difference, and they
 * differ when it leaves out 0. Nothing here prints. */
#ifndef KVSCOPE_SIM_EVAL_CI_H
#define KVSCOPE_SIM_EVAL_CI_H

#include <stddef.h>

#include "sim/eval.h"
#include "util/err.h"

#define EVAL_CI_LEVEL 0.95
#define EVAL_CI_RESAMPLES 2000
#define EVAL_CI_SEED 1UL
#define EVAL_CI_SEGMENTS 32 /* the default: about the fewest a 95% percentile interval rests on */

/* A figure and its interval. */
typedef struct {
    double value, lo, hi;
} EvalCi;

/* Which way a difference points: the interval of a difference holds 0
 * (EVAL_SAME), or lies wholly below or above it. */
typedef enum { EVAL_SAME, EVAL_BELOW, EVAL_ABOVE } EvalSide;

/* One cache's figures (KL and top-1 against the reference, results[0]). */
typedef struct {
    EvalCi bpb, kl, top1;
} EvalCacheCi;

/* The first cache minus the second, per figure. */
typedef struct {
    size_t a, b; /* indices into the results */
    EvalCi bpb, kl, top1;
} EvalPairCi;

typedef struct {
    size_t segments, resamples;
    unsigned long seed;
    double level;
    EvalCacheCi *cache; /* [n] */
    EvalPairCi *pair;   /* [n_pair] */
    size_t n, n_pair;
} EvalIntervals;

/* The intervals of results[n] (each with the same segments, EvalOptions.
 * segments >= 1) and of the differences pairs[n_pair] ({a, b}: a minus b).
 * ERR_USAGE when the results have no segments or a pair names a cache past
 * n; ERR_RUNTIME without memory. Free with eval_intervals_free either way. */
int eval_intervals(const EvalResult *results, size_t n, const size_t (*pairs)[2], size_t n_pair,
                   EvalIntervals *out, Err *e);

void eval_intervals_free(EvalIntervals *iv);

/* Where the interval of a difference lies against 0 (inclusive: a
 * zero-width interval at 0 is EVAL_SAME). */
EvalSide eval_ci_side(const EvalCi *d);

#endif
