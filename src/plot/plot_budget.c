/* plot_budget.c: figure 14, eviction at an equal budget on real text: a
 * window, a window with 4 sinks, heavy hitters (H2O) and seed 001's
 * block-sparse pages, each holding about B rows per layer, streamed over
 * held-out text through the trained kjv-small inside its context, so the
 * exact cache is the reference every policy is measured against. */
#include "plot/plot.h"

#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "sim/eval.h"
#include "util/files.h"

#define BUDGET_MODEL "kjv-small"
#define MAX_TEXT_BYTES ((size_t)64 << 20)

static const size_t budgets[] = { 16, 32, 64, 128, 256 };
#define N_BUDGETS (sizeof budgets / sizeof budgets[0])
#define N_QUICK 3 /* --quick: the first three budgets */

enum { P_WINDOW, P_SINKS, P_H2O, P_SPARSE, N_POLICIES };
static const char *const policy_column[N_POLICIES] = { "window", "sinks4", "h2o", "sparse" };

/* The cache of policy p at budget B over n tokens. Block-sparse keeps a
 * share of its pages past a threshold: B / n of them, so it holds B rows at
 * the last step and fewer before. */
static void policy_spec(char *buf, size_t cap, int p, size_t B, size_t n)
{
    switch (p) {
    case P_WINDOW:
        snprintf(buf, cap, "ring:window=%zu", B);
        break;
    case P_SINKS:
        snprintf(buf, cap, "ring:window=%zu,sinks=4", B - 4);
        break;
    case P_H2O:
        snprintf(buf, cap, "h2o:budget=%zu,recent=%zu", B, B / 2);
        break;
    default:
        snprintf(buf, cap, "paged:page=%zu+sparse:threshold=%zu,keep=%.6f", B / 4, B, (double)B / (double)n);
    }
}

typedef struct {
    Model m;
    int model_ready;
    int *ids;
    size_t *bytes, n, n_caches;
    KvCache **caches;
    EvalResult *res;
} Job;

static void job_free(Job *j)
{
    for (size_t i = 0; i < j->n_caches; i++) {
        if (j->res)
            eval_result_free(&j->res[i]);
        if (j->caches)
            kv_free(j->caches[i]);
    }
    free(j->caches);
    free(j->res);
    if (j->model_ready)
        model_free(&j->m);
    free(j->ids);
    free(j->bytes);
}

static int job_open(Job *j, size_t n, size_t n_budgets, Err *e)
{
    char path[4096];
    if (files_find("KVSCOPE_DATA", "data", "text/kjv-valid.txt", path, sizeof path) < 0)
        return err_set(e, ERR_USAGE, "plot budget: data/text/kjv-valid.txt is missing (is KVSCOPE_DATA right?)");
    ModelOpts mo = { .model = BUDGET_MODEL };
    Config cfg;
    size_t n_ids, text_len;
    if (setup_load_config(&mo, &cfg, e) < 0 ||
        setup_text_ids(&cfg, path, MAX_TEXT_BYTES, &j->ids, &j->bytes, &n_ids, &text_len, NULL, 0, e) < 0 ||
        setup_model(&cfg, NULL, 0, &j->m, e) < 0)
        return -1;
    j->model_ready = 1;
    j->n = n < cfg.max_seq_len ? n : cfg.max_seq_len;
    j->n_caches = 1 + n_budgets * N_POLICIES;
    j->caches = calloc(j->n_caches, sizeof *j->caches);
    j->res = calloc(j->n_caches, sizeof *j->res);
    if (!j->caches || !j->res)
        return err_set(e, ERR_RUNTIME, "out of memory");
    KvGeometry geo = model_kv_geometry(&j->m, 1);
    for (size_t i = 0; i < j->n_caches; i++) {
        char spec[128] = "contiguous";
        if (i > 0)
            policy_spec(spec, sizeof spec, (int)((i - 1) % N_POLICIES), budgets[(i - 1) / N_POLICIES], j->n);
        if (!(j->caches[i] = kv_open(spec, &geo, e)))
            return err_wrap(e, "plot budget: %s", spec);
    }
    return 0;
}

static int write_table(const PlotCtx *ctx, const Job *j, size_t n_budgets, Err *e)
{
    FILE *f = plot_open(ctx, "budget.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "budget");
    for (int p = 0; p < N_POLICIES; p++)
        fprintf(f, "\t%s_kl\t%s_bits_per_byte\t%s_top1", policy_column[p], policy_column[p], policy_column[p]);
    fprintf(f, "\tfull_bits_per_byte\n");
    for (size_t b = 0; b < n_budgets; b++) {
        fprintf(f, "%zu", budgets[b]);
        for (int p = 0; p < N_POLICIES; p++) {
            const EvalResult *r = &j->res[1 + b * N_POLICIES + (size_t)p];
            fprintf(f, "\t%.6g\t%.5f\t%.4f", r->kl, r->bits_per_byte, r->top1_agree);
        }
        fprintf(f, "\t%.5f\n", j->res[0].bits_per_byte);
    }
    return plot_close(f, "budget.tsv", e);
}

int plot_budget(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    Job j = { 0 };
    const size_t n_budgets = ctx->quick ? N_QUICK : N_BUDGETS;
    int rc = job_open(&j, 512, n_budgets, e);
    EvalOptions eo = { .prefill = 1, .token_bytes = j.bytes };
    if (rc == 0)
        rc = eval_run(&j.m, j.caches, j.n_caches, j.ids, j.n, &eo, j.res, NULL, NULL, e);
    if (rc == 0)
        rc = write_table(ctx, &j, n_budgets, e);
    FILE *labels = NULL;
    if (rc == 0) {
        char caption[768];
        snprintf(caption, sizeof caption,
                 "%s streams the first %zu tokens of the held-out books, inside its trained context, one token a "
                 "step; the exact cache scores %.4f bits per byte.\nEach cache holds about B rows per layer: ring "
                 "window B; 4 sinks + B - 4; H2O budget B, the recent B/2 always kept; block-sparse pages of B/4 "
                 "rows past B tokens, keeping the newest B/%zu of its pages (B rows only at the last step).\nKL: "
                 "mean KL(exact || cache) of the next-token distributions.",
                 BUDGET_MODEL, j.n, j.res[0].bits_per_byte, j.n);
        labels = plot_labels_open(ctx, "budget", "Eviction at an equal budget, on real text", caption, e);
        rc = labels ? 0 : -1;
    }
    if (rc == 0) {
        fprintf(labels, "tokens = %zu\nfull_bpb = %.5f\n", j.n, j.res[0].bits_per_byte);
        rc = plot_close(labels, "budget", e);
        const size_t b64 = 1 + 2 * N_POLICIES;
        snprintf(note->note, sizeof note->note, "KL at 64 rows: window %.3g, 4 sinks %.3g, h2o %.3g, sparse %.3g",
                 j.res[b64 + P_WINDOW].kl, j.res[b64 + P_SINKS].kl, j.res[b64 + P_H2O].kl, j.res[b64 + P_SPARSE].kl);
    }
    job_free(&j);
    return rc;
}
