/* cmd_run.c: `kvscope run`: generate with a cache, without one, or both
 * (--compare), printing what every forward pass did. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/run_beam.h"
#include "report/mla_report.h"
#include "sim/preset.h"
#include "report/quality_report.h"
#include "report/run_report.h"
#include "kv/cache.h"
#include "model/generate.h"
#include "model/structure.h"
#include "util/parse.h"

/* Relative logit difference accepted between cached and uncached f32 runs. */
#define LOGIT_REL_TOL 1e-5

typedef struct {
    ModelOpts mo;
    PromptOpts po;
    GenOptions go;
    const char *cache_spec;
    AttendAlgo attend;
    unsigned bugs;
    int no_cache, compare, quality;
    OutFormat fmt;
    size_t beams, src_len; /* encoder-decoder beam search (run_beam.c); 0 = not given */
    double alpha;
    int tokens_given, alpha_given;
    MlaPath mla; /* --mla (run_mla.c) */
    int mla_given;
    const Preset *preset; /* --preset: defaults the options above override */
    Structure structure;  /* --structure */
} RunOpts;

static void help(void)
{
    char caches[2048]; /* kv_spec_help: every layout and modifier, about 1.5 KB */
    kv_spec_help(caches, sizeof caches);
    printf("usage: kvscope run [OPTIONS]\n\n"
           "Generate tokens with a KV cache (default), without one (--no-cache), or both\n"
           "(--compare), and print what every forward pass did: tokens projected, cache\n"
           "length, attention shape, FLOPs, bytes moved and time. Generating N tokens takes\n"
           "N passes: a prefill over the prompt, then N-1 one-token decode steps; without a\n"
           "cache every pass re-runs the whole sequence.\n\n"
           "model:\n%s\n"
           "prompt:\n%s\n"
           "generation:\n"
           "  --tokens N          tokens to generate per sequence (default 16)\n"
           "  --chunk C           prefill the prompt in chunks of C tokens (default: all at once)\n"
           "  --temperature T     sample at temperature T (default 0: greedy)\n"
           "  --top-k K           with --temperature, sample among the K likeliest (default: all)\n"
           "  --sample-seed S     seed of the sampler (default 1; gsl mt19937)\n\n"
           "cache:\n"
           "  --cache SPEC        the cache (default contiguous); accepted:\n%s"
           "  --attention FORM    flash (default: tiles of " STR_OF(ATTEND_TILE) ", online softmax, dequantization\n"
           "                      fused), naive (all scores, then softmax), or materialize\n"
           "                      (naive over an f32 view of the cache, its traffic counted)\n"
           "  --bug NAME          commit one of the document's pitfalls in the cached run, on\n"
           "                      purpose (repeatable): rope-position, mask-in-decode,\n"
           "                      rope-on-v, ignore-append; --compare then shows the damage\n"
           "%s"
           "  --preset NAME       a source document's system: marlin (seed 000), mla (001),\n"
           "                      teaching (002), encdec (003), mixed (004); its model, cache\n"
           "                      and workload are defaults the other options override\n"
           "  --no-cache          recompute everything at every step\n"
           "  --quality           measure the cache against an exact shadow run fed the same\n"
           "                      tokens: attention error and attention mass kept per layer,\n"
           "                      logit error, and where greedy tokens first differ\n"
           "  --compare           run cached and uncached; report whether the tokens are\n"
           "                      identical, the largest logit difference, and the ratios\n\n"
           "attention structure (decoder-only models; the output names it):\n%s"
           "  e.g. --structure retrieval --cache ring:window=16 --quality: the needle falls out\n\n"
           "encoder-decoder (beam search; the model's architecture = encdec):\n%s\n"
           "output:\n"
           "  --format F          table (default), tsv (one row per pass) or json\n\n"
           "Counters are measured where the work happens. FLOPs count a multiply-add as 2;\n"
           "softmax is counted as 5 FLOPs per score (an estimate, labelled so).\n"
           "example: kvscope run --model small --prompt-len 10 --tokens 50 --compare\n",
           cli_model_help, cli_prompt_help, caches, run_mla_help, structure_help, run_beam_help);
}

static int parse_options(int argc, char **argv, RunOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },   { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },     { "shared", no_argument, 0, 0 },
        { "prompt", required_argument, 0, 0 },  { "prompt-len", required_argument, 0, 0 },
        { "prompt-seed", required_argument, 0, 0 }, { "batch", required_argument, 0, 0 },
        { "tokens", required_argument, 0, 0 },  { "chunk", required_argument, 0, 0 },
        { "temperature", required_argument, 0, 0 }, { "top-k", required_argument, 0, 0 },
        { "sample-seed", required_argument, 0, 0 }, { "cache", required_argument, 0, 0 },
        { "no-cache", no_argument, 0, 0 },      { "compare", no_argument, 0, 0 },
        { "quality", no_argument, 0, 0 },
        { "attention", required_argument, 0, 0 }, { "preset", required_argument, 0, 0 }, { "bug", required_argument, 0, 0 },
        { "format", required_argument, 0, 0 },  { "help", no_argument, 0, 'h' },
        { "beams", required_argument, 0, 0 },   { "src-len", required_argument, 0, 0 },
        { "alpha", required_argument, 0, 0 },   { "mla", required_argument, 0, 0 },
        { "structure", required_argument, 0, 0 },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "run", &name, e)) == CLI_OPTION) {
        int taken = cli_model_option(&o->mo, name, optarg, e);
        if (taken == 0)
            taken = cli_prompt_option(&o->po, name, optarg, e);
        if (taken < 0)
            return -1;
        if (taken)
            continue;
        int rc = 0;
        if (strcmp(name, "tokens") == 0) {
            rc = parse_size(optarg, "--tokens", &o->go.n_generate, e);
            o->tokens_given = 1;
        } else if (strcmp(name, "beams") == 0)
            rc = parse_size(optarg, "--beams", &o->beams, e);
        else if (strcmp(name, "src-len") == 0)
            rc = parse_size(optarg, "--src-len", &o->src_len, e);
        else if (strcmp(name, "alpha") == 0)
            rc = parse_double(optarg, "--alpha", &o->alpha, e), o->alpha_given = 1;
        else if (strcmp(name, "chunk") == 0)
            rc = parse_size(optarg, "--chunk", &o->go.chunk, e);
        else if (strcmp(name, "structure") == 0)
            rc = structure_parse(optarg, &o->structure, e);
        else if (strcmp(name, "temperature") == 0) {
            rc = parse_double(optarg, "--temperature", &o->go.temperature, e);
            if (rc == 0 && o->go.temperature < 0)
                rc = err_set(e, ERR_USAGE, "--temperature: must be 0 (greedy) or more, got %s", optarg);
        } else if (strcmp(name, "top-k") == 0)
            rc = parse_size(optarg, "--top-k", &o->go.top_k, e);
        else if (strcmp(name, "sample-seed") == 0) {
            unsigned long long v;
            rc = parse_u64(optarg, "--sample-seed", &v, e);
            o->go.sample_seed = v;
        } else if (strcmp(name, "cache") == 0)
            o->cache_spec = optarg;
        else if (strcmp(name, "attention") == 0) {
            if (attend_algo_parse(optarg, &o->attend) < 0)
                rc = err_set(e, ERR_USAGE, "--attention: '%s' is not one of flash, naive, materialize", optarg);
        } else if (strcmp(name, "bug") == 0) {
            Bug b;
            if (bug_parse(optarg, &b) < 0)
                rc = err_set(e, ERR_USAGE, "--bug: '%s' is not one of %s", optarg, bug_names);
            o->bugs |= b;
        } else if (strcmp(name, "no-cache") == 0)
            o->no_cache = 1;
        else if (strcmp(name, "preset") == 0)
            ; /* applied before the options, by preset_scan */
        else if (strcmp(name, "quality") == 0)
            o->quality = 1;
        else if (strcmp(name, "compare") == 0)
            o->compare = 1;
        else if (strcmp(name, "format") == 0)
            rc = out_format_parse(optarg, &o->fmt, e);
        else if (strcmp(name, "mla") == 0)
            rc = run_mla_parse(optarg, &o->mla, e), o->mla_given = 1;
        if (rc < 0)
            return -1;
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (optind < argc)
        return err_set(e, ERR_USAGE, "run: unexpected argument '%s' (see `kvscope run --help`)", argv[optind]);
    if (o->no_cache && o->compare)
        return err_set(e, ERR_USAGE, "run: --no-cache and --compare exclude each other");
    if (o->quality && (o->no_cache || o->compare))
        return err_set(e, ERR_USAGE, "run: --quality measures a cache; it excludes --no-cache and --compare");
    if (o->quality && o->po.batch > 1)
        return err_set(e, ERR_USAGE, "run: --quality measures one sequence; drop --batch");
    return 0;
}

/* What one run collects from its passes. */
typedef struct {
    const char *label;
    OutFormat fmt;
    size_t n_seqs, vocab;
    Counters total;
    json_t *steps;
    float *logits; /* [n_generate][n_seqs][vocab], the logits each token was chosen from */
    size_t n_logged;
    RunMla mla;    /* MLA models: tile LRU and prefetch statistics (run_mla.c) */
} Collector;

static int on_step(void *user, const StepReport *r)
{
    Collector *col = user;
    StepRow row = { .run = col->label, .rep = *r, .n_seqs = col->n_seqs, .sampled0 = r->sampled ? r->sampled[0] : -1 };
    report_step(stdout, col->fmt, &row, col->steps);
    counters_add(&col->total, &r->ctr);
    run_mla_collect(&col->mla, r);
    if (r->sampled) {
        size_t n = col->n_seqs * col->vocab;
        memcpy(col->logits + col->n_logged++ * n, r->logits, n * sizeof(float));
    }
    return 0;
}


/* First step whose chosen tokens differ between the runs, or n_gen. */
static size_t first_divergence(const int *a, const int *b, size_t batch, size_t n_gen)
{
    for (size_t g = 0; g < n_gen; g++)
        for (size_t s = 0; s < batch; s++)
            if (a[s * n_gen + g] != b[s * n_gen + g])
                return g;
    return n_gen;
}

/* Largest |a - b| over the given steps' logits relative to that step's
 * largest |b|. Only steps fed the same tokens are comparable: after the
 * runs choose differently, their inputs differ and so would any logits. */
static double max_rel_logit_diff(const float *a, const float *b, size_t steps, size_t n, double *abs_out)
{
    double worst_rel = 0, worst_abs = 0;
    for (size_t s = 0; s < steps; s++) {
        double scale = 0, d = 0;
        for (size_t i = 0; i < n; i++) {
            scale = fmax(scale, fabs(b[s * n + i]));
            d = fmax(d, fabs((double)a[s * n + i] - b[s * n + i]));
        }
        worst_abs = fmax(worst_abs, d);
        worst_rel = fmax(worst_rel, scale > 0 ? d / scale : d);
    }
    *abs_out = worst_abs;
    return worst_rel;
}

static void print_header(const Model *m, const RunOpts *o, const char *cache_desc, size_t batch, size_t plen)
{
    const Config *c = &m->cfg;
    if (o->preset)
        printf("preset %s: %s\n", o->preset->name, o->preset->description);
    printf("model %s: d_model %zu, %zu layers%s, %zu heads, %zu KV heads, head_dim %zu, ffn %zu, vocab %zu, "
           "max_seq_len %zu\n",
           c->name, c->d_model, c->n_layers, c->shared_layers ? " (shared weights)" : "", c->n_heads,
           c->n_kv_heads, c->head_dim, c->ffn_dim, c->vocab, c->max_seq_len);
    printf("weights: %s; kernels: %s; attention: %s\n", m->source, m->kern->isa,
           run_mla_attention_name(m, attend_algo_name(m->attend)));
    printf("cache: %s; prompt: %zu tokens x %zu sequence(s) (%s); generate %zu; %s\n", cache_desc, plen, batch,
           o->po.ids ? "given" : "random ids, gsl mt19937",
           o->go.n_generate, o->go.temperature > 0 ? "sampling" : "greedy");
    if (!o->po.ids)
        printf("prompt seed: %" PRIu64 "\n", o->po.seed ? o->po.seed : 1);
    if (structure_on(&o->structure)) {
        char desc[512];
        printf("attention structure: %s\n", structure_describe(&o->structure, desc, sizeof desc));
    }
    if (o->go.temperature > 0)
        printf("sampling: temperature %g, top-k %zu, sample seed %" PRIu64 "\n", o->go.temperature, o->go.top_k,
               o->go.sample_seed);
}

static void print_tokens(const int *out, size_t batch, size_t n)
{
    for (size_t b = 0; b < batch; b++) {
        printf("tokens (sequence %zu):", b);
        for (size_t i = 0; i < n; i++)
            printf(" %d", out[b * n + i]);
        printf("\n");
    }
}

static size_t activation_bytes(const Config *c, size_t rows)
{
    return rows * (2 * c->d_model + 2 * config_q_dim(c) + 2 * config_kv_dim(c) + 2 * c->ffn_dim) * sizeof(float);
}

/* A preset's values become the defaults; options parsed later override them. */
static int apply_preset(RunOpts *o, const Preset *p, Err *e)
{
    o->preset = p;
    o->mo.model = p->model[0] ? p->model : o->mo.model;
    o->mo.shared |= p->shared;
    o->cache_spec = p->cache[0] ? p->cache : o->cache_spec;
    if (p->attention[0] && attend_algo_parse(p->attention, &o->attend) < 0)
        return err_set(e, ERR_USAGE, "preset %s: attention '%s' is not one of flash, naive, materialize", p->name,
                       p->attention);
    o->beams = p->beams;
    if (p->tokens)
        o->go.n_generate = p->tokens, o->tokens_given = 1;
    if (p->prompt_len)
        o->po.len = p->prompt_len;
    return 0;
}

int cmd_run(int argc, char **argv)
{
    RunOpts o = { .mo.model = "tiny", .go.n_generate = 16, .go.sample_seed = 1, .cache_spec = "contiguous",
                  .attend = ATTEND_FLASH, .alpha = 1.0 };
    Err e = { 0 };
    Preset preset;
    int has_preset = preset_scan(argc, argv, &preset, &e);
    if (has_preset < 0 || (has_preset && apply_preset(&o, &preset, &e) < 0))
        return cli_fail(&e);
    int pr = parse_options(argc, argv, &o, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);

    Config cfg;
    if (setup_load_config(&o.mo, &cfg, &e) < 0 || run_mla_check(&cfg, o.mla_given, o.bugs, &e) < 0)
        return cli_fail(&e);
    if (structure_on(&o.structure) && (cfg.architecture == ARCH_ENCDEC || cfg.attention == ATTN_MLA)) {
        err_set(&e, ERR_USAGE, "--structure: model '%s' is %s; attention structure applies to decoder-only models "
                "with standard attention", cfg.name, cfg.attention == ATTN_MLA ? "an MLA model" : "encoder-decoder");
        return cli_fail(&e);
    }
    if (cfg.architecture == ARCH_ENCDEC || o.beams || o.src_len || o.alpha_given) { /* beam search: run_beam.c */
        BeamRunArgs ba = { .mo = &o.mo, .po = &o.po, .beams = o.beams, .src_len = o.src_len,
                           .tokens = o.tokens_given ? o.go.n_generate : 0, .alpha = o.alpha,
                           .cache_spec = o.cache_spec, .attend = o.attend, .no_cache = o.no_cache,
                           .compare = o.compare, .fmt = o.fmt, .chunk = o.go.chunk, .top_k = o.go.top_k,
                           .temperature = o.go.temperature, .bugs = o.bugs };
        if (o.preset && o.fmt == OUT_TABLE)
            printf("preset %s: %s\n", o.preset->name, o.preset->description);
        return run_beam(&ba, &cfg);
    }
    int *prompt = NULL;
    size_t batch, plen;
    if (setup_make_prompt(&o.po, &cfg, &prompt, &batch, &plen, &e) < 0 ||
        (structure_on(&o.structure) && structure_place(&o.structure, plen, &e) < 0)) {
        free(prompt);
        return cli_fail(&e);
    }
    size_t need = generate_positions(plen, o.go.n_generate);
    if (need > cfg.max_seq_len) {
        free(prompt);
        err_set(&e, ERR_USAGE, "a prompt of %zu plus %zu generated tokens needs %zu positions; model '%s' has "
                "max_seq_len %zu", plen, o.go.n_generate, need, cfg.name, cfg.max_seq_len);
        return cli_fail(&e);
    }
    KvGeometry shape = config_kv_geometry(&cfg, batch); /* an MLA model's is its latent row */
    size_t extra = cfg.n_layers * batch * cfg.max_seq_len * kv_row_pair_bytes(&shape, FMT_F32, FMT_F32) +
                   activation_bytes(&cfg, batch * (o.no_cache || o.compare ? need : plen));
    Model m;
    if (setup_load_model(&o.mo, extra, &m, &e) < 0) {
        free(prompt);
        return cli_fail(&e);
    }
    m.attend = o.attend;
    m.bugs = o.bugs;
    m.mla_path = o.mla;
    m.bias = structure_on(&o.structure) ? &o.structure.bias : NULL;
    KvGeometry geo = model_kv_geometry(&m, batch);
    /* open the cache before printing anything, so a bad spec is one clean line */
    KvCache *cache = o.no_cache ? NULL : kv_open(o.cache_spec, &geo, &e);
    if (!o.no_cache && !cache) {
        free(prompt);
        model_free(&m);
        return cli_fail(&e);
    }

    size_t n_out = batch * o.go.n_generate, n_logits = o.go.n_generate * batch * cfg.vocab;
    int *out_c = calloc(n_out, sizeof(int)), *out_u = calloc(n_out, sizeof(int));
    Collector cc = { .label = "cached", .fmt = o.fmt, .n_seqs = batch, .vocab = cfg.vocab };
    Collector cu = { .label = "uncached", .fmt = o.fmt, .n_seqs = batch, .vocab = cfg.vocab };
    cc.logits = malloc(n_logits * sizeof(float));
    cu.logits = malloc(n_logits * sizeof(float));
    json_t *root = o.fmt == OUT_JSON ? json_object() : NULL;
    int rc = EXIT_OK;
    if (!out_c || !out_u || !cc.logits || !cu.logits) {
        err_set(&e, ERR_RUNTIME, "out of memory for %zu logits", n_logits);
        rc = cli_fail(&e);
        goto done;
    }
    if (root) {
        cc.steps = cu.steps = json_array();
        json_object_set_new(root, "model", json_string(cfg.name));
        json_object_set_new(root, "weights", json_string(m.source));
        json_object_set_new(root, "kernels", json_string(m.kern->isa));
        json_object_set_new(root, "attention", json_string(attend_algo_name(m.attend)));
        json_object_set_new(root, "cache", json_string(o.no_cache ? "none" : o.cache_spec));
        char desc[512];
        json_object_set_new(root, "structure", json_string(structure_describe(&o.structure, desc, sizeof desc)));
        json_object_set_new(root, "steps", cc.steps);
    }
    if (o.quality) {
        if (o.fmt == OUT_TABLE)
            print_header(&m, &o, o.cache_spec, batch, plen);
        char desc[512];
        if (quality_report(&m, cache, prompt, plen, &o.go, o.fmt, structure_describe(&o.structure, desc, sizeof desc),
                           &e) < 0) {
            fflush(stdout);
            rc = cli_fail(&e);
        }
        goto done;
    }
    if (o.fmt == OUT_TABLE)
        print_header(&m, &o, o.no_cache ? "none (recompute every step)" : o.cache_spec, batch, plen);
    report_header(stdout, o.fmt);

    int run_cached = !o.no_cache, run_uncached = o.no_cache || o.compare;
    if ((run_cached && generate(&m, cache, prompt, batch, plen, &o.go, out_c, on_step, &cc, &e) < 0) ||
        (run_uncached && generate(&m, NULL, prompt, batch, plen, &o.go, out_u, on_step, &cu, &e) < 0)) {
        fflush(stdout);
        rc = cli_fail(&e);
        goto done;
    }

    json_t *totals = root ? json_object() : NULL;
    if (run_cached)
        report_totals(stdout, o.fmt, "cached", &cc.total, totals);
    if (run_cached)
        report_pages(stdout, o.fmt, cache, root);
    if (run_cached)
        run_mla_report(stdout, o.fmt, "cached", &m, &cc.mla, cache, root);
    if (run_uncached)
        report_totals(stdout, o.fmt, "uncached", &cu.total, totals);
    if (run_uncached)
        run_mla_report(stdout, o.fmt, "uncached", &m, &cu.mla, NULL, root);
    if (root)
        json_object_set_new(root, "totals", totals);
    if (o.fmt == OUT_TABLE)
        print_tokens(run_cached ? out_c : out_u, batch, o.go.n_generate);

    if (o.compare) {
        size_t diverge = first_divergence(out_c, out_u, batch, o.go.n_generate);
        int same = diverge == o.go.n_generate;
        /* the step that first chooses differently was still fed the same tokens */
        size_t comparable = same ? o.go.n_generate : diverge + 1;
        double abs_d, rel_d = max_rel_logit_diff(cc.logits, cu.logits, comparable, batch * cfg.vocab, &abs_d);
        double flop_ratio = (double)counters_total_flops(&cu.total) / (double)counters_total_flops(&cc.total);
        double proj_ratio = (double)cu.total.tokens_projected / (double)cc.total.tokens_projected;
        double time_ratio = cc.total.seconds > 0 ? cu.total.seconds / cc.total.seconds : 0;
        if (o.fmt == OUT_TABLE) {
            if (same)
                printf("tokens identical: yes\n");
            else
                printf("tokens identical: NO, from generated token %zu on\n", diverge);
            printf("max logit difference: %.3g absolute, %.3g relative (tolerance %.0e relative)%s\n", abs_d, rel_d,
                   LOGIT_REL_TOL, same ? "" : ", over the steps fed the same tokens");
            printf("token rows projected: cached %" PRIu64 ", uncached %" PRIu64 " (%.2fx)\n",
                   cc.total.tokens_projected, cu.total.tokens_projected, proj_ratio);
            printf("FLOPs: cached %" PRIu64 ", uncached %" PRIu64 " (%.2fx)\n", counters_total_flops(&cc.total),
                   counters_total_flops(&cu.total), flop_ratio);
            printf("measured time: cached %.3f ms, uncached %.3f ms (%.2fx)\n", cc.total.seconds * 1e3,
                   cu.total.seconds * 1e3, time_ratio);
        } else if (root) {
            json_object_set_new(root, "compare",
                                json_pack("{s:b, s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "tokens_identical", same,
                                          "first_divergence", (json_int_t)diverge,
                                          "max_logit_diff_abs", abs_d, "max_logit_diff_rel", rel_d,
                                          "tolerance_rel", LOGIT_REL_TOL, "projected_ratio", proj_ratio,
                                          "flop_ratio", flop_ratio, "time_ratio", time_ratio));
        }
        int exact = cache && !cache->lossy && !o.bugs;
        if (o.bugs && o.fmt == OUT_TABLE)
            printf("(a pitfall is on: the cached run is wrong on purpose; the uncached run is the reference)\n");
        else if (!exact && o.fmt == OUT_TABLE)
            printf("(a lossy cache: these differences are what it gives up, not a fault)\n");
        if (exact && (!same || rel_d > LOGIT_REL_TOL)) {
            if (root)
                json_dumpf(root, stdout, JSON_INDENT(2)), printf("\n");
            fflush(stdout);
            err_set(&e, ERR_RUNTIME, "cached and uncached generation differ (%s; logit difference %.3g relative)",
                    same ? "same tokens" : "different tokens", rel_d);
            rc = cli_fail(&e);
            json_decref(root);
            root = NULL;
            goto done;
        }
    }
    if (root) {
        json_t *tok = json_array();
        for (size_t b = 0; b < batch; b++) {
            json_t *row = json_array();
            for (size_t i = 0; i < o.go.n_generate; i++)
                json_array_append_new(row, json_integer((run_cached ? out_c : out_u)[b * o.go.n_generate + i]));
            json_array_append_new(tok, row);
        }
        json_object_set_new(root, "tokens", tok);
        json_dumpf(root, stdout, JSON_INDENT(2));
        printf("\n");
    }
done:
    kv_free(cache);
    json_decref(root);
    free(out_c);
    free(out_u);
    free(cc.logits);
    free(cu.logits);
    free(prompt);
    model_free(&m);
    return rc;
}
