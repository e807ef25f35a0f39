/* plot_eviction.c: figure 8, eviction policies at an equal memory budget
 * on structured workloads. Random weights attend almost uniformly, so every
 * policy looks alike on them; attention structure (model/structure.h) adds
 * the patterns that tell the policies apart. Each run is a real generation
 * through a lossy cache, measured by sim/quality.h against an exact shadow:
 * the attention mass the cache still holds, the error of attention and
 * logits, and where the greedy tokens first part. (a) Every workload, every
 * policy at one budget; (b, c) retrieval and heavy hitters over budgets.
 * The prompt is prefilled in chunks, so the policies evict during the
 * prefill too: a policy that must choose before the question arrives
 * shows it. */
#include "plot/plot.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/generate.h"
#include "model/structure.h"
#include "sim/quality.h"
#include "util/pool.h"

#define EV_MODEL "small"
#define EV_PROMPT 256 /* prompt tokens */
#define EV_GEN 16     /* tokens generated, greedy: the steps measured */
#define EV_CHUNK 16   /* prefill chunk, and the pass ring and h2o are sized for */
#define EV_BUDGET 64  /* (a): rows per layer */
#define EV_SINKS 4    /* window+sinks: the sinks of its budget */
#define EV_PAGES 4    /* block-sparse: the pages it keeps, of budget / EV_PAGES rows each */
#define EV_SNAP_SHARE 4 /* snapkv: its observation window is budget / EV_SNAP_SHARE rows, at most a chunk
                           (only a pass's own queries vote) */
#define EV_SNAP_POOL 7  /* snapkv: votes smoothed over this many neighbours (its default) */

/* the workloads: a structure.h spec each, its defaults */
enum { W_NONE, W_SINK, W_LOCAL, W_HEAVY, W_RETRIEVAL, N_WORK };
/* the needle sits past the sinks (0 .. 3) and long before the question, so
 * no policy keeps it by where it is: only by the attention it draws */
static const char *const workload_specs[N_WORK] = { "none", "sink", "local", "heavy", "retrieval,needle=40" };
static const char *const workloads[N_WORK] = { "none", "sink", "local", "heavy", "retrieval" }; /* as the data names them */
static const size_t sweep_work[] = { W_RETRIEVAL, W_HEAVY }; /* (b), (c) */
#define N_SWEEP_WORK (sizeof sweep_work / sizeof sweep_work[0])
static const size_t budgets[] = { 16, 32, 64, 128, 256 };
#define N_BUDGETS (sizeof budgets / sizeof budgets[0])

typedef enum { P_WINDOW, P_SINKS, P_H2O, P_SPARSE, P_SNAPKV, N_POLICIES } Policy;
static const char *const policy_names[N_POLICIES] = { "window", "window+sinks", "h2o", "block-sparse", "snapkv" };
/* as the picture names them */
static const char *const policy_labels[N_POLICIES] = { "window", "4 sinks + window", "heavy hitters (H2O)",
                                                     "block-sparse pages", "SnapKV" };

typedef struct {
    QualitySummary q;
    size_t rows_prefill;       /* rows held after the prefill (the step that picks the first token) */
    size_t rows_min, rows_max; /* rows held after each decode step, over layers and steps */
    size_t rows_reserved;      /* the cache's reserved bytes, in rows of one layer */
} EvResult;

/* The cache of policy p at a budget of B rows per layer (B a multiple of
 * EV_PAGES). Block-sparse keeps the newest ceil(keep x pages) pages: keep
 * is set so that this is EV_PAGES at every decode step of the run. SnapKV
 * holds B after each prompt chunk and then keeps every generated row, as
 * the method does. */
static int policy_spec(Policy p, size_t B, char *spec, size_t cap, Err *e)
{
    if (p == P_WINDOW)
        snprintf(spec, cap, "ring:window=%zu,pass=%d", B, EV_CHUNK);
    else if (p == P_SINKS)
        snprintf(spec, cap, "ring:window=%zu,sinks=%d,pass=%d", B - EV_SINKS, EV_SINKS, EV_CHUNK);
    else if (p == P_H2O)
        snprintf(spec, cap, "h2o:budget=%zu,recent=%zu,pass=%d", B, B / 2, EV_CHUNK);
    else if (p == P_SNAPKV)
        snprintf(spec, cap, "snapkv:budget=%zu,window=%zu,pool=%d", B,
                 B / EV_SNAP_SHARE < EV_CHUNK ? B / EV_SNAP_SHARE : (size_t)EV_CHUNK, EV_SNAP_POOL);
    else {
        /* decode passes start at EV_PROMPT .. EV_PROMPT + EV_GEN - 2; the policy counts the pages before */
        const size_t page = B / EV_PAGES, lo = (EV_PROMPT + page - 1) / page,
                     hi = (EV_PROMPT + EV_GEN - 2 + page - 1) / page;
        double keep = floor(1e6 * EV_PAGES / (double)hi) / 1e6; /* rounded down: hi pages keep EV_PAGES */
        if (ceil(keep * (double)lo) != EV_PAGES)
            return err_set(e, ERR_RUNTIME, "plot: no keep fraction holds %d pages from %zu to %zu pages", EV_PAGES,
                           lo, hi);
        snprintf(spec, cap, "paged:page=%zu+sparse:threshold=%zu,keep=%.6f", page, B, keep);
    }
    return 0;
}

typedef struct {
    const KvCache *c;
    KvCell *cells;
    EvResult *r;
} Watch;

/* After each step: the rows the cache holds, as quality.h counts them. */
static int watch(void *user, const QualityStep *q)
{
    Watch *w = user;
    for (size_t l = 0; l < q->n_layers; l++) {
        kv_cells(w->c, l, 0, w->cells, q->context);
        size_t held = 0;
        for (size_t j = 0; j < q->context; j++)
            held += w->cells[j].state != CELL_EMPTY && w->cells[j].state != CELL_EVICTED;
        if (q->step == 0) {
            w->r->rows_prefill = held > w->r->rows_prefill ? held : w->r->rows_prefill;
        } else {
            w->r->rows_min = held < w->r->rows_min ? held : w->r->rows_min;
            w->r->rows_max = held > w->r->rows_max ? held : w->r->rows_max;
        }
    }
    return 0;
}

static int run_one(const Model *m, const int *prompt, const char *spec, EvResult *r, Err *e)
{
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *c = kv_open(spec, &geo, e);
    KvCell *cells = malloc(m->cfg.max_seq_len * sizeof *cells);
    *r = (EvResult){ .rows_min = SIZE_MAX };
    int rc = c && cells ? 0 : -1;
    if (c && !cells)
        err_set(e, ERR_RUNTIME, "plot: out of memory");
    Watch w = { c, cells, r };
    GenOptions o = { .n_generate = EV_GEN, .chunk = EV_CHUNK };
    if (rc == 0)
        rc = quality_run(m, c, prompt, EV_PROMPT, &o, watch, &w, &r->q, e);
    if (rc == 0)
        r->rows_reserved = kv_bytes_reserved(c) / (geo.n_layers * kv_row_pair_bytes(&geo, FMT_F32, FMT_F32));
    if (rc < 0 && c)
        err_wrap(e, "plot eviction, cache %s", spec);
    kv_free(c);
    free(cells);
    return rc;
}

static void header(FILE *f)
{
    fputs("workload\tstructure\tpolicy\tcache\tprefill_chunk\tbudget_rows\trows_after_prefill\trows_decode_min\t"
          "rows_decode_max\trows_reserved\tmass_kept_min\tattn_err_max\tlogit_err_max\tfirst_divergence\tsteps\t"
          "workload_index\tpolicy_index\n", f);
}

static void row(FILE *f, size_t w, const char *desc, Policy p, const char *spec, size_t B, const EvResult *r)
{
    fprintf(f, "%s\t%s\t%s\t%s\t%d\t%zu\t%zu\t%zu\t%zu\t%zu\t%.6f\t%.6g\t%.6g\t%zu\t%zu\t%zu\t%d\n", workloads[w],
            desc, policy_names[p], spec, EV_CHUNK, B, r->rows_prefill, r->rows_min, r->rows_max, r->rows_reserved,
            r->q.min_mass_kept, r->q.max_attn_err, r->q.max_logit_err, r->q.first_divergence, r->q.steps, w, (int)p);
}

/* Every workload's structure, placed on the prompt; its description. */
static int structures(Structure s[N_WORK], char desc[N_WORK][256], Err *e)
{
    for (size_t w = 0; w < N_WORK; w++)
        if (structure_parse(workload_specs[w], &s[w], e) < 0 ||
            (structure_on(&s[w]) && structure_place(&s[w], EV_PROMPT, e) < 0) ||
            !structure_describe(&s[w], desc[w], sizeof desc[w]))
            return -1;
    return 0;
}

/* One run of the figure: a workload, a policy, a budget, and its result. */
typedef struct {
    size_t w, B;
    Policy p;
    char spec[128];
    EvResult r;
    int rc;
    Err err;
} EvJob;

typedef struct {
    const Model *base;
    const int *prompt;
    Structure *s;
    EvJob *jobs;
    PlotRuns runs;
} EvJobs;

static void run_job(void *ctx, size_t i)
{
    EvJobs *js = ctx;
    EvJob *j = &js->jobs[i];
    Model m = *js->base;
    m.bias = structure_on(&js->s[j->w]) ? &js->s[j->w].bias : NULL;
    j->rc = policy_spec(j->p, j->B, j->spec, sizeof j->spec, &j->err);
    if (j->rc == 0)
        j->rc = run_one(&m, js->prompt, j->spec, &j->r, &j->err);
    plot_runs_done(&js->runs);
}

/* (a)'s runs, then (b)'s and (c)'s at the budgets (a) did not run; each
 * runs on its own on the pool, so the tables hold the same bytes for any
 * thread count. */
#define N_A_JOBS (N_WORK * N_POLICIES)
#define N_JOBS (N_A_JOBS + N_SWEEP_WORK * N_POLICIES * (N_BUDGETS - 1))

/* The run of workload w, policy p at budget B (B != EV_BUDGET: a sweep's). */
static size_t job_index(size_t w, Policy p, size_t B)
{
    if (B == EV_BUDGET)
        return w * N_POLICIES + (size_t)p;
    size_t i = 0, k = 0; /* w's place in the sweep, B's among the budgets other than EV_BUDGET */
    while (sweep_work[i] != w)
        i++;
    for (size_t b = 0; budgets[b] != B; b++)
        k += budgets[b] != EV_BUDGET;
    return N_A_JOBS + (i * N_POLICIES + (size_t)p) * (N_BUDGETS - 1) + k;
}

/* eviction.tsv: (a), and eviction.budget.tsv: (b) and (c), which reuse
 * (a)'s runs at its budget. */
static int tables(const PlotCtx *ctx, const Model *base, const int *prompt, Structure s[N_WORK],
                  char desc[N_WORK][256], EvResult at[N_WORK][N_POLICIES], Err *e)
{
    EvJob *jobs = calloc(N_JOBS, sizeof *jobs);
    if (!jobs)
        return err_set(e, ERR_RUNTIME, "plot: out of memory");
    for (size_t w = 0; w < N_WORK; w++)
        for (int p = 0; p < N_POLICIES; p++)
            jobs[job_index(w, (Policy)p, EV_BUDGET)] = (EvJob){ .w = w, .p = (Policy)p, .B = EV_BUDGET };
    for (size_t i = 0; i < N_SWEEP_WORK; i++)
        for (int p = 0; p < N_POLICIES; p++)
            for (size_t b = 0; b < N_BUDGETS; b++)
                if (budgets[b] != EV_BUDGET)
                    jobs[job_index(sweep_work[i], (Policy)p, budgets[b])] =
                        (EvJob){ .w = sweep_work[i], .p = (Policy)p, .B = budgets[b] };
    EvJobs js = { .base = base, .prompt = prompt, .s = s, .jobs = jobs };
    plot_runs_begin(&js.runs, ctx, "run", N_JOBS);
    pool_run(N_JOBS, run_job, &js);
    int rc = 0;
    for (size_t i = 0; i < N_JOBS && rc == 0; i++)
        if ((rc = jobs[i].rc) < 0 && e)
            *e = jobs[i].err;
    FILE *f = rc == 0 ? plot_open(ctx, "eviction.tsv", e) : NULL;
    if (!f) {
        free(jobs);
        return -1;
    }
    header(f);
    for (size_t w = 0; w < N_WORK; w++)
        for (int p = 0; p < N_POLICIES; p++) {
            const EvJob *j = &jobs[job_index(w, (Policy)p, EV_BUDGET)];
            at[w][p] = j->r;
            row(f, w, desc[w], (Policy)p, j->spec, EV_BUDGET, &j->r);
        }
    if (plot_close(f, "eviction.tsv", e) < 0 || !(f = plot_open(ctx, "eviction.budget.tsv", e))) {
        free(jobs);
        return -1;
    }
    header(f);
    for (size_t i = 0; i < N_SWEEP_WORK; i++)
        for (int p = 0; p < N_POLICIES; p++)
            for (size_t b = 0; b < N_BUDGETS; b++) {
                const EvJob *j = &jobs[job_index(sweep_work[i], (Policy)p, budgets[b])];
                row(f, j->w, desc[j->w], (Policy)p, j->spec, budgets[b], &j->r);
            }
    free(jobs);
    return plot_close(f, "eviction.budget.tsv", e);
}

/* "window 79 / 64, ...": the rows each policy held at (a)'s budget, after
 * the prefill and after each decode step, over every workload. */
static void rows_held(char *buf, size_t cap, EvResult at[N_WORK][N_POLICIES])
{
    int n = 0;
    for (int p = 0; p < N_POLICIES && n >= 0 && (size_t)n < cap; p++) {
        size_t pre = 0, lo = SIZE_MAX, hi = 0;
        for (size_t w = 0; w < N_WORK; w++) {
            pre = at[w][p].rows_prefill > pre ? at[w][p].rows_prefill : pre;
            lo = at[w][p].rows_min < lo ? at[w][p].rows_min : lo;
            hi = at[w][p].rows_max > hi ? at[w][p].rows_max : hi;
        }
        n += lo == hi ? snprintf(buf + n, cap - (size_t)n, "%s%s %zu / %zu", p ? ", " : "", policy_names[p], pre, lo)
                      : snprintf(buf + n, cap - (size_t)n, "%s%s %zu / %zu-%zu", p ? ", " : "", policy_names[p], pre,
                                 lo, hi);
    }
}

static int labels(const PlotCtx *ctx, const Model *m, const Structure s[N_WORK], char desc[N_WORK][256],
                  EvResult at[N_WORK][N_POLICIES], Err *e)
{
    const Config *c = &m->cfg;
    char title[512], caption[2560], spec[128], held[384], specs[640] = "";
    rows_held(held, sizeof held, at);
    for (int p = 0; p < N_POLICIES; p++) { /* the specs, for the caption: the legends name the policies */
        if (policy_spec((Policy)p, EV_BUDGET, spec, sizeof spec, e) < 0)
            return -1;
        snprintf(specs + strlen(specs), sizeof specs - strlen(specs), "%s%s %s",
                 p == P_SPARSE ? ",\n" : p ? ", " : "", policy_labels[p], spec); /* two lines: they are long */
    }
    snprintf(title, sizeof title, "Eviction policies at an equal budget, on imposed attention structure (%s, random "
             "weights)", c->name);
    int n = snprintf(caption, sizeof caption,
                     "model %s: %zu layers, %zu heads, %zu KV heads x %zu; weights %s; flash attention; prompt %d "
                     "random ids (seed %" PRIu64 ", as kvscope run --prompt-len %d --prompt-seed %" PRIu64 ")\n"
                     "prefilled in chunks of %d (ring and h2o sized pass=%d), so the policies evict during the "
                     "prefill; %d tokens greedy\nat %d rows: %s\nrows held at %d, after the prefill / after each "
                     "decode step: %s\n(block-sparse keeps whole pages, the newest one filling; snapkv evicts "
                     "only at the end of a prompt chunk, its last min(B/%d, %d) rows voting, and then keeps every "
                     "generated row)\n"
                     "each run measured by sim/quality against an exact contiguous f32 shadow fed the same tokens; "
                     "mass kept = the exact attention weight on the rows the cache still holds, least over layers "
                     "and steps (mean over heads)\nstructures:",
                     c->name, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, m->source, EV_PROMPT, ctx->seed,
                     EV_PROMPT, ctx->seed, EV_CHUNK, EV_CHUNK, EV_GEN, EV_BUDGET, specs, EV_BUDGET, held, EV_SNAP_SHARE,
                     EV_CHUNK);
    for (size_t w = W_SINK; w < N_WORK && n > 0 && (size_t)n < sizeof caption; w++)
        n += snprintf(caption + n, sizeof caption - (size_t)n, "%s %s", w > W_SINK ? ";" : "", desc[w]);
    if (n > 0 && (size_t)n < sizeof caption)
        snprintf(caption + n, sizeof caption - (size_t)n, "\nmachine: %s", ctx->machine);
    FILE *f = plot_labels_open(ctx, "eviction", title, caption, e);
    if (!f)
        return -1;
    fprintf(f, "budget = %d\nprompt = %d\ngenerated = %d\nchunk = %d\nsinks = %d\nsparse_pages = %d\n"
               "snap_share = %d\nneedle = %zu\n",
            EV_BUDGET, EV_PROMPT, EV_GEN, EV_CHUNK, EV_SINKS, EV_PAGES, EV_SNAP_SHARE, s[W_RETRIEVAL].needle);
    for (int p = 0; p < N_POLICIES; p++) {
        if (policy_spec((Policy)p, EV_BUDGET, spec, sizeof spec, e) < 0) {
            plot_close(f, "eviction.labels.gp", NULL);
            return -1;
        }
        fprintf(f, "policy%d = ", p);
        plot_gp_string(f, policy_labels[p]);
        fprintf(f, "\nspec%d = ", p);
        plot_gp_string(f, spec);
        fputc('\n', f);
    }
    return plot_close(f, "eviction.labels.gp", e);
}

int plot_eviction(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    ModelOpts mo = { .model = EV_MODEL };
    Config cfg;
    if (setup_load_config(&mo, &cfg, e) < 0)
        return -1;
    KvGeometry g = config_kv_geometry(&cfg, 1);
    Model m;
    /* the exact shadow's contiguous cache; the lossy ones are smaller */
    if (setup_load_model(&mo, cfg.n_layers * cfg.max_seq_len * kv_row_pair_bytes(&g, FMT_F32, FMT_F32), &m, e) < 0)
        return -1;
    m.attend = ATTEND_FLASH;
    PromptOpts po = { .len = EV_PROMPT, .seed = ctx->seed };
    int *prompt = NULL;
    size_t batch, plen;
    Structure s[N_WORK];
    char desc[N_WORK][256];
    EvResult at[N_WORK][N_POLICIES];
    int rc = setup_make_prompt(&po, &m.cfg, &prompt, &batch, &plen, e);
    if (rc == 0)
        rc = structures(s, desc, e);
    if (rc == 0)
        rc = tables(ctx, &m, prompt, s, desc, at, e);
    if (rc == 0)
        rc = labels(ctx, &m, s, desc, at, e);
    if (rc == 0) {
        const EvResult *r = at[W_RETRIEVAL];
        snprintf(note->note, sizeof note->note,
                 "retrieval at %d rows: mass kept %.2f window, %.2f window+sinks, %.2f h2o, %.2f block-sparse, "
                 "%.2f snapkv", EV_BUDGET, r[P_WINDOW].q.min_mass_kept, r[P_SINKS].q.min_mass_kept,
                 r[P_H2O].q.min_mass_kept, r[P_SPARSE].q.min_mass_kept, r[P_SNAPKV].q.min_mass_kept);
    }
    free(prompt);
    model_free(&m);
    return rc;
}
