/* run_speculate.h: `kvscope run --draft NAME --speculate K`: greedy
 * speculative decoding (sim/speculate.h) beside the target alone. */
#ifndef KVSCOPE_APP_RUN_SPECULATE_H
#define KVSCOPE_APP_RUN_SPECULATE_H

#include "app/run_options.h"

/* The options' lines for `kvscope run --help`. */
extern const char run_speculate_help[];

/* Refuse what speculative decoding does not take with --speculate (and
 * --draft without it, or the other way round): ERR_USAGE, one line. */
int run_speculate_check(const RunOpts *o, Err *e);

/* Run it and print; returns the exit code (errors printed). */
int run_speculate(const RunOpts *o, const Config *cfg);

#endif
