/* cmd_run.c: `kvscope run`: generate with a cache, without one, or both
 * (--compare), printing what every forward pass did. The options are read
 * in run_options.c, an encoder-decoder goes to run_beam.c, and the lines
 * are report/run_report.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/run_beam.h"
#include "app/run_options.h"
#include "app/run_speculate.h"
#include "kv/cache.h"
#include "model/generate.h"
#include "report/mla_report.h"
#include "report/quality_report.h"
#include "report/run_report.h"
#include "sim/roofs.h"
#include "sim/compare.h"
#include "util/checked.h"

/* Relative logit difference accepted between cached and uncached f32 runs. */
#define LOGIT_REL_TOL 1e-5
/* With integer dots (a q8_0/q4_0 checkpoint's default) each matvec rounds its input to 8-bit codes, so inputs
 * that differ in their last bits between the two runs (sums in another
 * order) can land one code apart: the logits then differ by a step of that
 * rounding, not by float rounding, and no tolerance of the f32 kind holds.
 * The tokens must still agree; the difference is reported, not bounded. */
#define LOGIT_REL_TOL_INT_DOT INFINITY

/* What one run collects from its passes. */
typedef struct {
    const char *label;
    OutFormat fmt;
    FILE *out;     /* where its rows go: stdout, or (table) the rows held back until the text is shown */
    size_t n_seqs, vocab;
    Counters total;
    json_t *steps;
    float *logits; /* [n_generate][n_seqs][vocab], the logits each token was chosen from */
    size_t n_logged;
    int at_eos;    /* the run stopped at the end-of-text token (StepReport.at_eos) */
    MlaRunStats mla; /* MLA models: tile LRU and prefetch statistics */
    const Roofs *roofs; /* the machine's roofs, for each pass's shares */
} Collector;

static int on_step(void *user, const StepReport *r)
{
    Collector *col = user;
    StepRow row = { .run = col->label, .rep = *r, .n_seqs = col->n_seqs, .sampled0 = r->sampled ? r->sampled[0] : -1,
                    .roofs = col->roofs };
    report_step(col->out, col->fmt, &row, col->steps);
    counters_add(&col->total, &r->ctr);
    mla_report_collect(&col->mla, r);
    if (r->sampled) {
        size_t n = col->n_seqs * col->vocab;
        memcpy(col->logits + col->n_logged++ * n, r->logits, n * sizeof(float));
    }
    col->at_eos |= r->at_eos;
    return 0;
}

/* A decoder-only run: what it owns between opening and closing. */
typedef struct {
    Model m;
    int model_ready;
    KvCache *cache;        /* NULL with --no-cache */
    Tokenizer *tok;        /* the model's, or NULL */
    int *prompt;           /* [batch][plen] */
    size_t batch, plen;
    int *out_c, *out_u;    /* [batch][n_generate] tokens of the cached and uncached runs */
    Collector cc, cu;
    json_t *root;          /* --format json: the document printed at the end */
} Run;

static size_t activation_bytes(const Config *c, size_t rows)
{
    return size_mul3_sat(rows, 2 * c->d_model + 2 * config_q_dim(c) + 2 * config_kv_dim(c) + 2 * c->ffn_dim,
                         sizeof(float));
}

/* The prompt, the model and the cache the options name, and room for the
 * results; -1 with e set (a bad spec is one clean line: nothing is printed
 * before this succeeds). */
static int run_open(Run *r, RunOpts *o, const Config *cfg, Err *e)
{
    /* only a cache that shifts runs past the context, and only alone */
    const int may_pass = !o->no_cache && !o->compare && !o->quality && kv_spec_shifts(o->cache_spec);
    o->po.max_len = may_pass ? SETUP_MAX_PROMPT : 0;
    if (setup_tokenizer(cfg, &r->tok, e) < 0 || setup_make_prompt(&o->po, cfg, &r->prompt, &r->batch, &r->plen, e) < 0 ||
        (structure_on(&o->structure) && structure_place(&o->structure, r->plen, e) < 0))
        return -1;
    size_t need = generate_positions(r->plen, o->go.n_generate);
    const int past = need > cfg->max_seq_len;
    if (past && !may_pass) /* refused before the weights are read */
        return err_set(e, ERR_USAGE, "a prompt of %zu plus %zu generated tokens needs %zu positions; model '%s' "
                       "has max_seq_len %zu%s", r->plen, o->go.n_generate, need, cfg->name, cfg->max_seq_len,
                       o->no_cache || o->compare || o->quality ? "" : " (a shift cache runs past it)");
    KvGeometry shape = config_kv_geometry(cfg, r->batch); /* an MLA model's is its latent row */
    size_t cache_bytes = size_mul3_sat(cfg->n_layers, r->batch,
                                       size_mul_sat(cfg->max_seq_len, kv_row_pair_bytes(&shape, FMT_F32, FMT_F32)));
    size_t n_out, n_logits, logit_bytes; /* every step's logits are kept, for the comparison */
    if (size_mul(r->batch, o->go.n_generate, &n_out) < 0 || size_mul(n_out, cfg->vocab, &n_logits) < 0 ||
        size_mul(n_logits, 2 * sizeof(float), &logit_bytes) < 0)
        return err_set(e, ERR_USAGE, "%zu sequences x %zu tokens x %zu logits: too many to count", r->batch,
                       o->go.n_generate, cfg->vocab);
    size_t act_rows = size_mul_sat(r->batch, o->no_cache || o->compare ? need : r->plen);
    size_t extra = size_add_sat(size_add_sat(cache_bytes, logit_bytes), activation_bytes(cfg, act_rows));
    if (setup_load_model(&o->mo, extra, &r->m, e) < 0)
        return -1;
    r->model_ready = 1;
    r->m.attend = o->attend;
    r->m.bugs = o->bugs;
    r->m.mla_path = o->mla;
    r->m.bias = structure_on(&o->structure) ? &o->structure.bias : NULL;
    KvGeometry geo = model_kv_geometry(&r->m, r->batch);
    if (!o->no_cache && !(r->cache = kv_open(o->cache_spec, &geo, e)))
        return -1;
    if (past && !kv_shifts(r->cache))
        return err_set(e, ERR_USAGE, "a prompt of %zu plus %zu generated tokens needs %zu positions; model '%s' "
                       "has max_seq_len %zu (a shift cache runs past it)", r->plen, o->go.n_generate, need,
                       cfg->name, cfg->max_seq_len);

    r->cc = (Collector){ .label = "cached", .fmt = o->fmt, .n_seqs = r->batch, .vocab = cfg->vocab };
    r->cu = (Collector){ .label = "uncached", .fmt = o->fmt, .n_seqs = r->batch, .vocab = cfg->vocab };
    r->out_c = calloc(n_out, sizeof(int));
    r->out_u = calloc(n_out, sizeof(int));
    /* zeros past a run that stops at its end-of-text token: the comparison reads every step */
    r->cc.logits = calloc(n_logits, sizeof(float));
    r->cu.logits = calloc(n_logits, sizeof(float));
    if (!r->out_c || !r->out_u || !r->cc.logits || !r->cu.logits)
        return err_set(e, ERR_RUNTIME, "out of memory for %zu logits", n_logits);
    return 0;
}

static void run_close(Run *r)
{
    kv_free(r->cache);
    json_decref(r->root);
    free(r->out_c);
    free(r->out_u);
    free(r->cc.logits);
    free(r->cu.logits);
    free(r->prompt);
    tokenizer_free(r->tok);
    if (r->model_ready)
        model_free(&r->m);
}

static json_t *json_root(const Run *r, const RunOpts *o, json_t *steps)
{
    char desc[512];
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "model", r->m.cfg.name, "weights", r->m.source,
                     "kernels", r->m.kern->isa, "attention", attend_algo_name(r->m.attend), "cache",
                     o->no_cache ? "none" : o->cache_spec, "structure",
                     structure_describe(&o->structure, desc, sizeof desc), "steps", steps);
}

static void print_header(const Run *r, const RunOpts *o, const char *cache)
{
    RunHeader h = { .preset = o->has_preset ? &o->preset : NULL, .cache = cache, .batch = r->batch,
                    .plen = r->plen, .po = &o->po, .go = &o->go, .structure = &o->structure };
    report_run_header(stdout, &r->m, &h);
}

/* --quality: the cache against an exact shadow (report/quality_report.c). */
static int run_quality(Run *r, const RunOpts *o, Err *e)
{
    if (o->fmt == OUT_TABLE)
        print_header(r, o, o->cache_spec);
    char desc[512];
    return quality_report(&r->m, r->cache, r->prompt, r->plen, &o->go, o->fmt,
                          structure_describe(&o->structure, desc, sizeof desc), e);
}

/* The comparison after --compare: 0, or 1 with e set when an exact cache's
 * run differs from the uncached one (its numbers are printed first). */
static int compare(Run *r, const RunOpts *o, Err *e)
{
    GenComparison c;
    compare_generations(r->out_c, r->out_u, r->cc.logits, r->cu.logits, r->batch, o->go.n_generate,
                        r->m.cfg.vocab, &r->cc.total, &r->cu.total, &c);
    const double tol = model_int_dots(&r->m) ? LOGIT_REL_TOL_INT_DOT : LOGIT_REL_TOL;
    report_compare(stdout, o->fmt, &c, tol, &r->cc.total, &r->cu.total, r->root);
    int exact = r->cache && !r->cache->lossy && !o->bugs;
    if (o->bugs && o->fmt == OUT_TABLE)
        printf("(a pitfall is on: the cached run is wrong on purpose; the uncached run is the reference)\n");
    else if (!exact && o->fmt == OUT_TABLE)
        printf("(a lossy cache: these differences are what it gives up, not a fault)\n");
    if (exact && (!c.same || c.logit_rel > tol)) {
        err_set(e, ERR_RUNTIME, "cached and uncached generation differ (%s; logit difference %.3g relative)",
                c.same ? "same tokens" : "different tokens", c.logit_rel);
        return 1;
    }
    return 0;
}

/* Generate cached, uncached or both, then (table) the tokens and text
 * generated first, where a reader sees them, then every pass's row, the
 * totals and the comparison: 0; 1 with e set when an exact cache disagrees;
 * -1 with e set when a pass fails. */
static int run_generate(Run *r, const RunOpts *o, Err *e)
{
    char *rows = NULL;
    size_t rows_len = 0;
    FILE *out = o->fmt == OUT_TABLE ? open_memstream(&rows, &rows_len) : stdout;
    if (!out)
        return err_set(e, ERR_RUNTIME, "out of memory for the table of passes");
    r->cc.out = r->cu.out = out;
    report_header(out, o->fmt);
    int run_cached = !o->no_cache, run_uncached = o->no_cache || o->compare;
    int rc = (run_cached && generate(&r->m, r->cache, r->prompt, r->batch, r->plen, &o->go, r->out_c, on_step,
                                     &r->cc, e) < 0) ||
             (run_uncached && generate(&r->m, NULL, r->prompt, r->batch, r->plen, &o->go, r->out_u, on_step, &r->cu,
                                       e) < 0) ? -1 : 0;
    if (out != stdout)
        fclose(out);
    const Collector *shown = run_cached ? &r->cc : &r->cu;
    RunTokens tokens = { .tok = r->tok, .prompt = r->prompt, .plen = r->plen,
                         .out = run_cached ? r->out_c : r->out_u, .batch = r->batch, .n = shown->n_logged,
                         .stride = o->go.n_generate, .at_eos = shown->at_eos, .eos = r->m.cfg.eos_token };
    if (rc == 0 && o->fmt == OUT_TABLE) {
        print_header(r, o, o->no_cache ? "none (recompute every step)" : o->cache_spec);
        report_tokens(stdout, o->fmt, &tokens, NULL);
        printf("\n");
        fwrite(rows, 1, rows_len, stdout);
    }
    free(rows);
    if (rc < 0)
        return -1;

    json_t *totals = r->root ? json_object() : NULL;
    if (run_cached) {
        report_totals(stdout, o->fmt, "cached", &r->cc.total, totals);
        report_roofline(stdout, o->fmt, "cached", &r->cc.total, r->cc.roofs, totals);
        report_pages(stdout, o->fmt, r->cache, r->root);
        mla_report_summary(stdout, o->fmt, "cached", &r->m, &r->cc.mla, r->cache, r->root);
    }
    if (run_uncached) {
        report_totals(stdout, o->fmt, "uncached", &r->cu.total, totals);
        report_roofline(stdout, o->fmt, "uncached", &r->cu.total, r->cu.roofs, totals);
        mla_report_summary(stdout, o->fmt, "uncached", &r->m, &r->cu.mla, NULL, r->root);
    }
    report_roofs(stdout, o->fmt, r->cc.roofs, r->root);
    if (r->root)
        json_object_set_new(r->root, "totals", totals);
    if (o->compare && compare(r, o, e) != 0)
        return 1;
    if (r->root)
        report_tokens(stdout, o->fmt, &tokens, r->root);
    return 0;
}

/* An encoder-decoder (or --beams): beam search, in run_beam.c. */
static int run_beams(const RunOpts *o, const Config *cfg)
{
    BeamRunArgs ba = { .mo = &o->mo, .po = &o->po, .beams = o->beams, .src_len = o->src_len,
                       .tokens = o->tokens_given ? o->go.n_generate : 0, .alpha = o->alpha,
                       .cache_spec = o->cache_spec, .attend = o->attend, .no_cache = o->no_cache,
                       .compare = o->compare, .fmt = o->fmt, .chunk = o->go.chunk, .top_k = o->go.top_k,
                       .temperature = o->go.temperature, .bugs = o->bugs };
    if (o->has_preset && o->fmt == OUT_TABLE)
        printf("preset %s: %s\n", o->preset.name, o->preset.description);
    return run_beam(&ba, cfg);
}

int cmd_run(int argc, char **argv)
{
    RunOpts o = { .mo.model = "kjv-tiny", .go.n_generate = 16, .go.sample_seed = 1, .cache_spec = "contiguous",
                  .attend = ATTEND_FLASH, .alpha = 1.0 };
    Err e = { 0 };
    int pr = run_options_read(argc, argv, &o, &e);
    if (pr == 1) {
        run_options_help();
        return EXIT_OK;
    }
    Config cfg;
    if (pr < 0 || setup_load_config(&o.mo, &cfg, &e) < 0 || run_options_check(&o, &cfg, &e) < 0)
        return cli_fail(&e);
    if (cfg.architecture == ARCH_ENCDEC || o.beams || o.src_len || o.alpha_given)
        return run_beams(&o, &cfg);
    if (o.speculate)
        return run_speculate(&o, &cfg);

    Run r = { 0 };
    Roofs roofs = { 0 }; /* given, kept by bench, or probed now: each pass's shares of them */
    int rc = run_open(&r, &o, &cfg, &e);
    if (rc == 0 && !o.quality)
        rc = roofs_get(&roofs, r.m.kern, 1, &e);
    r.cc.roofs = r.cu.roofs = &roofs;
    if (rc == 0 && o.fmt == OUT_JSON) {
        r.cc.steps = r.cu.steps = json_array();
        r.root = json_root(&r, &o, r.cc.steps);
    }
    /* a cache too small fails here, before the header: nothing on stdout */
    if (rc == 0 && !o.no_cache && r.cache)
        rc = kv_check_room(r.cache, generate_positions(r.plen, o.go.n_generate), &e);
    if (rc == 0)
        rc = o.quality ? run_quality(&r, &o, &e) : run_generate(&r, &o, &e);
    if (r.root && !o.quality && rc >= 0) /* a failed comparison still shows its numbers */
        json_dumpf(r.root, stdout, JSON_INDENT(2)), printf("\n");
    fflush(stdout);
    run_close(&r);
    return rc == 0 ? EXIT_OK : cli_fail(&e);
}
