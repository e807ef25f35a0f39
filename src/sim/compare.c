/* compare.c: cached against uncached runs (compare.h). */
#include "sim/compare.h"

#include <math.h>
#include <string.h>

static size_t first_divergence(const int *a, const int *b, size_t batch, size_t n_gen)
{
    for (size_t g = 0; g < n_gen; g++)
        for (size_t s = 0; s < batch; s++)
            if (a[s * n_gen + g] != b[s * n_gen + g])
                return g;
    return n_gen;
}

/* Largest |a - b| over steps of n logits, and relative to each step's
 * largest |b| (absolute when that is 0). */
static double max_rel_logit_diff(const float *a, const float *b, size_t steps, size_t n, double *abs_out)
{
    double worst_rel = 0, worst_abs = 0;
    for (size_t s = 0; s < steps; s++) {
        double scale = 0, d = 0;
        for (size_t i = 0; i < n; i++) {
            scale = fmax(scale, fabs(b[s * n + i]));
            d = fmax(d, fabs((double)a[s * n + i] - b[s * n + i]));
        }
        worst_abs = fmax(worst_abs, d);
        worst_rel = fmax(worst_rel, scale > 0 ? d / scale : d);
    }
    *abs_out = worst_abs;
    return worst_rel;
}

void compare_generations(const int *tok_a, const int *tok_b, const float *logits_a, const float *logits_b,
                         size_t batch, size_t n_gen, size_t vocab, const Counters *total_a, const Counters *total_b,
                         GenComparison *out)
{
    out->first_divergence = first_divergence(tok_a, tok_b, batch, n_gen);
    out->same = out->first_divergence == n_gen;
    /* the step that first chooses differently was still fed the same tokens */
    size_t comparable = out->same ? n_gen : out->first_divergence + 1;
    out->logit_rel = max_rel_logit_diff(logits_a, logits_b, comparable, batch * vocab, &out->logit_abs);
    out->flop_ratio = (double)counters_total_flops(total_b) / (double)counters_total_flops(total_a);
    out->proj_ratio = (double)total_b->tokens_projected / (double)total_a->tokens_projected;
    out->time_ratio = total_a->seconds > 0 ? total_b->seconds / total_a->seconds : 0;
}

size_t compare_beams(const BeamResult *a, const BeamResult *b, double *worst)
{
    size_t n = a->n < b->n ? a->n : b->n;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        const Hypothesis *x = &a->hyps[i], *y = &b->hyps[i];
        if (x->len != y->len || x->finished != y->finished ||
            memcmp(x->tokens, y->tokens, x->len * sizeof *x->tokens) != 0)
            return i;
        *worst = fmax(*worst, fmax(fabs(x->score - y->score), fabs(x->logp - y->logp)));
    }
    return a->n == b->n ? a->n : n;
}
