/* calc_report.h: what `kvscope calc` computes for one model, and how it is
 * written out: a table for people, tsv for plots, json for programs.
 *
 * cmd_calc.c fills a CalcReport from the options; the printers here only
 * choose what to show and spell out the formulas with the config's numbers
 * substituted (calc_text.h). */
#ifndef KVSCOPE_REPORT_CALC_REPORT_H
#define KVSCOPE_REPORT_CALC_REPORT_H

#include <stddef.h>

#include "kernels/format.h"
#include "model/config.h"
#include "model/memory.h"
#include "util/err.h"

/* One format's figures: the model's own cache, its comparison (MHA
 * equivalent or MLA decompressed) and, with a sliding window, the ring. */
typedef struct {
    Format f;
    KvBytes own;
    KvBytes ref;    /* valid when the report has a reference shape and ref_counted */
    int ref_counted;  /* 0: the reference's bytes pass what a size_t counts (shown as such) */
    KvBytes window; /* valid when the window is shorter than the context */
} CalcRow;

typedef struct {
    Config cfg;
    size_t context, batch;
    size_t window_positions; /* positions a ring keeps; == context without a window */
    KvShape shape, ref_shape;
    int has_ref;
    CalcRow rows[FMT_COUNT];
    size_t n_rows;
    Format uncounted[FMT_COUNT]; /* --all-formats: formats whose own total passes 2^64 bytes, left out */
    size_t n_uncounted;
    size_t machine_bytes; /* 0 when unknown */
} CalcReport;

/* The report as a table on stdout: every figure and how it adds up when
 * there is one row, one line per format when there are several. */
void calc_print_table(const CalcReport *r);

/* The report as tsv on stdout: a header line, then one line per row. */
void calc_print_tsv(const CalcReport *r);

/* The report as one indented JSON object on stdout. Fails (ERR_RUNTIME,
 * nothing printed) only when out of memory. */
int calc_print_json(const CalcReport *r, Err *e);

#endif
