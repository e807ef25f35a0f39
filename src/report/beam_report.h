/* beam_report.h: `kvscope run` on an encoder-decoder, printed: a row per
 * beam-search step, the hypotheses, the memory per beam (the encoder-decoder notes'
 * estimate recomputed, and kvscope's shared cross cache), what the run
 * measured, and the cached/uncached comparison. Tables and TSV go to
 * stdout; JSON members are added to a root object the caller prints. */
#ifndef KVSCOPE_REPORT_BEAM_REPORT_H
#define KVSCOPE_REPORT_BEAM_REPORT_H

#include <jansson.h>
#include <stddef.h>

#include "model/beam.h"
#include "report/out_format.h"
#include "sim/setup.h"

/* The step sink handed to beam_search: one run's label and format; steps
 * collects JSON rows (OUT_JSON). */
typedef struct {
    const char *label;
    OutFormat fmt;
    size_t src_len;
    json_t *steps;
} BeamSink;

void beam_report_step_header(OutFormat fmt);
/* beam_search's step callback; user is a BeamSink. Returns 0. */
int beam_report_step(void *user, const BeamStep *st);

/* The run's first lines (tables only): the model, the source (po says
 * whether it was given and its seed), the search and the cache
 * (cache_spec NULL: none). */
void beam_report_header(const Model *m, const int *src, const BeamOptions *bo, const PromptOpts *po,
                        const char *cache_spec);

/* Totals of each run that ran (NULL: did not), and the encoder's work. */
void beam_report_totals(OutFormat fmt, const BeamResult *cached, const BeamResult *uncached, size_t n_layers,
                        json_t *root);

/* The hypotheses of one run, best first (table). */
void beam_report_hyps(const char *run, const BeamResult *r, double alpha);
/* The same as a JSON array (new reference). */
json_t *beam_report_hyps_json(const BeamResult *r);

/* Memory per beam from config c for `width` beams; -1 with e set when the
 * shape overflows. */
int beam_report_memory(const Config *c, size_t width, json_t *root, OutFormat fmt, Err *e);

/* What the cached run measured: self cache per beam, the shared cross
 * cache, forks, drops and copies. */
void beam_report_measured(const KvCache *self, const BeamResult *r, json_t *root, OutFormat fmt);

/* The comparison (sim/compare.h's compare_beams gave first_diff and worst);
 * exact says whether the cache stores f32, so differences are faults. */
void beam_report_compare(OutFormat fmt, const BeamResult *cached, const BeamResult *uncached, size_t first_diff,
                         double worst, double tolerance, int exact, json_t *root);

#endif
