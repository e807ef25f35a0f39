#include "model/sample.h"

#include <math.h>
#include <stdlib.h>

int sample_greedy(const float *logits, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = i;
    return (int)best;
}

typedef struct {
    float logit;
    int id;
} Cand;

static int by_logit_desc(const void *a, const void *b)
{
    const Cand *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit < y->logit ? 1 : -1;
    return x->id - y->id; /* a total order, so every libc sorts alike */
}

size_t sample_scratch_bytes(size_t n)
{
    return n * sizeof(Cand);
}

int sample_topk(const float *logits, size_t n, double temperature, size_t top_k, gsl_rng *rng, void *scratch)
{
    return sample_topk_at(logits, n, temperature, top_k, gsl_rng_uniform(rng), scratch);
}

int sample_topk_at(const float *logits, size_t n, double temperature, size_t top_k, double u01, void *scratch)
{
    Cand *c = scratch;
    for (size_t i = 0; i < n; i++)
        c[i] = (Cand){ logits[i], (int)i };
    qsort(c, n, sizeof *c, by_logit_desc);
    size_t k = (top_k == 0 || top_k > n) ? n : top_k;
    double sum = 0.0;
    for (size_t i = 0; i < k; i++)
        sum += exp((c[i].logit - c[0].logit) / temperature);
    double u = u01 * sum, acc = 0.0;
    for (size_t i = 0; i < k; i++) {
        acc += exp((c[i].logit - c[0].logit) / temperature);
        if (u < acc)
            return c[i].id;
    }
    return c[k - 1].id;
}
