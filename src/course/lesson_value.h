/* lesson_value.h: read one number out of a kvscope command's output.
 *
 * A lesson's check block and a quiz question name a command (which must
 * print --format json or tsv) and an expression that picks a number from
 * what it printed. JSON output is used as is; TSV output (a header row, then
 * one row per line) becomes {"rows": [{column: cell, ...}, ...]}.
 *
 *   expr    = term (("+" | "-") term)*
 *   term    = factor (("*" | "/") factor)*
 *   factor  = NUMBER | "(" expr ")" | "-" factor | FUNC "(" path ")" | path
 *   FUNC    = sum | max | min | mean | count | first | last
 *   path    = step ("." step)*
 *   step    = NAME ("[" select "]")*
 *   select  = INDEX (-1 is the last) | "*" (every element)
 *           | KEY "=" VALUE ("," KEY "=" VALUE)*   (elements whose fields match)
 *
 * Examples: totals.uncached.tokens_projected,
 *           sum(rows[run=uncached,phase=decode].tokens_projected),
 *           formats[format=fp4].bytes_total / 1048576,
 *           rows[section=matvec,impl=kvscope].pct_bandwidth.
 * A bare path must match exactly one value; a function takes any number.
 * Numbers, numeric strings (TSV cells) and booleans (1, 0) are values.
 *
 * Expected figures are written as in the prose ("15,150", "3.88"); unless a
 * tolerance is given, a figure matches a computed value that rounds to it at
 * the precision written (3.88 accepts [3.875, 3.885]; integers are exact). */
#ifndef KVSCOPE_COURSE_LESSON_VALUE_H
#define KVSCOPE_COURSE_LESSON_VALUE_H

#include <jansson.h>
#include <stddef.h>

#include "util/err.h"

/* Parse a command's stdout: JSON if it is JSON, else TSV with a header row.
 * Returns a new reference, or NULL with e set (ERR_RUNTIME). */
json_t *lv_parse_output(const char *text, Err *e);

/* Evaluate expr against root. Returns 0 and sets *out, or -1 with e set
 * (ERR_USAGE: the expression is malformed; ERR_RUNTIME: it names nothing in
 * this output). */
int lv_eval(const json_t *root, const char *expr, double *out, Err *e);

/* Check expr's syntax without an output to evaluate it on. */
int lv_check_syntax(const char *expr, Err *e);

/* A figure as written: "15,150", "3.88", "-0.5", "1e-5", or yes/no (1, 0). */
typedef struct {
    double value;
    double half_ulp;  /* half a unit in the last place written (0 for integers) */
    int is_bool;
} LvFigure;

int lv_parse_figure(const char *text, LvFigure *out, Err *e);

/* A tolerance: "0.01" (absolute) or "5%" (relative to the expected value).
 * An empty or NULL text means "as written" (see above). */
typedef struct {
    double abs;      /* absolute tolerance, or */
    double rel;      /* relative tolerance (fraction), whichever is set */
    int given;
} LvTol;

int lv_parse_tol(const char *text, LvTol *out, Err *e);

/* 1 when value matches the figure within tol. */
int lv_matches(double value, const LvFigure *fig, const LvTol *tol);

/* Print value the way the lesson would write it, with the figure's
 * precision (thousands separated): 15150 -> "15,150", 3.8787 -> "3.88" when
 * the figure has two decimals. decimals < 0: as many as needed (up to 6). */
void lv_format(char *buf, size_t cap, double value, int decimals);

/* Print a computed answer readably: integers whole ("15,150"), others with
 * two decimals from 1 up ("52.40"), three significant digits below
 * ("0.00724"). */
void lv_format_answer(char *buf, size_t cap, double value);

/* Decimals written in a figure's text ("3.88" -> 2, "15,150" -> 0). */
int lv_decimals(const char *text);

#endif
