/* compare.h: a cached run against an uncached one: where their choices
 * first part and how far their numbers drift while they still agree. The
 * equivalence the project guards (DESIGN.md §4) is decided on these. */
#ifndef KVSCOPE_SIM_COMPARE_H
#define KVSCOPE_SIM_COMPARE_H

#include <stddef.h>

#include "model/beam.h"
#include "stats/counters.h"

/* Two generations of the same prompts: tokens [batch][n_gen] and the logits
 * each token was chosen from [n_gen][batch][vocab]. */
typedef struct {
    size_t first_divergence; /* first step whose tokens differ in any sequence; n_gen when none */
    int same;                /* the tokens are identical */
    double logit_abs, logit_rel; /* largest |a - b| (and over the step's largest |b|) on comparable steps */
    double proj_ratio, flop_ratio, time_ratio; /* b's over a's; time 0 when a took no time */
} GenComparison;

/* Compare run a (cached) with run b (the uncached reference). Only steps fed
 * the same tokens are comparable: up to and including the first step that
 * chooses differently. */
void compare_generations(const int *tok_a, const int *tok_b, const float *logits_a, const float *logits_b,
                         size_t batch, size_t n_gen, size_t vocab, const Counters *total_a, const Counters *total_b,
                         GenComparison *out);

/* The first hypothesis whose tokens or end differ between a and b, or n
 * when none does (then a->n == b->n == n); *worst gets the largest score or
 * log-probability difference over the hypotheses compared. */
size_t compare_beams(const BeamResult *a, const BeamResult *b, double *worst);

#endif
