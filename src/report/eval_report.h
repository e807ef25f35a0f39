/* eval_report.h: what `kvscope eval` prints: one row per cache (the exact
 * reference first) with bits per byte, perplexity and the distance from the
 * reference, each with its 95% interval (sim/eval_ci.h), and the paired
 * comparisons asked for; or the per-token curve for plots; or the scores of
 * each segment. */
#ifndef KVSCOPE_REPORT_EVAL_REPORT_H
#define KVSCOPE_REPORT_EVAL_REPORT_H

#include <stdio.h>

#include "report/out_format.h"
#include "sim/eval.h"
#include "sim/eval_ci.h"

/* The run being reported: what was streamed and how. */
typedef struct {
    const char *model;
    const char *weights;     /* the model's weights source */
    const char *text;        /* the text's name (a path, or "-") */
    const char *tokenizer;   /* how the text became tokens */
    size_t tokens, prefill;
    size_t text_bytes;
    size_t trained_ctx;      /* the model's max_seq_len before eval stretched it to the text */
    int reference_exact;     /* row 0 is the exact cache (not another --reference) */
    double seconds;          /* wall time of the whole run */
} EvalRun;

/* The summary: a table, tsv rows or a json document. specs[i] names
 * results[i]; used[i] is the cache's bytes in use at the end; iv holds the
 * intervals of the n caches and of the pairs to show (the json also lists
 * the segments, from results[0]). */
void eval_report(FILE *f, OutFormat fmt, const EvalRun *run, const char *const *specs, const EvalResult *results,
                 const size_t *used, size_t n, const EvalIntervals *iv);

/* Each segment's place in the text (its bytes, its predictions) and every
 * cache's bits per byte, KL and top-1 on it: tsv (a row per segment) or
 * json. Needs segments. */
void eval_report_segments(FILE *f, OutFormat fmt, const EvalRun *run, const char *const *specs,
                          const EvalResult *results, size_t n);

/* Every scored token's -ln p for each cache: tsv (position, then one
 * column per cache) or json (one array per cache). Needs per_position. */
void eval_report_positions(FILE *f, OutFormat fmt, const EvalRun *run, const char *const *specs,
                           const EvalResult *results, size_t n);

#endif
