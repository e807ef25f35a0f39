/* plot_gen.c: figures 1-3, from real generation runs with and without a
 * KV cache: the engine's counters (projection and attention work, measured
 * where it happens) and the measured time of every step. */
#include "plot/plot.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/generate.h"
#include "stats/fit.h"

/* Every figure here starts from a one-token prompt, so that the work of n
 * generated tokens is a clean power of n: cached n rows projected, uncached
 * n(n+1)/2 (a longer prompt P adds nP and bends the curve for n < P). */
#define PROMPT_LEN 1
#define COUNT_MODEL "tiny"     /* figures 1, 2: counters only, any size shows the law */
#define COUNT_TOKENS 256
#define TIME_MODEL "small"     /* figure 3: big enough that a step takes a measurable time */
#define TIME_TOKENS 160
#define TIME_TOKENS_QUICK 48
#define TIME_REPS 3            /* figure 3 plots the fastest of these runs per step */
#define FIT_FROM 16            /* fits start here: the laws are asymptotic */

/* What one generation did, pass by pass. */
typedef struct {
    size_t n;            /* passes */
    uint64_t *rows;      /* [n] token rows projected */
    uint64_t *proj;      /* [n] projection FLOPs (Q, K, V, O) */
    uint64_t *attn;      /* [n] attention FLOPs (scores, softmax, weighted sum) */
    uint64_t *flops;     /* [n] every FLOP */
    size_t *position;    /* [n] position of the pass's last token */
    double *seconds;     /* [n] measured */
} Trace;

static int on_step(void *user, const StepReport *r)
{
    Trace *t = user;
    size_t i = t->n++;
    t->rows[i] = r->ctr.tokens_projected;
    t->proj[i] = counters_proj_flops(&r->ctr);
    t->attn[i] = counters_attn_flops(&r->ctr);
    t->flops[i] = counters_total_flops(&r->ctr);
    t->position[i] = r->pos0 + r->n_new - 1;
    t->seconds[i] = r->ctr.seconds;
    return 0;
}

static void trace_free(Trace *t)
{
    free(t->rows);
    free(t->proj);
    free(t->attn);
    free(t->flops);
    free(t->position);
    free(t->seconds);
    memset(t, 0, sizeof *t);
}

static int trace_alloc(Trace *t, size_t n, Err *e)
{
    memset(t, 0, sizeof *t);
    t->rows = calloc(n, sizeof *t->rows);
    t->proj = calloc(n, sizeof *t->proj);
    t->attn = calloc(n, sizeof *t->attn);
    t->flops = calloc(n, sizeof *t->flops);
    t->position = calloc(n, sizeof *t->position);
    t->seconds = calloc(n, sizeof *t->seconds);
    if (!t->rows || !t->proj || !t->attn || !t->flops || !t->position || !t->seconds) {
        trace_free(t);
        return err_set(e, ERR_RUNTIME, "plot: out of memory for a trace of %zu steps", n);
    }
    return 0;
}

/* A model and a prompt for one figure. */
typedef struct {
    Model m;
    int *prompt;
    size_t plen, n_gen;
    char caption[512];
} Run;

static void run_free(Run *r)
{
    free(r->prompt);
    model_free(&r->m);
}

/* The config a figure runs (ctx->model or its default) and its token count:
 * the tokens asked for, else the default capped by the model's positions. */
static int choose(const PlotCtx *ctx, const char *model, size_t tokens, Config *cfg, size_t *n, Err *e)
{
    ModelOpts mo = { .model = ctx->model ? ctx->model : model };
    if (setup_load_config(&mo, cfg, e) < 0)
        return -1;
    *n = ctx->tokens ? ctx->tokens : (tokens < cfg->max_seq_len ? tokens : cfg->max_seq_len);
    if (generate_positions(PROMPT_LEN, *n) > cfg->max_seq_len)
        return err_set(e, ERR_USAGE, "--tokens %zu: model '%s' holds %zu positions (a 1-token prompt plus %zu "
                       "generated tokens need %zu)", *n, cfg->name, cfg->max_seq_len, *n,
                       generate_positions(PROMPT_LEN, *n));
    if (*n < 2)
        return err_set(e, ERR_USAGE, "--tokens %zu: a curve needs at least 2 tokens", *n);
    return 0;
}

int plot_gen_check(const PlotCtx *ctx, Err *e)
{
    Config cfg;
    size_t n;
    if (choose(ctx, COUNT_MODEL, COUNT_TOKENS, &cfg, &n, e) < 0)
        return -1;
    return choose(ctx, TIME_MODEL, ctx->quick ? TIME_TOKENS_QUICK : TIME_TOKENS, &cfg, &n, e);
}

/* Load the model, make the seeded one-token prompt, choose the token count,
 * and describe it all in r->caption. */
static int run_init(Run *r, const PlotCtx *ctx, const char *model, size_t tokens, const char *extra, Err *e)
{
    memset(r, 0, sizeof *r);
    ModelOpts mo = { .model = ctx->model ? ctx->model : model };
    Config cfg;
    size_t n;
    if (choose(ctx, model, tokens, &cfg, &n, e) < 0)
        return -1;
    KvGeometry g = { .n_layers = cfg.n_layers, .n_seqs = 1, .n_kv_heads = cfg.n_kv_heads,
                     .head_dim = cfg.head_dim, .max_seq_len = cfg.max_seq_len };
    if (setup_load_model(&mo, cfg.n_layers * cfg.max_seq_len * kv_row_pair_bytes(&g, FMT_F32, FMT_F32), &r->m, e) < 0)
        return -1;
    PromptOpts po = { .len = PROMPT_LEN, .seed = ctx->seed };
    size_t batch;
    if (setup_make_prompt(&po, &r->m.cfg, &r->prompt, &batch, &r->plen, e) < 0) {
        model_free(&r->m);
        return -1;
    }
    r->n_gen = n;
    const Config *c = &r->m.cfg;
    snprintf(r->caption, sizeof r->caption,
             "model %s: d_model %zu, %zu layers, %zu heads, %zu KV heads; weights %s\n"
             "cache: contiguous, f32 (against none); prompt: %zu token (id %d, seed %" PRIu64 "); greedy, %zu "
             "tokens\n%s; machine: %s",
             c->name, c->d_model, c->n_layers, c->n_heads, c->n_kv_heads, r->m.source, r->plen, r->prompt[0],
             ctx->seed, n, extra, ctx->machine);
    return 0;
}

/* Generate r->n_gen tokens, cached (contiguous, f32) or not, into t. */
static int run_trace(const Run *r, int cached, Trace *t, Err *e)
{
    if (trace_alloc(t, r->n_gen, e) < 0)
        return -1;
    KvCache *cache = NULL;
    if (cached) {
        KvGeometry geo = model_kv_geometry(&r->m, 1);
        if (!(cache = kv_open("contiguous", &geo, e))) {
            trace_free(t);
            return -1;
        }
    }
    int *out = malloc(r->n_gen * sizeof *out);
    GenOptions go = { .n_generate = r->n_gen, .sample_seed = 1 };
    int rc = out ? generate(&r->m, cache, r->prompt, 1, r->plen, &go, out, on_step, t, e)
                 : err_set(e, ERR_RUNTIME, "plot: out of memory");
    free(out);
    kv_free(cache);
    if (rc < 0)
        trace_free(t);
    return rc;
}

/* Fit the cumulative sums of v against generated tokens, from FIT_FROM (or
 * 1 for short runs) on; x[i] = i + 1 tokens generated after pass i. */
static int fit_cumulative(const uint64_t *v, size_t n, FitLine *f, size_t *from, Err *e)
{
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return err_set(e, ERR_RUNTIME, "plot: out of memory");
    }
    *from = n >= 4 * FIT_FROM ? FIT_FROM : 1;
    double sum = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        sum += (double)v[i];
        if (i + 1 >= *from) {
            x[m] = (double)(i + 1);
            y[m++] = sum;
        }
    }
    int rc = fit_power_law(x, y, m, f, e);
    free(x);
    free(y);
    return rc;
}

/* The fits file (one row per series) and the fit lines of the labels file. */
static int write_fits(const PlotCtx *ctx, const char *name, const char *quantity, const FitLine f[2],
                      size_t from, size_t to, FILE *labels, Err *e)
{
    static const char *const series[2] = { "cached", "uncached" };
    char file[128];
    snprintf(file, sizeof file, "%s.fits.tsv", name);
    FILE *out = plot_open(ctx, file, e);
    if (!out)
        return -1;
    fputs("series\tquantity\tx_from\tx_to\tpoints\tslope\tslope_err\tprefactor\tr2\n", out);
    for (int s = 0; s < 2; s++) {
        fprintf(out, "%s\t%s\t%zu\t%zu\t%zu\t%.6f\t%.6f\t%.6g\t%.8f\n", series[s], quantity, from, to, f[s].n,
                f[s].slope, f[s].slope_err, exp(f[s].intercept), f[s].r2);
        fprintf(labels, "slope_%s = %.6f\nprefactor_%s = %.9g\n", series[s], f[s].slope, series[s],
                exp(f[s].intercept));
    }
    fprintf(labels, "fit_from = %zu\nfit_to = %zu\n", from, to);
    return plot_close(out, file, e);
}

/* Figures 1 and 2 share everything but the quantity. */
typedef enum { Q_PROJECTION, Q_ATTENTION } Quantity;

static int counts_figure(const PlotCtx *ctx, Quantity q, PlotNote *note, Err *e)
{
    const char *name = q == Q_PROJECTION ? "projection" : "attention-flops";
    Run r;
    if (run_init(&r, ctx, COUNT_MODEL, COUNT_TOKENS, "counters measured by the engine", e) < 0)
        return -1;
    Trace tc, tu;
    if (run_trace(&r, 1, &tc, e) < 0) {
        run_free(&r);
        return -1;
    }
    if (run_trace(&r, 0, &tu, e) < 0) {
        trace_free(&tc);
        run_free(&r);
        return -1;
    }
    const size_t n = r.n_gen;
    FitLine f[2];
    size_t from;
    FILE *data = NULL, *labels = NULL;
    char file[128];
    snprintf(file, sizeof file, "%s.tsv", name);
    int rc = fit_cumulative(q == Q_PROJECTION ? tc.rows : tc.attn, n, &f[0], &from, e);
    if (rc == 0)
        rc = fit_cumulative(q == Q_PROJECTION ? tu.rows : tu.attn, n, &f[1], &from, e);
    if (rc == 0 && !(data = plot_open(ctx, file, e)))
        rc = -1;
    if (rc == 0) {
        if (q == Q_PROJECTION)
            fputs("generated\tcached_rows\tuncached_rows\tcached_rows_total\tuncached_rows_total\t"
                  "cached_proj_flops_total\tuncached_proj_flops_total\n", data);
        else
            fputs("generated\tcached_attn_flops\tuncached_attn_flops\tcached_attn_flops_total\t"
                  "uncached_attn_flops_total\n", data);
        uint64_t cr = 0, ur = 0, cp = 0, up = 0, ca = 0, ua = 0;
        for (size_t i = 0; i < n; i++) {
            cr += tc.rows[i], ur += tu.rows[i], cp += tc.proj[i], up += tu.proj[i];
            ca += tc.attn[i], ua += tu.attn[i];
            if (q == Q_PROJECTION)
                fprintf(data, "%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
                        i + 1, tc.rows[i], tu.rows[i], cr, ur, cp, up);
            else
                fprintf(data, "%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", i + 1, tc.attn[i],
                        tu.attn[i], ca, ua);
        }
        rc = plot_close(data, file, e);
    }
    const char *title = q == Q_PROJECTION
                            ? "Projection work vs tokens generated: cached ~ n, uncached ~ n^2"
                            : "Attention FLOPs vs tokens generated: cached ~ n^2, uncached ~ n^3";
    if (rc == 0 && !(labels = plot_labels_open(ctx, name, title, r.caption, e)))
        rc = -1;
    if (rc == 0)
        rc = write_fits(ctx, name, q == Q_PROJECTION ? "rows_total" : "attn_flops_total", f, from, n, labels, e);
    if (labels && plot_close(labels, name, rc == 0 ? e : NULL) < 0)
        rc = -1;
    if (rc == 0)
        snprintf(note->note, sizeof note->note, "log-log slopes (GSL fit, n = %zu..%zu): cached %.3f, uncached %.3f",
                 from, n, f[0].slope, f[1].slope);
    trace_free(&tc);
    trace_free(&tu);
    run_free(&r);
    return rc;
}

int plot_projection(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    return counts_figure(ctx, Q_PROJECTION, note, e);
}

int plot_attention_flops(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    return counts_figure(ctx, Q_ATTENTION, note, e);
}

/* Figure 3: the measured time of every step, the fastest of TIME_REPS runs
 * (a shared machine only ever adds time), cached and uncached interleaved so
 * that a slow spell hits both. */
int plot_step_time(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    const size_t reps = ctx->quick ? 1 : TIME_REPS;
    char extra[160];
    snprintf(extra, sizeof extra, "time per step: the fastest of %zu run%s%s", reps, reps == 1 ? "" : "s",
             ctx->quick ? " (quick: too short to mean much)" : "");
    Run r;
    if (run_init(&r, ctx, TIME_MODEL, ctx->quick ? TIME_TOKENS_QUICK : TIME_TOKENS, extra, e) < 0)
        return -1;
    const size_t n = r.n_gen;
    double *best[2] = { malloc(n * sizeof(double)), malloc(n * sizeof(double)) };
    Trace keep[2] = { 0 };
    int rc = best[0] && best[1] ? 0 : err_set(e, ERR_RUNTIME, "plot: out of memory");
    PlotRuns runs;
    plot_runs_begin(&runs, ctx, "run", 2 * reps);
    for (size_t rep = 0; rep < reps && rc == 0; rep++)
        for (int c = 0; c < 2 && rc == 0; c++) {
            Trace t;
            if ((rc = run_trace(&r, c == 0, &t, e)) < 0)
                break;
            plot_runs_done(&runs);
            for (size_t i = 0; i < n; i++)
                best[c][i] = rep == 0 || t.seconds[i] < best[c][i] ? t.seconds[i] : best[c][i];
            if (rep == 0)
                keep[c] = t;
            else
                trace_free(&t);
        }
    FILE *data = NULL, *labels = NULL;
    if (rc == 0 && !(data = plot_open(ctx, "step-time.tsv", e)))
        rc = -1;
    double sum[2] = { 0, 0 };
    if (rc == 0) {
        fputs("position\tcached_seconds\tuncached_seconds\tcached_flops\tuncached_flops\n", data);
        for (size_t i = 0; i < n; i++) {
            fprintf(data, "%zu\t%.9f\t%.9f\t%" PRIu64 "\t%" PRIu64 "\n", keep[0].position[i], best[0][i], best[1][i],
                    keep[0].flops[i], keep[1].flops[i]);
            sum[0] += best[0][i];
            sum[1] += best[1][i];
        }
        rc = plot_close(data, "step-time.tsv", e);
    }
    if (rc == 0 && !(labels = plot_labels_open(ctx, "step-time",
                                               "Measured time per step vs position: cached flat, uncached growing",
                                               r.caption, e)))
        rc = -1;
    if (labels) {
        fprintf(labels, "kernels = \"%s\"\n", r.m.kern->isa);
        if (plot_close(labels, "step-time", rc == 0 ? e : NULL) < 0)
            rc = -1;
    }
    if (rc == 0)
        snprintf(note->note, sizeof note->note, "%zu steps: cached %.1f ms in all, uncached %.1f ms (%.1fx)", n,
                 sum[0] * 1e3, sum[1] * 1e3, sum[0] > 0 ? sum[1] / sum[0] : 0);
    trace_free(&keep[0]);
    trace_free(&keep[1]);
    free(best[0]);
    free(best[1]);
    run_free(&r);
    return rc;
}
