/* plot_mixed.c: figure 15, the mixed-precision proposal's mixed-precision cache on a trained
 * model and held-out text: the newest `hot` rows kept in f16, older ones
 * quantized to a cold format in groups of 16; how far the next-token
 * distributions move from the exact cache's, and what the cache holds,
 * against the hot window's size, for two cold formats. */
#include "plot/plot.h"

#include <stdio.h>

#define MIXED_MODEL "kjv-base"
#define GROUP 16

/* 0: every row cold (the cache quantized throughout). */
static const size_t hots[] = { 0, 16, 32, 64, 128, 256, 512 };
#define N_HOTS (sizeof hots / sizeof hots[0])
#define N_QUICK 3
static const char *const colds[] = { "q8_0", "q4_0" };
#define N_COLDS (sizeof colds / sizeof colds[0])

static void mixed_spec(char *buf, size_t cap, size_t hot, const char *cold)
{
    if (hot == 0)
        snprintf(buf, cap, "contiguous+quant:k=%s,v=%s", cold, cold);
    else
        snprintf(buf, cap, "mixed:hot=%zu,group=%d,cold=%s", hot, GROUP, cold);
}

static int write_table(const PlotCtx *ctx, const PlotEval *j, size_t n_hots, Err *e)
{
    FILE *f = plot_open(ctx, "mixed.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "hot_rows");
    for (size_t c = 0; c < N_COLDS; c++)
        fprintf(f, "\t%s_kl\t%s_bits_per_byte\t%s_cache_bytes", colds[c], colds[c], colds[c]);
    fprintf(f, "\tf16_kl\tf16_cache_bytes\tf32_cache_bytes");
    for (size_t c = 0; c < N_COLDS; c++) /* then the KL's 95% intervals */
        fprintf(f, "\t%s_kl_lo\t%s_kl_hi", colds[c], colds[c]);
    fprintf(f, "\tf16_kl_lo\tf16_kl_hi\n");
    for (size_t h = 0; h < n_hots; h++) {
        fprintf(f, "%zu", hots[h]);
        for (size_t c = 0; c < N_COLDS; c++) {
            const size_t i = 2 + h * N_COLDS + c;
            fprintf(f, "\t%.6g\t%.5f\t%zu", j->res[i].kl, j->res[i].bits_per_byte, kv_bytes_used(j->caches[i]));
        }
        fprintf(f, "\t%.6g\t%zu\t%zu", j->res[1].kl, kv_bytes_used(j->caches[1]), kv_bytes_used(j->caches[0]));
        for (size_t c = 0; c < N_COLDS; c++) {
            const EvalCi *k = &j->iv.cache[2 + h * N_COLDS + c].kl;
            fprintf(f, "\t%.6g\t%.6g", k->lo, k->hi);
        }
        fprintf(f, "\t%.6g\t%.6g\n", j->iv.cache[1].kl.lo, j->iv.cache[1].kl.hi);
    }
    return plot_close(f, "mixed.tsv", e);
}

int plot_mixed(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    PlotEval j;
    const size_t n_hots = ctx->quick ? N_QUICK : N_HOTS;
    int rc = plot_eval_open(&j, MIXED_MODEL, ctx->quick ? 128 : 1024, 0, e); /* its whole context */
    if (rc == 0)
        rc = plot_eval_add(&j, "contiguous", e);
    if (rc == 0)
        rc = plot_eval_add(&j, "contiguous+quant:k=f16,v=f16", e); /* every row hot */
    for (size_t h = 0; rc == 0 && h < n_hots; h++)
        for (size_t c = 0; rc == 0 && c < N_COLDS; c++) {
            char spec[96];
            mixed_spec(spec, sizeof spec, hots[h], colds[c]);
            rc = plot_eval_add(&j, spec, e);
        }
    if (rc == 0)
        rc = plot_eval_run(ctx, &j, 0, e);
    if (rc == 0)
        rc = write_table(ctx, &j, n_hots, e);
    FILE *labels = NULL;
    if (rc == 0) {
        char caption[1024];
        snprintf(caption, sizeof caption,
                 "%s streams the first %zu tokens of the held-out books, inside its trained context (the exact f32 "
                 "cache: %.4f bits per byte).\nmixed:hot=H,group=%d,cold=C keeps the newest H rows in f16 and "
                 "quantizes older ones to C, %d rows at a time (the mixed-precision proposal); H = 0 is the whole cache in C, the "
                 "dashed line the whole cache in f16.\nKL: mean KL(exact || cache) of the next-token distributions, "
                 "with its 95%% interval (bars; a percentile bootstrap over %zu segments of the text); bytes: what "
                 "the cache holds after the last token.",
                 MIXED_MODEL, j.n, j.res[0].bits_per_byte, GROUP, GROUP, j.iv.segments);
        labels = plot_labels_open(ctx, "mixed", "Mixed precision: a hot f16 window over a quantized past", caption,
                                  e);
        rc = labels ? 0 : -1;
    }
    if (rc == 0) {
        fprintf(labels, "f16_kl = %.6g\n", j.res[1].kl);
        rc = plot_close(labels, "mixed", e);
        snprintf(note->note, sizeof note->note, "KL, q4_0 past: all cold %.2g, 32 hot %.2g", j.res[3].kl,
                 j.res[2 + 2 * N_COLDS + 1].kl);
    }
    plot_eval_free(&j);
    return rc;
}
