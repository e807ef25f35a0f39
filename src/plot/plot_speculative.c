/* plot_speculative.c: figure 20, speculative decoding (sim/speculate.h)
 * against K, the draft tokens a round, on held-out text: kjv-tiny drafts
 * for kjv-small, greedy, from prompts cut out of the held-out books.
 *
 *   (a) the share of proposals the target keeps, against K, and the share
 *       of those it judged (a proposal after a refused one is dropped
 *       unjudged): a, the chance the target agrees with one proposal;
 *   (b) the share kept at each place in the draft, at the largest K;
 *   (c) tokens a verification pass yields: measured, and what the share of
 *       (a) would give if every proposal were kept independently with that
 *       probability a: (1 - a^(K+1)) / (1 - a) (Leviathan et al., 2023);
 *       the gap says the agreements are not independent;
 *   (d) the speed-up over the target alone: measured time, and the two
 *       counts behind it, FLOPs (speculation adds work) and weight bytes
 *       read (it saves reads, which is what a memory-bound decode pays).
 *
 * Each (K, prompt) runs the target alone and then speculatively, both timed
 * on this thread, the fastest of REPEATS runs each; the tokens must agree
 * (same_tokens), as speculate.h promises. */
#include "plot/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/speculate.h"

#define TARGET "kjv-small"
#define DRAFT "kjv-tiny"
#define MAX_K 8
#define PROMPT_LEN 32
#define REPEATS 3
#define MAX_TEXT_BYTES ((size_t)64 << 20)

typedef struct {
    size_t k, runs, generated, target_passes, drafted, accepted, refused, target_rolled, draft_rolled;
    size_t proposed_at[MAX_K], accepted_at[MAX_K];
    double spec_flops, alone_flops, spec_weight_bytes, alone_weight_bytes;
    double spec_seconds, alone_seconds; /* sums over the prompts of each one's fastest run */
    int same_tokens;
} KRow;

typedef struct {
    Model target, draft;
    int target_ready, draft_ready;
    int *ids;
    size_t n_ids;
    size_t n_prompts, n_generate;
    int *want, *got;
} Bench;

static void bench_free(Bench *b)
{
    if (b->target_ready)
        model_free(&b->target);
    if (b->draft_ready)
        model_free(&b->draft);
    free(b->ids);
    free(b->want);
    free(b->got);
}

static int bench_open(Bench *b, const PlotCtx *ctx, Err *e)
{
    memset(b, 0, sizeof *b);
    ModelOpts tmo = { .model = TARGET }, dmo = { .model = DRAFT };
    if (setup_load_model(&tmo, 0, &b->target, e) < 0)
        return -1;
    b->target_ready = 1;
    if (setup_load_model(&dmo, 0, &b->draft, e) < 0)
        return -1;
    b->draft_ready = 1;
    char path[4096];
    if (plot_heldout_path(path, sizeof path, e) < 0)
        return -1;
    size_t text_len;
    if (setup_text_ids(&b->target.cfg, path, MAX_TEXT_BYTES, &b->ids, NULL, &b->n_ids, &text_len, NULL, 0, e) < 0)
        return -1;
    b->n_prompts = ctx->quick ? 2 : 8;
    b->n_generate = ctx->quick ? 24 : 64;
    if (b->n_ids < b->n_prompts * PROMPT_LEN)
        return err_set(e, ERR_RUNTIME, "plot: the held-out text makes %zu tokens, too few for %zu prompts",
                       b->n_ids, b->n_prompts);
    b->want = malloc(b->n_generate * sizeof(int));
    b->got = malloc(b->n_generate * sizeof(int));
    if (!b->want || !b->got)
        return err_set(e, ERR_RUNTIME, "out of memory");
    return 0;
}

static KvCache *open_cache(const Model *m, Err *e)
{
    KvGeometry g = model_kv_geometry(m, 1);
    return kv_open("contiguous", &g, e);
}

/* Prompt p of the held-out text: PROMPT_LEN tokens at an even spread. */
static const int *prompt_at(const Bench *b, size_t p)
{
    return b->ids + p * ((b->n_ids - PROMPT_LEN) / b->n_prompts);
}

/* The target alone from prompt p: tokens into b->want, its work and time. */
static int run_alone(Bench *b, const int *prompt, Counters *ctr, double *seconds, Err *e)
{
    KvCache *c = open_cache(&b->target, e);
    if (!c)
        return -1;
    const GenOptions go = { .n_generate = b->n_generate };
    const int rc = speculate_baseline(&b->target, c, prompt, PROMPT_LEN, &go, b->want, ctr, seconds, e);
    kv_free(c);
    return rc;
}

static int run_spec(Bench *b, const int *prompt, size_t k, SpecStats *st, Err *e)
{
    KvCache *tc = open_cache(&b->target, e), *dc = tc ? open_cache(&b->draft, e) : NULL;
    const int rc = dc ? speculate_greedy(&b->target, tc, &b->draft, dc, prompt, PROMPT_LEN, b->n_generate, k,
                                         b->got, st, e)
                      : -1;
    kv_free(tc);
    kv_free(dc);
    return rc;
}

/* One K over every prompt, interleaving the target alone and speculation. */
static int k_row(Bench *b, size_t k, size_t repeats, KRow *row, Err *e)
{
    memset(row, 0, sizeof *row);
    row->k = k;
    row->same_tokens = 1;
    for (size_t p = 0; p < b->n_prompts; p++) {
        const int *prompt = prompt_at(b, p);
        double best_alone = INFINITY, best_spec = INFINITY;
        Counters alone;
        SpecStats st;
        for (size_t r = 0; r < repeats; r++) {
            double t;
            if (run_alone(b, prompt, &alone, &t, e) < 0 || run_spec(b, prompt, k, &st, e) < 0)
                return -1;
            best_alone = t < best_alone ? t : best_alone;
            best_spec = st.seconds < best_spec ? st.seconds : best_spec;
        }
        row->same_tokens &= memcmp(b->want, b->got, b->n_generate * sizeof(int)) == 0;
        row->runs++;
        row->generated += st.generated;
        row->target_passes += st.target_passes - 1; /* the verification passes, not the prefill */
        row->drafted += st.drafted;
        row->accepted += st.accepted;
        row->refused += st.refused;
        row->target_rolled += st.target_rolled;
        row->draft_rolled += st.draft_rolled;
        for (size_t i = 0; i < k; i++) {
            row->proposed_at[i] += st.proposed_at[i];
            row->accepted_at[i] += st.accepted_at[i];
        }
        row->spec_flops += (double)(counters_total_flops(&st.target) + counters_total_flops(&st.draft));
        row->alone_flops += (double)counters_total_flops(&alone);
        row->spec_weight_bytes += (double)(st.target.weight_bytes_read + st.draft.weight_bytes_read);
        row->alone_weight_bytes += (double)alone.weight_bytes_read;
        row->alone_seconds += best_alone;
        row->spec_seconds += best_spec;
    }
    return 0;
}

static double share(size_t part, size_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

/* Tokens a verification pass yields if each proposal is kept with
 * probability a, independently, until the first refusal. */
static double tokens_per_pass_iid(double a, size_t k)
{
    return a >= 1.0 ? (double)(k + 1) : (1.0 - pow(a, (double)(k + 1))) / (1.0 - a);
}

static int write_rows(const PlotCtx *ctx, const KRow *rows, size_t n, Err *e)
{
    FILE *f = plot_open(ctx, "speculative.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "k\tprompts\tgenerated\tverify_passes\tdrafted\taccepted\trefused\taccept_rate\tagree_rate\t"
               "tokens_per_pass\t"
               "tokens_per_pass_iid\ttarget_rolled\tdraft_rolled\tspec_flops\talone_flops\tflop_ratio\t"
               "spec_weight_bytes\talone_weight_bytes\tweight_byte_ratio\tspec_seconds\talone_seconds\tspeedup\t"
               "same_tokens\n");
    for (size_t i = 0; i < n; i++) {
        const KRow *r = &rows[i];
        const double a = share(r->accepted, r->accepted + r->refused);
        /* each prompt's first token comes from the prefill, not a verification */
        const double per_pass = share(r->generated - r->runs, r->target_passes);
        fprintf(f, "%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%.4f\t%.4f\t%.4f\t%.4f\t%zu\t%zu\t%.6g\t%.6g\t%.4f\t%.6g\t%.6g\t%.4f\t"
                   "%.6g\t%.6g\t%.4f\t%d\n",
                r->k, r->runs, r->generated, r->target_passes, r->drafted, r->accepted, r->refused,
                share(r->accepted, r->drafted), a, per_pass,
                tokens_per_pass_iid(a, r->k), r->target_rolled, r->draft_rolled, r->spec_flops, r->alone_flops,
                r->alone_flops / r->spec_flops, r->spec_weight_bytes, r->alone_weight_bytes,
                r->alone_weight_bytes / r->spec_weight_bytes, r->spec_seconds, r->alone_seconds,
                r->alone_seconds / r->spec_seconds, r->same_tokens);
    }
    if (plot_close(f, "speculative.tsv", e) < 0)
        return -1;
    const KRow *last = &rows[n - 1]; /* the largest K: the share kept at each place */
    if (!(f = plot_open(ctx, "speculative.position.tsv", e)))
        return -1;
    fprintf(f, "position\tproposed\taccepted\taccept_rate\n");
    for (size_t i = 0; i < last->k; i++)
        fprintf(f, "%zu\t%zu\t%zu\t%.4f\n", i + 1, last->proposed_at[i], last->accepted_at[i],
                share(last->accepted_at[i], last->proposed_at[i]));
    return plot_close(f, "speculative.position.tsv", e);
}

int plot_speculative(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    static const size_t quick_ks[] = { 1, 2, 4 };
    const size_t n_k = ctx->quick ? sizeof quick_ks / sizeof quick_ks[0] : MAX_K;
    Bench b;
    KRow rows[MAX_K];
    int rc = bench_open(&b, ctx, e);
    PlotRuns runs;
    if (rc == 0)
        plot_runs_begin(&runs, ctx, "K", n_k);
    for (size_t i = 0; rc == 0 && i < n_k; i++) {
        rc = k_row(&b, ctx->quick ? quick_ks[i] : i + 1, ctx->quick ? 1 : REPEATS, &rows[i], e);
        plot_runs_done(&runs);
    }
    if (rc == 0)
        rc = write_rows(ctx, rows, n_k, e);
    if (rc == 0) {
        char caption[768];
        snprintf(caption, sizeof caption,
                 "%s drafts for %s, greedy, contiguous caches: %zu prompts of %d tokens cut at an even spread "
                 "from the held-out books (data/text/kjv-valid.txt), %zu tokens generated from each; every run's "
                 "tokens equal the target's alone.\nEach prompt runs the target alone and then speculatively, "
                 "both timed on one thread on %s, the fastest of %d each (timings).\nDashed in (c): the tokens a "
                 "pass would yield if each proposal were kept independently with probability a, "
                 "(1 - a^(K+1)) / (1 - a), a the share of judged proposals kept.",
                 DRAFT, TARGET, b.n_prompts, PROMPT_LEN, b.n_generate, ctx->machine, ctx->quick ? 1 : REPEATS);
        FILE *labels = plot_labels_open(ctx, "speculative", "Speculative decoding against K, the draft tokens a round",
                                        caption, e);
        rc = labels ? plot_close(labels, "speculative", e) : -1;
    }
    if (rc == 0) {
        size_t best = 0;
        for (size_t i = 1; i < n_k; i++)
            if (rows[i].alone_seconds / rows[i].spec_seconds > rows[best].alone_seconds / rows[best].spec_seconds)
                best = i;
        snprintf(note->note, sizeof note->note,
                 "proposals kept: %.1f%% at K = %zu, %.1f%% at K = %zu; fastest K = %zu, %.2fx the target alone",
                 100 * share(rows[0].accepted, rows[0].drafted), rows[0].k,
                 100 * share(rows[n_k - 1].accepted, rows[n_k - 1].drafted), rows[n_k - 1].k, rows[best].k,
                 rows[best].alone_seconds / rows[best].spec_seconds);
    }
    bench_free(&b);
    return rc;
}
