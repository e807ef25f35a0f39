/* run_options.h: the options of `kvscope run`, read from its words: a
 * preset's defaults first, then everything the command line says. */
#ifndef KVSCOPE_APP_RUN_OPTIONS_H
#define KVSCOPE_APP_RUN_OPTIONS_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "model/generate.h"
#include "model/structure.h"
#include "report/out_format.h"
#include "sim/preset.h"
#include "sim/setup.h"

typedef struct {
    ModelOpts mo;
    PromptOpts po;
    GenOptions go;
    const char *cache_spec;
    AttendAlgo attend;
    unsigned bugs;
    int no_cache, compare, quality;
    OutFormat fmt;
    size_t beams, src_len; /* encoder-decoder beam search (run_beam.c); 0 = not given */
    double alpha;
    int tokens_given, alpha_given;
    MlaPath mla; /* --mla */
    int mla_given;
    Preset preset;        /* --preset: defaults the options above override */
    int has_preset;
    Structure structure;  /* --structure */
    size_t threads;       /* --threads (0: every CPU this process may use) */
    const char *draft;    /* --draft: the draft model of speculative decoding (run_speculate.c) */
    size_t speculate;     /* --speculate K: draft tokens a round; 0 = not given */
    int ignore_eos;       /* --ignore-eos: generate all --tokens past the model's end-of-text token */
} RunOpts;

/* Fill o (its defaults set by the caller) from argv: a --preset's values
 * first, then the options, which win. Returns 0; 1 when --help was asked;
 * -1 with e set on a bad option or combination. */
int run_options_read(int argc, char **argv, RunOpts *o, Err *e);

/* What `kvscope run --help` prints. */
void run_options_help(void);

/* Refuse options the loaded config cannot serve: --mla on a model without
 * MLA, --bug on one with it, --structure on an encoder-decoder or MLA model
 * (ERR_USAGE, one line). */
int run_options_check(const RunOpts *o, const Config *cfg, Err *e);

#endif
