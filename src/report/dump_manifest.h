/* dump_manifest.h: manifest.json of `kvscope dump`: the config, where the
 * weights came from, the run (prompt, tokens, cache), every file written
 * with its shape and dtype, and the conventions of the forward pass, so the
 * arrays can be re-derived in NumPy without reading kvscope's source. */
#ifndef KVSCOPE_REPORT_DUMP_MANIFEST_H
#define KVSCOPE_REPORT_DUMP_MANIFEST_H

#include <stddef.h>

#include "report/out_format.h"
#include "sim/setup.h"
#include "report/dump_arrays.h"
#include "model/model.h"
#include "util/err.h"

/* What the manifest records about the run. */
typedef struct {
    const Model *model;
    const char *cache_spec;
    const PromptOpts *po;  /* ids set: given, or the default; else random with po->seed */
    int default_prompt;    /* po->ids is the worked example's prompt, filled in by default */
    const int *prompt;     /* [n_seqs][prompt_len] */
    const int *tokens;     /* [n_seqs][n_tokens] */
    size_t n_seqs, prompt_len, n_tokens;
    size_t steps;          /* passes whose logits were kept */
    size_t cache_len;      /* rows each sequence's cache holds after the run */
} DumpRun;

/* Write DIR/manifest.json for the run, listing d->files (which it does not
 * take). Fails (ERR_RUNTIME) when out of memory or the file cannot be written. */
int dump_write_manifest(const Dump *d, const DumpRun *run, Err *e);

#endif
