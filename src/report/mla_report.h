/* mla_report.h: what `kvscope run` prints about an MLA model's attention: the
 * read path, the latent cache's bytes per token against memory.h and the
 * MHA cache it stands for, the MLA notes' tile LRU and prefetch queue. */
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
} MlaRunStats;

/* The attention the header names: "mla absorbed" / "mla decompress" for an
 * MLA model (its own kernels: --attention does not apply), else `form`. */
const char *mla_report_attention_name(const Model *m, const char *form);

/* Keep the cumulative MLA statistics after step r (nothing for other models). */
void mla_report_collect(MlaRunStats *dst, const StepReport *r);

/* The summary lines of run `label` (table), or an "mla" member of root
 * (json; one per run, keyed by label). cache may be NULL (uncached). */
void mla_report_summary(FILE *f, OutFormat fmt, const char *label, const Model *m, const MlaRunStats *rm,
                    const KvCache *cache, json_t *root);

#endif
