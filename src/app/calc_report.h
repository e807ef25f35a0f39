/* calc_report.h: what `kvscope calc` computes for one model, and how it is
 * written out: a table for people, tsv for plots, json for programs.
 *
 * cmd_calc.c fills a CalcReport from the options; the printers here only
 * choose what to show and spell out the formulas with the config's numbers
 * substituted. The small writers at the end (numbers with separators, byte
 * counts, JSON sizes, the config as JSON) are shared with calc_list.c. */
#ifndef KVSCOPE_APP_CALC_REPORT_H
#define KVSCOPE_APP_CALC_REPORT_H

#include <jansson.h>
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
    KvBytes ref;    /* valid when the report has a reference shape */
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

/* --- writers shared with calc_list.c ---------------------------------------- */

/* Text short enough to return by value, so that several can sit in one
 * printf: calc_num(x).s lives until the end of the full expression. */
typedef struct {
    char s[32];
} CalcText;

/* v with thousands separators: "163,840". */
CalcText calc_num(size_t v);

/* A byte count for people: "4.75 GiB" (cli_bytes). */
CalcText calc_human(size_t bytes);

/* v as a JSON integer, or a real when it is beyond a json_int_t. */
json_t *calc_json_size(size_t v);

/* The config's shape as a JSON object (the MLA dimensions only for MLA). */
json_t *calc_json_config(const Config *c);

/* Print v indented, in insertion order, then a newline; takes v's reference
 * (a NULL v fails). Fails (ERR_RUNTIME, nothing printed) when out of memory. */
int calc_json_print(json_t *v, Err *e);

#endif
