/* split_prefill.h: prefill a prompt in chunks (lesson 11, the teaching notes' "hard"
 * exercise). */
#ifndef KVSCOPE_EXERCISE_SPLIT_PREFILL_H
#define KVSCOPE_EXERCISE_SPLIT_PREFILL_H

#include <stddef.h>

#include "kv/cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "util/err.h"

/* Run the prefill of one sequence's prompt[0 .. len) through model_forward
 * in chunks of at most `chunk` tokens, appending every token's K and V rows
 * to `cache` (empty on entry). `s` is scratch for at most `chunk` token rows,
 * so a bigger pass fails. Write the logits of the prompt's last token to
 * logits[0 .. vocab). Returns 0, or -1 with e set. */
int split_prefill(const Model *m, ForwardState *s, KvCache *cache, const int *prompt, size_t len, size_t chunk,
                  float *logits, Err *e);

#endif
