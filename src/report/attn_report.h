/* attn_report.h: what `kvscope eval --attention-stats` prints: per layer and
 * head, the mean attention weight on position 0 and the share of the mass
 * on the heaviest 5% of keys (sim/attn_stats.h), then the sink heads. */
#ifndef KVSCOPE_REPORT_ATTN_REPORT_H
#define KVSCOPE_REPORT_ATTN_REPORT_H

#include <stdio.h>

#include "report/out_format.h"
#include "sim/attn_stats.h"

/* What was measured: the model, its weights, the text and the windows. */
typedef struct {
    const char *model, *weights, *text;
    int bos;                 /* the model's fixed first token, -1: none */
    AttnStatsOpts opts;
} AttnRun;

void attn_report(FILE *f, OutFormat fmt, const AttnRun *run, const AttnStats *s);

#endif
