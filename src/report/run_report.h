/* run_report.h: how `kvscope run` prints steps and summaries in each
 * output format (table for people, tsv for plots, json for programs). */
#ifndef KVSCOPE_REPORT_RUN_REPORT_H
#define KVSCOPE_REPORT_RUN_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "report/out_format.h"
#include "kv/cache.h"
#include "model/generate.h"
#include "model/structure.h"
#include "sim/compare.h"
#include "sim/preset.h"
#include "sim/setup.h"
#include "stats/roofline.h"

/* One pass as printed: the report plus which run it belongs to. */
typedef struct {
    const char *run; /* "cached" or "uncached" */
    StepReport rep;
    size_t n_seqs;
    int sampled0;    /* token chosen for sequence 0, or -1 */
    const Roofs *roofs; /* the machine's roofs for the shares (NULL: none) */
} StepRow;

void report_header(FILE *f, OutFormat fmt);
void report_step(FILE *f, OutFormat fmt, const StepRow *row, json_t *steps_json);
/* The summary of one run; json goes into obj when fmt is OUT_JSON. */
void report_totals(FILE *f, OutFormat fmt, const char *run, const Counters *t, json_t *obj);
json_t *report_counters_json(const Counters *c);
/* A run's bandwidth, FLOPs per byte and shares of the roofs: one line
 * (table, with a note when above the DRAM roof), or the member "roofline"
 * of obj[run] (json: after report_totals). */
void report_roofline(FILE *f, OutFormat fmt, const char *run, const Counters *t, const Roofs *roofs, json_t *obj);
/* Where the roofs come from and what they are: one line (table), or root's
 * "roofs" member (json). */
void report_roofs(FILE *f, OutFormat fmt, const Roofs *roofs, json_t *root);
/* The page pool of a paged cache, the shifts of a shift cache (nothing for other layouts). */
void report_pages(FILE *f, OutFormat fmt, const KvCache *cache, json_t *root);

/* What a run's first lines say (tables). */
typedef struct {
    const Preset *preset;        /* NULL: none */
    const char *cache;           /* the spec, or what runs instead */
    size_t batch, plen;
    const PromptOpts *po;        /* given ids, or the random prompt's seed */
    const GenOptions *go;
    const Structure *structure;  /* an attention structure, when on */
} RunHeader;

/* The model, kernels, attention, cache, prompt and sampling of a run. */
void report_run_header(FILE *f, const Model *m, const RunHeader *h);

/* What a run generated, and from what. */
typedef struct {
    const Tokenizer *tok;  /* the model's, or NULL: ids only */
    const int *prompt;     /* [batch][plen] */
    size_t plen;
    const int *out;        /* [batch][stride] generated, n of them */
    size_t batch, n;
    size_t stride;         /* ids between sequences in out; 0: n */
    int at_eos;            /* 1: generation stopped at the end-of-text token eos, the n-th token */
    int eos;
} RunTokens;

/* The generated tokens: a line of ids per sequence and, with a tokenizer,
 * a line of text, and where generation stopped at the end-of-text token a
 * line that says so (table); or the "tokens" member of root, with a
 * tokenizer "pieces" and "text", and "stopped_at_eos" (json). */
void report_tokens(FILE *f, OutFormat fmt, const RunTokens *t, json_t *root);

/* The cached run against the uncached one (sim/compare.h): a few lines
 * (table), or the "compare" member of root (json). */
void report_compare(FILE *f, OutFormat fmt, const GenComparison *c, double tolerance, const Counters *cached,
                    const Counters *uncached, json_t *root);

#endif
