/* run_mla.h: what `kvscope run` prints about an MLA model's attention: the
 * read path, the latent cache's bytes per token against memory.h and the
 * MHA cache it stands for, seed 001's tile LRU and prefetch queue. */
#ifndef KVSCOPE_REPORT_MLA_REPORT_H
#define KVSCOPE_REPORT_MLA_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "report/out_format.h"
#include "kv/cache.h"
#include "model/generate.h"
#include "model/mla.h"

/* The statistics of one run, kept from its last step. */
typedef struct {
    int seen;    /* a step of an MLA model was reported */
    MlaStats st;
} RunMla;

extern const char run_mla_help[];

/* Parse --mla PATH into *out; fails (ERR_USAGE) naming the accepted ones. */
int run_mla_parse(const char *text, MlaPath *out, Err *e);

/* Refuse --mla on a model that is not MLA, and --bug on one that is
 * (ERR_USAGE, one line). */
int run_mla_check(const Config *c, int given, unsigned bugs, Err *e);

/* The attention the header names: "mla absorbed" / "mla decompress" for an
 * MLA model (its own kernels: --attention does not apply), else `form`. */
const char *run_mla_attention_name(const Model *m, const char *form);

/* Keep the cumulative MLA statistics after step r (nothing for other models). */
void run_mla_collect(RunMla *dst, const StepReport *r);

/* The summary lines of run `label` (table), or an "mla" member of root
 * (json; one per run, keyed by label). cache may be NULL (uncached). */
void run_mla_report(FILE *f, OutFormat fmt, const char *label, const Model *m, const RunMla *rm,
                    const KvCache *cache, json_t *root);

#endif
