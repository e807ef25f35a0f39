/* quality_report.h: `kvscope run --quality`: a lossy cache against its exact
 * shadow, step by step (see sim/quality.h). */
#ifndef KVSCOPE_REPORT_QUALITY_REPORT_H
#define KVSCOPE_REPORT_QUALITY_REPORT_H

#include "report/out_format.h"
#include "kv/cache.h"
#include "model/generate.h"

/* Print the quality table of generating with `cache` (one sequence) and the
 * summary to stdout, naming the attention structure (structure_describe)
 * in JSON; returns 0, or -1 with e set when a pass fails. */
int quality_report(const Model *m, KvCache *cache, const int *prompt, size_t plen, const GenOptions *o,
                   OutFormat fmt, const char *structure, Err *e);

#endif
