/* plot_serve.c: figure 17, many requests served over one page pool
 * (sim/serve.h) by a real model: (a) tokens generated per engine step and
 * (b) the share of the pool holding K/V, against the arrival rate, for
 * pages of 1, 16 and 128 rows and for one page of the model's whole
 * context per request (a contiguous max-length reservation), the pool the
 * same size in rows for all; (c) the rows mapped from the prefix cache
 * against the length of a shared system prompt. */
#include "plot/plot.h"

#include <stdio.h>
#include <stdlib.h>

#include "sim/serve.h"
#include "sim/setup.h"

#define SERVE_MODEL "tiny"
#define POOL_ROWS 2048
#define SLOTS 64          /* more than the pool holds at once: the pool binds, not the slots */

static const size_t pages[] = { 1, 16, 128, 0 }; /* 0: the model's max_seq_len (a whole context) */
#define N_PAGES (sizeof pages / sizeof pages[0])
static const double rates[] = { 0.25, 0.5, 1, 2, 4 };
#define N_RATES (sizeof rates / sizeof rates[0])
static const size_t prefixes[] = { 0, 16, 32, 48, 64 };
#define N_PREFIXES (sizeof prefixes / sizeof prefixes[0])

typedef struct {
    double tokens_per_step, pool_share;
    size_t preemptions, hit_rows, prompt_tokens;
} Point;

static ServeOptions workload(const PlotCtx *ctx, double rate, size_t prefix)
{
    return (ServeOptions){ .n_requests = ctx->quick ? 12 : 48, .rate = rate, .prompt_min = 64, .prompt_max = 96,
                           .output_min = 16, .output_max = 64, .shared_prefix = prefix, .token_budget = 256,
                           .seed = ctx->seed };
}

/* One serve run with pages of `page` rows in a pool of POOL_ROWS. */
static int serve_point(const Model *m, size_t page, const ServeOptions *o, Point *pt, Err *e)
{
    char spec[64];
    snprintf(spec, sizeof spec, "paged:page=%zu,pages=%zu", page, POOL_ROWS / page);
    KvGeometry geo = model_kv_geometry(m, SLOTS);
    KvCache *c = kv_open(spec, &geo, e);
    if (!c)
        return -1;
    ServeResult r;
    int rc = serve_run(m, c, o, NULL, NULL, &r, e);
    if (rc == 0) {
        double held = 0;
        for (size_t s = 0; s < r.n_steps; s++) {
            const KvStats *p = &r.steps[s].pool;
            held += (double)(p->pages_used * p->page_rows - p->waste_rows) / POOL_ROWS;
        }
        const KvStats *last = &r.steps[r.n_steps - 1].pool;
        *pt = (Point){ .tokens_per_step = (double)r.generated_tokens / (double)r.n_steps,
                       .pool_share = held / (double)r.n_steps, .preemptions = r.preemptions,
                       .hit_rows = last->prefix_hits * last->page_rows, .prompt_tokens = r.prompt_tokens };
    }
    serve_result_free(&r);
    kv_free(c);
    return rc;
}

static const char *const names[N_PAGES] = { "page1", "page16", "page128", "whole" };

int plot_serve(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    ModelOpts mo = { .model = SERVE_MODEL };
    Model m;
    if (setup_load_model(&mo, 0, &m, e) < 0)
        return -1;
    const size_t whole = m.cfg.max_seq_len, n_rates = ctx->quick ? 2 : N_RATES;
    const size_t n_prefixes = ctx->quick ? 2 : N_PREFIXES;
    Point grid[N_RATES][N_PAGES], share[N_PREFIXES];
    int rc = 0;
    for (size_t r = 0; rc == 0 && r < n_rates; r++)
        for (size_t p = 0; rc == 0 && p < N_PAGES; p++) {
            ServeOptions o = workload(ctx, rates[ctx->quick ? 1 + 2 * r : r], 0);
            rc = serve_point(&m, pages[p] ? pages[p] : whole, &o, &grid[r][p], e);
        }
    for (size_t i = 0; rc == 0 && i < n_prefixes; i++) {
        ServeOptions o = workload(ctx, 1, prefixes[i * (ctx->quick ? 2 : 1)]);
        rc = serve_point(&m, 16, &o, &share[i], e);
    }
    FILE *f = rc == 0 ? plot_open(ctx, "serve.tsv", e) : NULL;
    if (f) {
        fprintf(f, "rate");
        for (size_t p = 0; p < N_PAGES; p++)
            fprintf(f, "\t%s_tokens_per_step\t%s_pool_share\t%s_preemptions", names[p], names[p], names[p]);
        fprintf(f, "\n");
        for (size_t r = 0; r < n_rates; r++) {
            fprintf(f, "%g", rates[ctx->quick ? 1 + 2 * r : r]);
            for (size_t p = 0; p < N_PAGES; p++)
                fprintf(f, "\t%.4f\t%.4f\t%zu", grid[r][p].tokens_per_step, grid[r][p].pool_share,
                        grid[r][p].preemptions);
            fprintf(f, "\n");
        }
        rc = plot_close(f, "serve.tsv", e);
    } else if (rc == 0) {
        rc = -1;
    }
    f = rc == 0 ? plot_open(ctx, "serve.prefix.tsv", e) : NULL;
    if (f) {
        fprintf(f, "shared_prefix\thit_rows\tprompt_tokens\thit_share\n");
        for (size_t i = 0; i < n_prefixes; i++)
            fprintf(f, "%zu\t%zu\t%zu\t%.4f\n", prefixes[i * (ctx->quick ? 2 : 1)], share[i].hit_rows,
                    share[i].prompt_tokens, (double)share[i].hit_rows / (double)share[i].prompt_tokens);
        rc = plot_close(f, "serve.prefix.tsv", e);
    } else if (rc == 0) {
        rc = -1;
    }
    if (rc == 0) {
        char caption[768];
        const ServeOptions o = workload(ctx, 1, 0);
        snprintf(caption, sizeof caption,
                 "%s serves %zu requests (prompts %zu..%zu tokens, %zu..%zu generated, greedy) arriving as a "
                 "Poisson process, %zu tokens a step; every pool holds %d rows (whole = one page of the %zu-row "
                 "context per request, a max-length reservation).\nPool share: the mean over the steps of the rows "
                 "holding K/V over the pool's.\nRight: rate 1, pages of 16, the prompts' first S tokens shared "
                 "(rows mapped from the prefix cache instead of written, over the prompt tokens; at S = 0 they are preempted sequences' own pages, met again when run anew).",
                 SERVE_MODEL, o.n_requests, o.prompt_min, o.prompt_max, o.output_min, o.output_max,
                 o.token_budget, POOL_ROWS, whole);
        FILE *labels = plot_labels_open(ctx, "serve", "Serving many requests from one page pool", caption, e);
        rc = labels ? plot_close(labels, "serve", e) : -1;
    }
    if (rc == 0) {
        const size_t top = n_rates - 1;
        snprintf(note->note, sizeof note->note,
                 "at rate %g: %.1f tokens a step with pages of 1, %.1f of 16, %.1f of 128, %.1f whole-context",
                 rates[ctx->quick ? 1 + 2 * top : top], grid[top][0].tokens_per_step, grid[top][1].tokens_per_step,
                 grid[top][2].tokens_per_step, grid[top][3].tokens_per_step);
    }
    model_free(&m);
    return rc;
}
