/* plot_retrieval.c: figure 16, a fact stated early and asked for late, on
 * real text. A sentence names someone ("And the name of the man was
 * Elimelech."), D tokens of held-out text follow, then the sentence comes
 * again and the name is the answer. Retrieval needs two things, measured
 * apart: the cache must still hold the name's rows when the question is
 * asked (a cache property), and the model must look them up (what the name
 * costs with the fact stated against without it, through each cache). A
 * third number asks the model alone: a passage read twice, is the second
 * reading cheaper? The names come from Ruth, a held-out book; the filler
 * is Ecclesiastes, which names none of them. The parts are encoded apart
 * and joined: for a model trained with a first token, the document is that
 * token and then continuations (tokenizer_encode_continuation), so it holds
 * exactly one, at position 0, as every sequence the model trained on. */
#include "plot/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/eval.h"
#include "stats/bootstrap.h"
#include "text/tokenizer.h"
#include "util/files.h"
#include "util/pool.h"

#define RETRIEVAL_MODEL "kjv-base"
#define FILLER_BOOK "Ecclesiastes 1\n" /* where the filler starts in the held-out text */
#define BUDGET 64                      /* rows per layer of every evicting cache */
#define REPEAT_TOKENS 160              /* the passage read twice */

static const struct {
    const char *question, *answer; /* the fact is question + answer + ".\n" */
} facts[] = {
    { "And the name of the man was", " Elimelech" },
    { "And his wife's name was", " Naomi" },
    { "And the name of the city was", " Bethlehemjudah" },
    { "And the name of the kinsman was", " Boaz" },
    { "And the name of his son was", " Obed" },
    { "And the name of the other was", " Orpah" },
    { "And the name of the land was", " Moab" },
    { "And the name of the elder son was", " Mahlon" },
};
#define N_FACTS (sizeof facts / sizeof facts[0])

static const size_t distances[] = { 16, 32, 64, 128, 256, 512, 896 }; /* the longest still fits 1024 */
#define N_DIST (sizeof distances / sizeof distances[0])
static const size_t quick_distances[] = { 16, 128 }; /* --quick: one inside every budget, one past it */
#define N_QUICK (sizeof quick_distances / sizeof quick_distances[0])

enum { C_EXACT, C_WINDOW, C_SINKS, C_H2O, C_SPARSE, C_Q4, C_KIVI2, N_CACHES };
static const char *const cache_column[N_CACHES] = { "exact", "window", "sinks4", "h2o", "sparse", "q4_0", "kivi2" };

static void cache_spec(char *buf, size_t cap, int c, size_t n)
{
    switch (c) {
    case C_EXACT: snprintf(buf, cap, "contiguous"); break;
    case C_WINDOW: snprintf(buf, cap, "ring:window=%d", BUDGET); break;
    case C_SINKS: snprintf(buf, cap, "ring:window=%d,sinks=4", BUDGET - 4); break;
    case C_H2O: snprintf(buf, cap, "h2o:budget=%d,recent=%d", BUDGET, BUDGET / 2); break;
    case C_SPARSE:
        snprintf(buf, cap, "paged:page=%d+sparse:threshold=%d,keep=%.6f", BUDGET / 4, BUDGET,
                 n > BUDGET ? (double)BUDGET / (double)n : 1.0);
        break;
    case C_Q4: snprintf(buf, cap, "contiguous+quant:k=q4_0,v=q4_0"); break;
    default: snprintf(buf, cap, "kivi:bits=2"); break;
    }
}

/* One document's token ids and where its parts lie. */
typedef struct {
    int *ids;
    size_t n;
    size_t name_at, name_len; /* the stated name's tokens (0, 0 without the fact) */
    size_t ask;               /* the question's last token: the step that predicts the answer */
    size_t answer_at, answer_len;
} Doc;

/* What the model, the tokenizer and the held-out filler give every run. */
typedef struct {
    Config trained;
    Model m;
    int model_ready;
    Tokenizer *tok;
    int *filler;
    size_t n_filler;
} Bench;

/* text as it continues the document: never a first token */
static int append_text(const Tokenizer *tok, const char *text, Doc *d, size_t cap, Err *e)
{
    int *ids;
    size_t n;
    if (tokenizer_encode_continuation(tok, text, strlen(text), &ids, &n, e) < 0)
        return -1;
    if (d->n + n > cap) {
        free(ids);
        return err_set(e, ERR_RUNTIME, "plot: the retrieval document outgrows %zu tokens", cap);
    }
    memcpy(d->ids + d->n, ids, n * sizeof *ids);
    d->n += n;
    free(ids);
    return 0;
}

/* [first token][fact][distance tokens of filler]\n[question][answer]: the
 * first token when the model has one (tokenizer_bos), the fact the question
 * and answer as a sentence, left out when stated is 0. */
static int build_doc(const Bench *b, size_t f, size_t distance, int stated, Doc *d, Err *e)
{
    const size_t cap = b->m.cfg.max_seq_len;
    memset(d, 0, sizeof *d);
    if (!(d->ids = malloc(cap * sizeof *d->ids)))
        return err_set(e, ERR_RUNTIME, "out of memory");
    char line[128];
    if (tokenizer_bos(b->tok) >= 0)
        d->ids[d->n++] = tokenizer_bos(b->tok);
    if (stated) {
        if (append_text(b->tok, facts[f].question, d, cap, e) < 0)
            return -1;
        d->name_at = d->n;
        if (append_text(b->tok, facts[f].answer, d, cap, e) < 0)
            return -1;
        d->name_len = d->n - d->name_at;
        if (append_text(b->tok, ".\n", d, cap, e) < 0)
            return -1;
    }
    if (d->n + distance > cap || distance > b->n_filler)
        return err_set(e, ERR_RUNTIME, "plot: no room for %zu filler tokens", distance);
    memcpy(d->ids + d->n, b->filler, distance * sizeof *d->ids);
    d->n += distance;
    snprintf(line, sizeof line, "\n%s", facts[f].question);
    if (append_text(b->tok, line, d, cap, e) < 0)
        return -1;
    d->ask = d->n - 1;
    d->answer_at = d->n;
    if (append_text(b->tok, facts[f].answer, d, cap, e) < 0)
        return -1;
    d->answer_len = d->n - d->answer_at;
    return 0;
}

/* At the step that feeds the question's last token, the share of the
 * stated name's rows each cache still holds, over every layer. */
typedef struct {
    KvCache **caches;
    const Doc *doc;
    size_t n_layers;
    double held[N_CACHES];
} HeldProbe;

static int probe_held(void *user, size_t done, size_t total)
{
    (void)total;
    HeldProbe *p = user;
    const Doc *d = p->doc;
    if (done != d->ask + 1 || d->name_len == 0)
        return 0;
    KvCell cells[64];
    const size_t upto = d->name_at + d->name_len; /* a sentence from the start: well inside cells */
    for (size_t c = 0; c < N_CACHES; c++) {
        size_t held = 0;
        for (size_t l = 0; l < p->n_layers; l++) {
            kv_cells(p->caches[c], l, 0, cells, upto);
            for (size_t i = d->name_at; i < upto; i++)
                held += cells[i].state == CELL_EXACT || cells[i].state == CELL_LOSSY || cells[i].state == CELL_SHARED;
        }
        p->held[c] = (double)held / (double)(p->n_layers * d->name_len);
    }
    return 0;
}

/* Run every cache over one document: the answer's cost in bits per cache
 * into bits[N_CACHES], and (when the fact is stated) what each holds. */
static int run_doc(const Bench *b, const Doc *d, double *bits, double *held, Err *e)
{
    KvCache *caches[N_CACHES] = { 0 };
    EvalResult res[N_CACHES];
    memset(res, 0, sizeof res);
    KvGeometry geo = model_kv_geometry(&b->m, 1);
    int rc = 0;
    for (int c = 0; rc == 0 && c < N_CACHES; c++) {
        char spec[128];
        cache_spec(spec, sizeof spec, c, d->n);
        if (!(caches[c] = kv_open(spec, &geo, e)))
            rc = err_wrap(e, "plot: %s", spec);
    }
    HeldProbe probe = { .caches = caches, .doc = d, .n_layers = b->m.cfg.n_layers };
    EvalOptions eo = { .prefill = 1, .per_position = 1 };
    if (rc == 0)
        rc = eval_run(&b->m, caches, N_CACHES, d->ids, d->n, &eo, res, probe_held, &probe, e);
    for (int c = 0; c < N_CACHES; c++) {
        if (rc == 0) {
            double nll = 0; /* scored k predicts the token at k + 1 */
            for (size_t i = d->answer_at; i < d->answer_at + d->answer_len; i++)
                nll += res[c].nll_at[i - 1];
            bits[c] = nll / log(2.0);
            if (held)
                held[c] = probe.held[c];
        }
        eval_result_free(&res[c]);
        kv_free(caches[c]);
    }
    return rc;
}

/* The held-out text from FILLER_BOOK on, as ids. */
static int load_filler(Bench *b, Err *e)
{
    char path[4096], *text;
    size_t len;
    if (plot_heldout_path(path, sizeof path, e) < 0)
        return -1;
    if (files_read_text(path, (size_t)64 << 20, &text, &len, e) < 0)
        return -1;
    const char *from = strstr(text, FILLER_BOOK);
    int rc = from ? 0 : err_set(e, ERR_RUNTIME, "plot: %s has no '%.14s'", path, FILLER_BOOK);
    if (rc == 0) {
        const size_t want = 4096; /* bytes: more than the longest distance and the repeated passage need */
        const size_t avail = len - (size_t)(from - text);
        rc = tokenizer_encode_continuation(b->tok, from, avail < want ? avail : want, &b->filler, &b->n_filler, e);
    }
    free(text);
    if (rc == 0 && b->n_filler < REPEAT_TOKENS)
        rc = err_set(e, ERR_RUNTIME, "plot: the filler makes only %zu tokens", b->n_filler);
    return rc;
}

static int bench_open(Bench *b, Err *e)
{
    memset(b, 0, sizeof *b);
    ModelOpts mo = { .model = RETRIEVAL_MODEL };
    if (setup_load_config(&mo, &b->trained, e) < 0 || setup_tokenizer(&b->trained, &b->tok, e) < 0)
        return -1;
    if (!b->tok)
        return err_set(e, ERR_RUNTIME, "plot: %s has no tokenizer", RETRIEVAL_MODEL);
    if (load_filler(b, e) < 0 || setup_model(&b->trained, NULL, 0, &b->m, e) < 0)
        return -1;
    b->model_ready = 1;
    return 0;
}

static void bench_free(Bench *b)
{
    if (b->model_ready)
        model_free(&b->m);
    tokenizer_free(b->tok);
    free(b->filler);
}

/* Does the model copy at all? REPEAT_TOKENS of filler, then the same again
 * through the exact cache (after the first token, if the model has one):
 * the mean nats a token of each reading. */
static int copy_test(const Bench *b, double *first, double *second, Err *e)
{
    const int bos = tokenizer_bos(b->tok);
    const size_t half = REPEAT_TOKENS, lead = bos >= 0, n = lead + 2 * half;
    int *ids = malloc(n * sizeof *ids);
    KvGeometry geo = model_kv_geometry(&b->m, 1);
    KvCache *exact = ids ? kv_open("contiguous", &geo, e) : NULL;
    EvalResult res;
    memset(&res, 0, sizeof res);
    int rc = ids ? (exact ? 0 : -1) : err_set(e, ERR_RUNTIME, "out of memory");
    if (rc == 0) {
        if (lead)
            ids[0] = bos;
        memcpy(ids + lead, b->filler, half * sizeof *ids);
        memcpy(ids + lead + half, b->filler, half * sizeof *ids);
        EvalOptions eo = { .prefill = 1, .per_position = 1 };
        rc = eval_run(&b->m, &exact, 1, ids, n, &eo, &res, NULL, NULL, e);
    }
    if (rc == 0) { /* scored k predicts token k + 1: the first reading from its second token, the second whole */
        double a = 0, s = 0;
        for (size_t k = lead; k + 1 < lead + half; k++)
            a += res.nll_at[k];
        for (size_t k = lead + half - 1; k + 1 < n; k++)
            s += res.nll_at[k];
        *first = a / (double)(half - 1);
        *second = s / (double)half;
    }
    eval_result_free(&res);
    kv_free(exact);
    free(ids);
    return rc;
}

typedef struct {
    double held[N_CACHES], gain[N_CACHES], bits[N_CACHES]; /* means over the facts */
    /* 95% intervals over the facts (a bootstrap resampling them): of the gain, and of the gain minus the
     * exact cache's on the same facts */
    double gain_lo[N_CACHES], gain_hi[N_CACHES], vs_lo[N_CACHES], vs_hi[N_CACHES];
    double first_token_ok; /* share of the documents that start as the model trained (first_token_ok) */
} DistRow;

/* One document of a distance's row: a fact, stated or not, through every cache. */
typedef struct {
    const Bench *b;
    PlotRuns *runs;
    size_t distance;
    double held[N_FACTS][N_CACHES], bits[2][N_FACTS][N_CACHES]; /* bits[stated][fact] */
    int rc[2][N_FACTS], start_ok[2][N_FACTS];
    Err err[2][N_FACTS];
} DistJobs;

/* 1 when d holds the model's first token exactly once, at position 0 (a
 * model without one: nowhere), as every sequence it trained on. */
static int first_token_ok(const Tokenizer *tok, const Doc *d)
{
    const int bos = tokenizer_bos(tok);
    size_t count = 0;
    for (size_t i = 0; i < d->n; i++)
        count += d->ids[i] == bos;
    return bos < 0 ? count == 0 : count == 1 && d->n > 0 && d->ids[0] == bos;
}

static void run_job(void *ctx, size_t i)
{
    DistJobs *js = ctx;
    const size_t f = i / 2, stated = i % 2 == 0;
    Doc d = { 0 };
    Err *e = &js->err[stated][f];
    int rc = build_doc(js->b, f, js->distance, (int)stated, &d, e);
    if (rc == 0) {
        js->start_ok[stated][f] = first_token_ok(js->b->tok, &d);
        rc = run_doc(js->b, &d, js->bits[stated][f], stated ? js->held[f] : NULL, e);
    }
    free(d.ids);
    js->rc[stated][f] = rc;
    plot_runs_done(js->runs);
}

/* The intervals of row's gains: the facts resampled with replacement, the
 * same resamples for every cache, so a cache against the exact one is
 * paired. */
static int gain_intervals(const DistJobs *js, size_t n_facts, DistRow *row, Err *e)
{
    Bootstrap bs;
    if (bootstrap_init(&bs, n_facts, EVAL_CI_RESAMPLES, EVAL_CI_SEED, e) < 0)
        return -1;
    double gain[N_FACTS], vs[N_FACTS], one[N_FACTS];
    int rc = 0;
    for (int c = 0; rc == 0 && c < N_CACHES; c++) {
        for (size_t f = 0; f < n_facts; f++) {
            gain[f] = js->bits[0][f][c] - js->bits[1][f][c];
            vs[f] = gain[f] - (js->bits[0][f][C_EXACT] - js->bits[1][f][C_EXACT]);
            one[f] = 1;
        }
        BootInterval g, d;
        rc = bootstrap_ratio(&bs, gain, one, EVAL_CI_LEVEL, &g, e) < 0 ||
                     bootstrap_ratio(&bs, vs, one, EVAL_CI_LEVEL, &d, e) < 0
                 ? -1
                 : 0;
        row->gain_lo[c] = g.lo;
        row->gain_hi[c] = g.hi;
        row->vs_lo[c] = d.lo;
        row->vs_hi[c] = d.hi;
    }
    bootstrap_free(&bs);
    return rc;
}

/* Every fact at one distance, stated and not, each document on its own on
 * the pool: the rows of the table, the same bytes for any thread count. */
static int measure_distance(const Bench *b, PlotRuns *runs, size_t distance, size_t n_facts, DistRow *row, Err *e)
{
    memset(row, 0, sizeof *row);
    DistJobs *js = calloc(1, sizeof *js);
    if (!js)
        return err_set(e, ERR_RUNTIME, "out of memory");
    js->b = b;
    js->runs = runs;
    js->distance = distance;
    pool_run(2 * n_facts, run_job, js);
    int rc = 0;
    for (size_t f = 0; rc == 0 && f < n_facts; f++)
        for (int stated = 1; rc == 0 && stated >= 0; stated--)
            if ((rc = js->rc[stated][f]) < 0 && e)
                *e = js->err[stated][f];
    for (size_t f = 0; rc == 0 && f < n_facts; f++) {
        row->first_token_ok += (js->start_ok[0][f] + js->start_ok[1][f]) / (2.0 * (double)n_facts);
        for (int c = 0; c < N_CACHES; c++) {
            row->held[c] += js->held[f][c] / (double)n_facts;
            row->bits[c] += js->bits[1][f][c] / (double)n_facts;
            row->gain[c] += (js->bits[0][f][c] - js->bits[1][f][c]) / (double)n_facts;
        }
    }
    if (rc == 0)
        rc = gain_intervals(js, n_facts, row, e);
    free(js);
    return rc;
}

static int write_table(const PlotCtx *ctx, const size_t *dist, const DistRow *rows, size_t n_dist, Err *e)
{
    FILE *f = plot_open(ctx, "retrieval.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "distance");
    for (int c = 0; c < N_CACHES; c++)
        fprintf(f, "\t%s_held\t%s_answer_bits\t%s_gain_bits", cache_column[c], cache_column[c], cache_column[c]);
    for (int c = 0; c < N_CACHES; c++) /* then the intervals over the facts */
        fprintf(f, "\t%s_gain_lo\t%s_gain_hi\t%s_vs_exact_lo\t%s_vs_exact_hi", cache_column[c], cache_column[c],
                cache_column[c], cache_column[c]);
    fprintf(f, "\tfirst_token_ok\n");
    for (size_t i = 0; i < n_dist; i++) {
        fprintf(f, "%zu", dist[i]);
        for (int c = 0; c < N_CACHES; c++)
            fprintf(f, "\t%.4f\t%.4f\t%.4f", rows[i].held[c], rows[i].bits[c], rows[i].gain[c]);
        for (int c = 0; c < N_CACHES; c++)
            fprintf(f, "\t%.4f\t%.4f\t%.4f\t%.4f", rows[i].gain_lo[c], rows[i].gain_hi[c], rows[i].vs_lo[c],
                    rows[i].vs_hi[c]);
        fprintf(f, "\t%.4f\n", rows[i].first_token_ok);
    }
    return plot_close(f, "retrieval.tsv", e);
}

static int write_labels(const PlotCtx *ctx, size_t n_facts, double first, double second, Err *e)
{
    char caption[1024];
    snprintf(caption, sizeof caption,
             "%s; %zu facts from Ruth (held out), e.g. 'And the name of the man was Elimelech.', then D tokens of "
             "Ecclesiastes, then the sentence again: the name is the answer, scored in bits.\nEvicting caches hold "
             "%d rows per layer (window; 4 sinks + %d; H2O, half recent; block-sparse pages of %d).\nDoes the model "
             "copy at all? %d tokens of Ecclesiastes read twice through the exact cache: %.3f nats a token the first "
             "time, %.3f the second.\nBars: 95%% intervals of the mean gain, a percentile bootstrap resampling the "
             "%zu facts (so few that the bars are rough); retrieval.tsv adds each cache's gain minus the exact "
             "cache's, paired.",
             RETRIEVAL_MODEL, n_facts, BUDGET, BUDGET - 4, BUDGET / 4, REPEAT_TOKENS, first, second, n_facts);
    FILE *labels = plot_labels_open(ctx, "retrieval", "A fact stated early, asked for late, on real text", caption, e);
    if (!labels)
        return -1;
    fprintf(labels, "budget = %d\nfirst_read = %.6f\nsecond_read = %.6f\n", BUDGET, first, second);
    return plot_close(labels, "retrieval", e);
}

int plot_retrieval(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    Bench b;
    const size_t *dist = ctx->quick ? quick_distances : distances;
    const size_t n_dist = ctx->quick ? N_QUICK : N_DIST, n_facts = ctx->quick ? 1 : N_FACTS;
    DistRow rows[N_DIST];
    double first = 0, second = 0;
    int rc = bench_open(&b, e);
    PlotRuns runs;
    plot_runs_begin(&runs, ctx, "document", n_dist * 2 * n_facts);
    for (size_t i = 0; rc == 0 && i < n_dist; i++)
        rc = measure_distance(&b, &runs, dist[i], n_facts, &rows[i], e);
    if (rc == 0)
        rc = copy_test(&b, &first, &second, e);
    if (rc == 0)
        rc = write_table(ctx, dist, rows, n_dist, e);
    if (rc == 0)
        rc = write_labels(ctx, n_facts, first, second, e);
    if (rc == 0) {
        const DistRow *far = &rows[n_dist - 1];
        snprintf(note->note, sizeof note->note,
                 "at %zu tokens: window holds %.0f%%, h2o %.0f%%; the fact saves the exact cache %.2f bits; "
                 "read twice: %.3f then %.3f nats a token",
                 dist[n_dist - 1], 100 * far->held[C_WINDOW], 100 * far->held[C_H2O], far->gain[C_EXACT], first,
                 second);
    }
    bench_free(&b);
    return rc;
}
