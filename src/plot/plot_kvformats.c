/* plot_kvformats.c: figure 13, quantized K and V chosen separately, as
 * llama.cpp's -ctk / -ctv tables compare them, judged on our trained model
 * and held-out text: for every K format x V format, how far the next-token
 * distributions move from the exact (f32) cache's (KL), and the bits per
 * byte; beside it KIVI's per-channel keys against per-token keys at the
 * same bits. */
#include "plot/plot.h"

#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "sim/eval.h"
#include "util/files.h"

#define FORMATS_MODEL "kjv-small"
#define MAX_TEXT_BYTES ((size_t)64 << 20)

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
#define N_CACHES (1 + N_FMT * N_FMT + N_KIVI) /* the exact reference first */

typedef struct {
    Model m;
    int model_ready;
    int *ids;
    size_t *bytes, n;
    char specs[N_CACHES][64];
    KvCache *caches[N_CACHES];
    EvalResult res[N_CACHES];
} Job;

static void job_free(Job *j)
{
    for (size_t i = 0; i < N_CACHES; i++) {
        eval_result_free(&j->res[i]);
        kv_free(j->caches[i]);
    }
    if (j->model_ready)
        model_free(&j->m);
    free(j->ids);
    free(j->bytes);
}

static int job_open(Job *j, size_t n, Err *e)
{
    char path[4096];
    if (files_find("KVSCOPE_DATA", "data", "text/kjv-valid.txt", path, sizeof path) < 0)
        return err_set(e, ERR_USAGE, "plot kv-formats: data/text/kjv-valid.txt is missing (is KVSCOPE_DATA right?)");
    ModelOpts mo = { .model = FORMATS_MODEL };
    Config cfg;
    size_t n_ids, text_len;
    if (setup_load_config(&mo, &cfg, e) < 0 ||
        setup_text_ids(&cfg, path, MAX_TEXT_BYTES, &j->ids, &j->bytes, &n_ids, &text_len, NULL, 0, e) < 0 ||
        setup_model(&cfg, NULL, 0, &j->m, e) < 0)
        return -1;
    j->model_ready = 1;
    j->n = n < cfg.max_seq_len ? n : cfg.max_seq_len; /* inside the trained context: only the formats differ */
    snprintf(j->specs[0], sizeof j->specs[0], "contiguous");
    for (size_t k = 0; k < N_FMT; k++)
        for (size_t v = 0; v < N_FMT; v++)
            snprintf(j->specs[1 + k * N_FMT + v], sizeof j->specs[0], "contiguous+quant:k=%s,v=%s", formats[k],
                     formats[v]);
    for (size_t i = 0; i < N_KIVI; i++)
        snprintf(j->specs[1 + N_FMT * N_FMT + i], sizeof j->specs[0], "%s", kivi[i].spec);
    KvGeometry geo = model_kv_geometry(&j->m, 1);
    for (size_t i = 0; i < N_CACHES; i++)
        if (!(j->caches[i] = kv_open(j->specs[i], &geo, e)))
            return -1;
    return 0;
}

static int write_tables(const PlotCtx *ctx, const Job *j, Err *e)
{
    FILE *f = plot_open(ctx, "kv-formats.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "k_format\tv_format\tk_index\tv_index\tkl_nats\tbits_per_byte\ttop1_agree\tcache_bytes\n");
    for (size_t k = 0; k < N_FMT; k++)
        for (size_t v = 0; v < N_FMT; v++) {
            const size_t i = 1 + k * N_FMT + v;
            fprintf(f, "%s\t%s\t%zu\t%zu\t%.6g\t%.5f\t%.4f\t%zu\n", formats[k], formats[v], k, v, j->res[i].kl,
                    j->res[i].bits_per_byte, j->res[i].top1_agree, kv_bytes_used(j->caches[i]));
        }
    if (plot_close(f, "kv-formats.tsv", e) < 0 || !(f = plot_open(ctx, "kv-formats.kivi.tsv", e)))
        return -1;
    fprintf(f, "label\tkeys\tkey_bits\tkl_nats\tbits_per_byte\ttop1_agree\tcache_bytes\n");
    for (size_t i = 0; i < N_KIVI; i++) {
        const size_t c = 1 + N_FMT * N_FMT + i;
        fprintf(f, "%s\t%s\t%d\t%.6g\t%.5f\t%.4f\t%zu\n", kivi[i].label, kivi[i].keys, kivi[i].bits, j->res[c].kl,
                j->res[c].bits_per_byte, j->res[c].top1_agree, kv_bytes_used(j->caches[c]));
    }
    return plot_close(f, "kv-formats.kivi.tsv", e);
}

int plot_kv_formats(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    Job j = { 0 };
    int rc = job_open(&j, ctx->quick ? 128 : 512, e);
    EvalOptions eo = { .prefill = 1, .token_bytes = j.bytes };
    if (rc == 0)
        rc = eval_run(&j.m, j.caches, N_CACHES, j.ids, j.n, &eo, j.res, NULL, NULL, e);
    if (rc == 0)
        rc = write_tables(ctx, &j, e);
    FILE *labels = NULL;
    if (rc == 0) {
        char caption[768];
        snprintf(caption, sizeof caption,
                 "%s on the first %zu tokens of the held-out books (data/text/kjv-valid.txt), inside its trained "
                 "context, so only the formats differ; every cache stores each row in the format named, the "
                 "reference keeps f32 (%.4f bits per byte).\nKL: the mean KL(f32 cache || this cache) of the "
                 "next-token distributions, nats a token. KIVI keeps its newest rows f16 until they fill a group of "
                 "32; its values are q4_0, as in the per-token rows beside it.",
                 FORMATS_MODEL, j.n, j.res[0].bits_per_byte);
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
    job_free(&j);
    return rc;
}
