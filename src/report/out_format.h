/* report/: what kvscope's commands print, in each output format: tables for
 * people, tsv for plots, json for programs, npy for NumPy. Writers take a
 * FILE * and the engine's results; they may use sim/ and everything below,
 * never a terminal of their own, and they return errors instead of printing
 * them (the app layer words and exits).
 *
 * out_format.h: the output formats every data command offers. */
#ifndef KVSCOPE_REPORT_OUT_FORMAT_H
#define KVSCOPE_REPORT_OUT_FORMAT_H

#include "util/err.h"

typedef enum { OUT_TABLE, OUT_TSV, OUT_JSON } OutFormat;

/* "table", "tsv" or "json" into *out; ERR_USAGE naming them otherwise. */
int out_format_parse(const char *text, OutFormat *out, Err *e);

#endif
