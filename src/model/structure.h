/* structure.h: attention structure, a model option.
 *
 * Random weights attend almost uniformly, so every eviction policy looks
 * harmless on them. A structure adds the patterns trained models show, as
 * biases on the scaled attention scores (kernels.h, AttnBias), so that the
 * policies can be compared where they matter:
 *
 *   sink[=B]        +B on position 0: the first token draws attention (StreamingLLM's sink)
 *   local[=S]       -S per position of distance: nearby tokens weigh more (ALiBi's form)
 *   heavy[=N]       N heavy hitters, +heavy_bias each, spread evenly over the prompt:
 *   heavy_bias=B      a few tokens that many later queries attend to (H2O)
 *   retrieval[=B]   the prompt's last token is a question whose answer is at position
 *   needle=P          P (default 1): from it on, queries give +B to that one early token
 *
 * Defaults: sink 4, local 0.05, heavy 3 with bias 3, retrieval 8, needle 1.
 * Every query head of every layer gets the same biases. */
#ifndef KVSCOPE_MODEL_STRUCTURE_H
#define KVSCOPE_MODEL_STRUCTURE_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "util/err.h"

#define STRUCTURE_MAX_HEAVY 64

typedef struct {
    int sink, local, heavy, retrieval; /* which patterns are on */
    double sink_bias, local_slope, heavy_bias, retrieval_bias;
    size_t n_heavy, needle;
    /* placed for one prompt by structure_place */
    size_t heavy_pos[STRUCTURE_MAX_HEAVY];
    AttnBias bias;
} Structure;

/* Parse a comma-separated list of the items above ("sink,retrieval=10").
 * "none" or "" turns everything off. ERR_USAGE names the bad item. */
int structure_parse(const char *text, Structure *s, Err *e);

/* 1 when any pattern is on. */
int structure_on(const Structure *s);

/* Place the structure on a prompt of prompt_len tokens: the heavy hitters,
 * and the question (the last prompt position) of a retrieval; fills s->bias.
 * Fails when the prompt is too short for what was asked. */
int structure_place(Structure *s, size_t prompt_len, Err *e);

/* One line naming what is on, with its numbers and positions ("none" when
 * nothing is), into buf; returns buf. */
const char *structure_describe(const Structure *s, char *buf, size_t cap);

extern const char structure_help[];

#endif
