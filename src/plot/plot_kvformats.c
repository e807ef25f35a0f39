/* plot_kvformats.c: figure 13, quantized K and V chosen separately, as
 * llama.cpp's -ctk / -ctv tables compare them, judged on our trained model
 * and held-out text: for every K format x V format, how far the next-token
 * distributions move from the exact (f32) cache's (KL), and the bits per
 * byte; beside it KIVI's per-channel keys against per-token keys at the
 * same bits. */
#include "plot/plot.h"

#include <stdio.h>

#define FORMATS_MODEL "kjv-base"

static const char *const formats[] = { "f16", "q8_0", "q4_0", "int4", "fp4" };
#define N_FMT (sizeof formats / sizeof formats[0])

/* KIVI's keys per channel, and per-token keys at the same bits (kvscope has
 * no 2-bit per-token format: its 2-bit row has no partner). */
static const struct {
    const char *spec, *label, *keys;
    int bits;
} kivi[] = {
    { "kivi:bits=4,group=32,v=q4_0", "KIVI 4-bit keys", "per channel", 4 },
    { "contiguous+quant:k=q4_0,v=q4_0", "q4_0 keys", "per token", 4 },
    { "contiguous+quant:k=int4,v=q4_0", "int4 keys", "per token", 4 },
    { "kivi:bits=2,group=32,v=q4_0", "KIVI 2-bit keys", "per channel", 2 },
};
#define N_KIVI (sizeof kivi / sizeof kivi[0])

static int write_tables(const PlotCtx *ctx, const PlotEval *j, Err *e)
{
    FILE *f = plot_open(ctx, "kv-formats.tsv", e);
    if (!f)
        return -1;
    /* the KL's 95% interval last (kl_lo, kl_hi) */
    fprintf(f, "k_format\tv_format\tk_index\tv_index\tkl_nats\tbits_per_byte\ttop1_agree\tcache_bytes\tkl_lo\t"
               "kl_hi\n");
    for (size_t k = 0; k < N_FMT; k++)
        for (size_t v = 0; v < N_FMT; v++) {
            const size_t i = 1 + k * N_FMT + v;
            fprintf(f, "%s\t%s\t%zu\t%zu\t%.6g\t%.5f\t%.4f\t%zu\t%.6g\t%.6g\n", formats[k], formats[v], k, v,
                    j->res[i].kl, j->res[i].bits_per_byte, j->res[i].top1_agree, kv_bytes_used(j->caches[i]),
                    j->iv.cache[i].kl.lo, j->iv.cache[i].kl.hi);
        }
    if (plot_close(f, "kv-formats.tsv", e) < 0 || !(f = plot_open(ctx, "kv-formats.kivi.tsv", e)))
        return -1;
    fprintf(f, "label\tkeys\tkey_bits\tkl_nats\tbits_per_byte\ttop1_agree\tcache_bytes\tkl_lo\tkl_hi\n");
    for (size_t i = 0; i < N_KIVI; i++) {
        const size_t c = 1 + N_FMT * N_FMT + i;
        fprintf(f, "%s\t%s\t%d\t%.6g\t%.5f\t%.4f\t%zu\t%.6g\t%.6g\n", kivi[i].label, kivi[i].keys, kivi[i].bits,
                j->res[c].kl, j->res[c].bits_per_byte, j->res[c].top1_agree, kv_bytes_used(j->caches[c]),
                j->iv.cache[c].kl.lo, j->iv.cache[c].kl.hi);
    }
    return plot_close(f, "kv-formats.kivi.tsv", e);
}

int plot_kv_formats(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    PlotEval j;
    int rc = plot_eval_open(&j, FORMATS_MODEL, ctx->quick ? 64 : 1024, 0, e); /* inside the trained context */
    if (rc == 0)
        rc = plot_eval_add(&j, "contiguous", e);
    for (size_t k = 0; rc == 0 && k < N_FMT; k++)
        for (size_t v = 0; rc == 0 && v < N_FMT; v++) {
            char spec[64];
            snprintf(spec, sizeof spec, "contiguous+quant:k=%s,v=%s", formats[k], formats[v]);
            rc = plot_eval_add(&j, spec, e);
        }
    for (size_t i = 0; rc == 0 && i < N_KIVI; i++)
        rc = plot_eval_add(&j, kivi[i].spec, e);
    if (rc == 0)
        rc = plot_eval_run(ctx, &j, 0, e);
    if (rc == 0)
        rc = write_tables(ctx, &j, e);
    FILE *labels = NULL;
    if (rc == 0) {
        char caption[1024];
        snprintf(caption, sizeof caption,
                 "%s on the first %zu tokens of the held-out books (data/text/kjv-valid.txt), inside its trained "
                 "context, so only the formats differ; every cache stores each row in the format named, the "
                 "reference keeps f32 (%.4f bits per byte).\nKL: the mean KL(f32 cache || this cache) of the "
                 "next-token distributions, nats a token. KIVI keeps its newest rows f16 until they fill a group of "
                 "32; its values are q4_0, as in the per-token rows beside it.\nUnder each KL (and as bars in (b)): "
                 "its 95%% interval, a percentile bootstrap over %zu segments of the text.",
                 FORMATS_MODEL, j.n, j.res[0].bits_per_byte, j.iv.segments);
        labels = plot_labels_open(ctx, "kv-formats", "K and V formats chosen separately, on a trained model", caption,
                                  e);
        rc = labels ? 0 : -1;
    }
    if (rc == 0) {
        fprintf(labels, "n_formats = %zu\nreference_bpb = %.5f\n", N_FMT, j.res[0].bits_per_byte);
        rc = plot_close(labels, "kv-formats", e);
        const size_t q4 = 1 + 2 * N_FMT + 2;
        snprintf(note->note, sizeof note->note, "KL to f32: q4_0/q4_0 %.2g, fp4/fp4 %.2g nats a token (%zu tokens)",
                 j.res[q4].kl, j.res[N_FMT * N_FMT].kl, j.n);
    }
    plot_eval_free(&j);
    return rc;
}
