/* run_quality.h: `kvscope run --quality`: a lossy cache against its exact
 * shadow, step by step (see sim/quality.h). */
#ifndef KVSCOPE_APP_RUN_QUALITY_H
#define KVSCOPE_APP_RUN_QUALITY_H

#include "app/cli.h"
#include "kv/cache.h"
#include "model/generate.h"

/* Print the quality table of generating with `cache` (one sequence) and the
 * summary, naming the attention structure (structure_describe) in JSON;
 * returns an exit code (errors printed). */
int run_quality(const Model *m, KvCache *cache, const int *prompt, size_t plen, const GenOptions *o,
                OutFormat fmt, const char *structure);

#endif
