/* plot_prefix.c: figure 19, the two prefix caches of `kvscope serve` (the
 * block hash that skips its full pages, vLLM's; the radix tree, SGLang's)
 * on the chat and few-shot workloads, by the pool's size: (a) the hit rate
 * (prompt tokens found cached, not run, over all prompt tokens), (b) the
 * engine steps the whole workload took, (c) the pages the cache gave up for
 * room, (d) the pages it held at the end. */
#include "plot/plot.h"

#include <stdio.h>
#include <stdlib.h>

#include "sim/serve.h"
#include "sim/setup.h"

#define PREFIX_MODEL "tiny"
#define PAGE 16
#define SLOTS 8

static const size_t pools[] = { 24, 32, 48, 96, 192 }; /* pages of PAGE rows */
#define N_POOLS (sizeof pools / sizeof pools[0])
static const ServeWorkload workloads[] = { SERVE_WORKLOAD_CHAT, SERVE_WORKLOAD_FEWSHOT };
static const char *const workload_names[] = { "chat", "fewshot" };
static const ServePrefix caches[] = { SERVE_PREFIX_BLOCK, SERVE_PREFIX_RADIX };
static const char *const cache_names[] = { "block", "radix" };

typedef struct {
    double hit_rate;
    size_t steps, evicted, held;
} Point;

/* Chat: 4-turn conversations with a 16-token system prompt; few-shot: 3
 * preambles of 40 tokens (not a whole number of pages). */
static ServeOptions workload(const PlotCtx *ctx, ServeWorkload w, ServePrefix p)
{
    ServeOptions o = { .n_requests = ctx->quick ? 12 : 32, .rate = 0.5, .prompt_min = 8, .prompt_max = 24,
                       .output_min = 8, .output_max = 16, .token_budget = 64, .seed = ctx->seed, .prefix = p,
                       .workload = w, .turns = 4 };
    o.shared_prefix = w == SERVE_WORKLOAD_CHAT ? 16 : 40;
    return o;
}

static int prefix_point(const Model *m, size_t pages, const ServeOptions *o, Point *pt, Err *e)
{
    char spec[64];
    snprintf(spec, sizeof spec, "paged:page=%d,pages=%zu", PAGE, pages);
    KvGeometry geo = model_kv_geometry(m, SLOTS);
    KvCache *c = kv_open(spec, &geo, e);
    if (!c)
        return -1;
    ServeResult r;
    int rc = serve_run(m, c, o, NULL, NULL, &r, e);
    if (rc == 0) {
        const ServeStep *end = &r.steps[r.n_steps - 1];
        *pt = (Point){ .hit_rate = (double)r.prefix_hit_tokens / (double)r.prompt_tokens, .steps = r.n_steps,
                       .evicted = end->prefix_evicted, .held = end->prefix_pages };
    }
    serve_result_free(&r);
    kv_free(c);
    return rc;
}

int plot_prefix_cache(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    ModelOpts mo = { .model = PREFIX_MODEL };
    Model m;
    if (setup_load_model(&mo, 0, &m, e) < 0)
        return -1;
    const size_t n_pools = ctx->quick ? 2 : N_POOLS;
    Point grid[N_POOLS][2][2];
    int rc = 0;
    for (size_t p = 0; rc == 0 && p < n_pools; p++)
        for (size_t w = 0; rc == 0 && w < 2; w++)
            for (size_t c = 0; rc == 0 && c < 2; c++) {
                const ServeOptions o = workload(ctx, workloads[w], caches[c]);
                rc = prefix_point(&m, pools[ctx->quick ? 2 * p : p], &o, &grid[p][w][c], e);
            }
    FILE *f = rc == 0 ? plot_open(ctx, "prefix-cache.tsv", e) : NULL;
    if (f) {
        fprintf(f, "pool_pages");
        for (size_t w = 0; w < 2; w++)
            for (size_t c = 0; c < 2; c++)
                fprintf(f, "\t%s_%s_hit_rate\t%s_%s_steps\t%s_%s_evicted\t%s_%s_held", workload_names[w],
                        cache_names[c], workload_names[w], cache_names[c], workload_names[w], cache_names[c],
                        workload_names[w], cache_names[c]);
        fprintf(f, "\n");
        for (size_t p = 0; p < n_pools; p++) {
            fprintf(f, "%zu", pools[ctx->quick ? 2 * p : p]);
            for (size_t w = 0; w < 2; w++)
                for (size_t c = 0; c < 2; c++)
                    fprintf(f, "\t%.4f\t%zu\t%zu\t%zu", grid[p][w][c].hit_rate, grid[p][w][c].steps,
                            grid[p][w][c].evicted, grid[p][w][c].held);
            fprintf(f, "\n");
        }
        rc = plot_close(f, "prefix-cache.tsv", e);
    } else if (rc == 0) {
        rc = -1;
    }
    if (rc == 0) {
        char caption[768];
        const ServeOptions o = workload(ctx, SERVE_WORKLOAD_CHAT, SERVE_PREFIX_RADIX);
        snprintf(caption, sizeof caption,
                 "%s serves %zu requests (greedy, %zu..%zu generated), %d slots, %zu tokens a step, pages of %d "
                 "rows; seed %llu.\nchat: conversations of %zu turns, a 16-token system prompt, messages of "
                 "%zu..%zu tokens, each turn the previous one's prompt and output and a new message. fewshot: one "
                 "of %d preambles of 40 tokens (their first 20 common), a question of %zu..%zu.\nHit rate: prompt "
                 "tokens found cached and not run, over all prompt tokens. block: full pages named by a hash "
                 "(a page a decode filled is never named); radix: any common prefix, partial pages included.",
                 PREFIX_MODEL, o.n_requests, o.output_min, o.output_max, SLOTS, o.token_budget, PAGE,
                 (unsigned long long)ctx->seed, o.turns, o.prompt_min, o.prompt_max, SERVE_FEWSHOT_PREAMBLES,
                 o.prompt_min, o.prompt_max);
        FILE *labels = plot_labels_open(ctx, "prefix-cache", "Prefix caches: a block hash against a radix tree",
                                        caption, e);
        rc = labels ? plot_close(labels, "prefix-cache", e) : -1;
    }
    if (rc == 0) {
        const size_t top = n_pools - 1;
        snprintf(note->note, sizeof note->note,
                 "hit rate at %zu pages: chat %.1f%% block, %.1f%% radix; fewshot %.1f%% block, %.1f%% radix",
                 pools[ctx->quick ? 2 * top : top], 100 * grid[top][0][0].hit_rate, 100 * grid[top][0][1].hit_rate,
                 100 * grid[top][1][0].hit_rate, 100 * grid[top][1][1].hit_rate);
    }
    model_free(&m);
    return rc;
}
