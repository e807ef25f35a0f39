/* run_report.h: how `kvscope run` prints steps and summaries in each
 * output format (table for people, tsv for plots, json for programs). */
#ifndef KVSCOPE_REPORT_RUN_REPORT_H
#define KVSCOPE_REPORT_RUN_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "report/out_format.h"
#include "kv/cache.h"
#include "model/generate.h"

/* One pass as printed: the report plus which run it belongs to. */
typedef struct {
    const char *run; /* "cached" or "uncached" */
    StepReport rep;
    size_t n_seqs;
    int sampled0;    /* token chosen for sequence 0, or -1 */
} StepRow;

void report_header(FILE *f, OutFormat fmt);
void report_step(FILE *f, OutFormat fmt, const StepRow *row, json_t *steps_json);
/* The summary of one run; json goes into obj when fmt is OUT_JSON. */
void report_totals(FILE *f, OutFormat fmt, const char *run, const Counters *t, json_t *obj);
json_t *report_counters_json(const Counters *c);
/* The page pool of a paged cache (nothing for other layouts). */
void report_pages(FILE *f, OutFormat fmt, const KvCache *cache, json_t *root);

#endif
