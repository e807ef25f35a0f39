/* sample.h: choosing the next token from logits. */
#ifndef KVSCOPE_MODEL_SAMPLE_H
#define KVSCOPE_MODEL_SAMPLE_H

#include <gsl/gsl_rng.h>
#include <stddef.h>

/* Index of the largest logit; ties go to the lowest index. */
int sample_greedy(const float *logits, size_t n);

/* Draw from softmax(logits / temperature) over the top_k largest (0 = all),
 * using rng. scratch holds n floats and n ints' worth of bytes. */
int sample_topk(const float *logits, size_t n, double temperature, size_t top_k, gsl_rng *rng, void *scratch);

/* The same with the uniform draw u01 in [0, 1) given: a caller that must
 * make the same choice again (a sequence recomputed) derives it from a
 * counter instead of a running stream. */
int sample_topk_at(const float *logits, size_t n, double temperature, size_t top_k, double u01, void *scratch);

/* Bytes of scratch sample_topk needs for a vocabulary of n. */
size_t sample_scratch_bytes(size_t n);

#endif
