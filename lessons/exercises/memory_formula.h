/* memory_formula.h: the KV cache's size from a model's config (lesson 3). */
#ifndef KVSCOPE_EXERCISE_MEMORY_FORMULA_H
#define KVSCOPE_EXERCISE_MEMORY_FORMULA_H

#include <stddef.h>

#include "kernels/format.h"
#include "model/config.h"

/* Bytes one token adds to one layer's cache, every row stored in format f. */
size_t token_layer_bytes(const Config *c, Format f);

/* Bytes of the whole cache: every layer, `context` tokens, `batch` sequences. */
size_t cache_bytes(const Config *c, Format f, size_t context, size_t batch);

#endif
