/* serve_report.h: what `kvscope serve` prints (sim/serve.h runs it): a row
 * per step as the run goes (table: every `every` steps; tsv: all), then the
 * summary (table, or json with every step inside). */
#ifndef KVSCOPE_REPORT_SERVE_REPORT_H
#define KVSCOPE_REPORT_SERVE_REPORT_H

#include <stdio.h>

#include "report/out_format.h"
#include "sim/serve.h"

/* What the run was, for the header and the json. */
typedef struct {
    const char *model, *cache;
    const ServeOptions *o;
    size_t slots;
    int eos;              /* the model's end-of-text token, or -1 */
} ServeRun;

/* --prefix-cache and --workload's words: ERR_USAGE naming the accepted
 * ones for another. */
int serve_prefix_parse(const char *s, ServePrefix *out, Err *e);
int serve_workload_parse(const char *s, ServeWorkload *out, Err *e);
const char *serve_prefix_name(ServePrefix p);

void serve_report_header(FILE *f, OutFormat fmt, const ServeRun *run);
void serve_report_step(FILE *f, OutFormat fmt, const ServeStep *st);
void serve_report_summary(FILE *f, OutFormat fmt, const ServeRun *run, const ServeResult *r, const ServeSummary *s);

#endif
