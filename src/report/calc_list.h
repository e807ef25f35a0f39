/* calc_list.h: `kvscope calc --list`, the models in data/models with their
 * shape and f16 cache size, as a table, tsv or json. */
#ifndef KVSCOPE_REPORT_CALC_LIST_H
#define KVSCOPE_REPORT_CALC_LIST_H

#include "report/out_format.h"
#include "util/err.h"

/* Print one entry per model in data/models on stdout, in format out; a
 * model that cannot be read gets a line (or json object) saying why.
 * Fails (ERR_RUNTIME) when there are no models, or out of memory. */
int calc_print_list(OutFormat out, Err *e);

#endif
