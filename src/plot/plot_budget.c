/* plot_budget.c: figure 14, eviction at an equal budget on real text: a
 * window, a window with 4 sinks, heavy hitters (H2O) and the MLA notes'
 * block-sparse pages, each holding about B rows per layer, streamed over
 * held-out text through the trained kjv-base inside its context, so the
 * exact cache is the reference every policy is measured against. */
#include "plot/plot.h"

#include <stdio.h>

#define BUDGET_MODEL "kjv-base"

static const size_t budgets[] = { 16, 32, 64, 128, 256, 512 };
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

static int write_table(const PlotCtx *ctx, const PlotEval *j, size_t n_budgets, Err *e)
{
    FILE *f = plot_open(ctx, "budget.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "budget");
    for (int p = 0; p < N_POLICIES; p++)
        fprintf(f, "\t%s_kl\t%s_bits_per_byte\t%s_top1", policy_column[p], policy_column[p], policy_column[p]);
    fprintf(f, "\tfull_bits_per_byte");
    /* then the 95% intervals (_lo, _hi); _vs_exact: bits per byte minus the exact cache's, with the interval
     * of that paired difference */
    for (int p = 0; p < N_POLICIES; p++) {
        const char *c = policy_column[p];
        fprintf(f, "\t%s_kl_lo\t%s_kl_hi\t%s_bits_per_byte_lo\t%s_bits_per_byte_hi\t%s_vs_exact\t%s_vs_exact_lo"
                   "\t%s_vs_exact_hi", c, c, c, c, c, c, c);
    }
    fprintf(f, "\tfull_bits_per_byte_lo\tfull_bits_per_byte_hi\n");
    for (size_t b = 0; b < n_budgets; b++) {
        fprintf(f, "%zu", budgets[b]);
        for (int p = 0; p < N_POLICIES; p++) {
            const EvalResult *r = &j->res[1 + b * N_POLICIES + (size_t)p];
            fprintf(f, "\t%.6g\t%.5f\t%.4f", r->kl, r->bits_per_byte, r->top1_agree);
        }
        fprintf(f, "\t%.5f", j->res[0].bits_per_byte);
        for (int p = 0; p < N_POLICIES; p++) {
            const size_t i = 1 + b * N_POLICIES + (size_t)p;
            const EvalCacheCi *c = &j->iv.cache[i];
            const EvalCi *d = &j->iv.pair[i - 1].bpb;
            fprintf(f, "\t%.6g\t%.6g\t%.5f\t%.5f\t%.5f\t%.5f\t%.5f", c->kl.lo, c->kl.hi, c->bpb.lo, c->bpb.hi, d->value,
                    d->lo, d->hi);
        }
        fprintf(f, "\t%.5f\t%.5f\n", j->iv.cache[0].bpb.lo, j->iv.cache[0].bpb.hi);
    }
    return plot_close(f, "budget.tsv", e);
}

int plot_budget(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    PlotEval j;
    const size_t n_budgets = ctx->quick ? N_QUICK : N_BUDGETS;
    int rc = plot_eval_open(&j, BUDGET_MODEL, ctx->quick ? 128 : 1024, 0, e); /* its whole context */
    if (rc == 0)
        rc = plot_eval_add(&j, "contiguous", e);
    for (size_t i = 0; rc == 0 && i < n_budgets * N_POLICIES; i++) {
        char spec[128];
        policy_spec(spec, sizeof spec, (int)(i % N_POLICIES), budgets[i / N_POLICIES], j.n);
        rc = plot_eval_add(&j, spec, e);
    }
    if (rc == 0)
        rc = plot_eval_run(ctx, &j, 0, e);
    if (rc == 0)
        rc = write_table(ctx, &j, n_budgets, e);
    FILE *labels = NULL;
    if (rc == 0) {
        char caption[1024];
        snprintf(caption, sizeof caption,
                 "%s streams the first %zu tokens of the held-out books, inside its trained context, one token a "
                 "step; the exact cache scores %.4f bits per byte.\nEach cache holds about B rows per layer: ring "
                 "window B; 4 sinks + B - 4; H2O budget B, the recent B/2 always kept; block-sparse pages of B/4 "
                 "rows past B tokens, keeping the newest B/%zu of its pages (B rows only at the last step).\nKL: "
                 "mean KL(exact || cache) of the next-token distributions. Bars: 95%% intervals, a percentile "
                 "bootstrap over %zu segments of the text; in (b), of the difference from the exact cache on the "
                 "same segments.",
                 BUDGET_MODEL, j.n, j.res[0].bits_per_byte, j.n, j.iv.segments);
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
    plot_eval_free(&j);
    return rc;
}
