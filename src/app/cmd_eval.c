/* cmd_eval.c: `kvscope eval`: how much a cache costs a model's predictions
 * on a text: bits per byte and perplexity per cache, and the distance of
 * each from the exact cache on the same tokens (sim/eval.c measures,
 * report/eval_report.c prints). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/eval_attention.h"
#include "app/progress_line.h"
#include "kv/cache.h"
#include "report/eval_report.h"
#include "sim/eval.h"
#include "sim/eval_ci.h"
#include "stats/bootstrap.h"
#include "util/checked.h"
#include "util/files.h"
#include "util/parse.h"
#include "util/pool.h"
#include "util/clock.h"

#define MAX_CACHES 8
#define MAX_TEXT_BYTES ((size_t)64 << 20)
#define REFERENCE_SPEC "contiguous"
#define MAX_PAIRS 16
#define MAX_SEGMENTS 1024

typedef struct {
    ModelOpts mo;
    const char *text;
    const char *text_label; /* how reports name the text: the path given, or the split */
    const char *caches[MAX_CACHES];
    size_t n_caches;
    size_t tokens;       /* 0: the whole text */
    size_t prefill;
    AttendAlgo attend;
    OutFormat fmt;
    int per_position;
    int per_segment;
    size_t segments;     /* --segments: the bootstrap's segments */
    size_t pairs[MAX_PAIRS][2]; /* --paired I,J: rows compared (0: the reference) */
    size_t n_pairs;
    int quiet;           /* --quiet: no progress line */
    size_t threads;      /* --threads (0: every CPU this process may use) */
    int attention_stats; /* --attention-stats: where attention goes, instead of caches */
    size_t windows, window_len; /* --windows, --window-len of --attention-stats */
} EvalOpts;

static void help(void)
{
    char caches[4096]; /* kv_spec_help: every layout and modifier, about 2 KB */
    kv_spec_help(caches, sizeof caches);
    printf("usage: kvscope eval --text FILE|--split validation [--cache SPEC]... [OPTIONS]\n\n"
           "Stream a text through the model the way a deployment would (a prefill of P\n"
           "tokens, then one token per decode step) once per cache, and score each: bits\n"
           "per byte and perplexity of the text, and against the exact cache (%s, f32,\n"
           "always the first row) on the same tokens: the KL divergence of the next-token\n"
           "distributions, how often the greedy token agrees, and the largest logit error.\n\n"
           "model:\n%s%s\n"
           "text:\n"
           "  --text FILE         the text to score (- reads stdin), through the model's tokenizer\n"
           "  --split validation  the held-out books the shipped models never trained on\n"
           "                      (data/text/kjv-valid.txt: Ruth, Ecclesiastes, Mark, Hebrews)\n"
           "  --tokens N          score only the first N tokens (default: all)\n"
           "  --prefill P         tokens of the first pass (default 1); the rest one per step\n\n"
           "caches (repeatable, at most %d besides the reference):\n"
           "  --reference SPEC    the first row, every other cache's yardstick (default %s, the\n"
           "                      exact cache); e.g. shift:ctx=C,keep=1, C the model's context,\n"
           "                      scores a text longer than C at positions the model trained on,\n"
           "                      without the exact cache's cost, which grows with every token\n"
           "  --cache SPEC        one of:\n%s"
           "  recompute[:window=W,stride=S] no cache: the window recomputed (StreamingLLM's\n"
           "                          baseline): when W rows are held, the last W - S + 1 tokens\n"
           "                          run again from position 0 (the model's first token first):\n"
           "                          every S steps a pass, and each prediction reads W - S + 1\n"
           "                          to W tokens at trained positions (default W the model's\n"
           "                          context, S = W / 8)\n"
           "  --attention FORM    flash (default), naive or materialize\n%s\n"
           "output:\n"
           "  --format F          table (default), tsv or json\n"
           "  --per-position      instead: -ln p of every scored token, a column per cache\n"
           "                      (tsv; json: an array per cache), for plots\n"
           "  --per-segment       instead: each segment's bytes and each cache's bits per byte,\n"
           "                      KL and top-1 on it (tsv: a row per segment; json)\n"
           "  --attention-stats   instead of caches: where each head's attention goes, from\n"
           "                      uncached passes over windows of the text read from position 0\n"
           "                      (with the model's fixed first token, if it has one): per layer\n"
           "                      and head, the mean weight on position 0 and the heads above\n"
           "                      %.1f (attention sinks, as Gu et al. 2024 count them), and the\n"
           "                      share of each query's mass on its heaviest %.0f%% of keys (what\n"
           "                      H2O's heavy hitters rely on); every query from position 1 on;\n"
           "                      with learnt sinks (attn_sink = learned), each head's mean\n"
           "                      weight on its sink, beside position 0's\n"
           "  --windows N         --attention-stats: windows, evenly spaced over the text\n"
           "                      (default %d, always the same ones)\n"
           "  --window-len T      --attention-stats: tokens a window (default: the context)\n\n"
           "intervals:\n"
           "  Every figure comes with a %d%% interval: the scored predictions are cut into\n"
           "  segments of the text, in order (named by their byte offsets in json and\n"
           "  --per-segment), and %d resamples draw as many segments with replacement\n"
           "  (gsl mt19937, seed %lu: the same output every run). An interval is a\n"
           "  percentile interval: the 2.5th to 97.5th percentile of the resamples.\n"
           "  --segments N        how many segments (default %d, 2..%d; at most one a prediction)\n"
           "  --paired I,J        also compare cache I with cache J (rows as given: 0 the\n"
           "                      reference, 1 the first --cache; repeatable): I minus J, with\n"
           "                      the interval of that paired difference (the same segments\n"
           "                      and resamples for both), and whether it holds 0 (same) or\n"
           "                      not (better / worse). Each cache is compared with the\n"
           "                      reference this way in the column 'vs exact'.\n\n"
           "%s\n"
           "The model's positions are extended to the text's length: a cache that forgets\n"
           "(a window, eviction) keeps what its policy keeps, the exact cache keeps all;\n"
           "a shift cache runs its rows at positions below its ctx (a ring at the text's).\n"
           "example: kvscope eval --model tiny --text README.md --tokens 600 \\\n"
           "             --cache ring:window=64,sinks=4 --cache contiguous+quant:k=q4_0,v=q4_0\n",
           REFERENCE_SPEC, cli_model_help, cli_int_dot_help, MAX_CACHES - 1, REFERENCE_SPEC, caches, cli_threads_help,
           ATTN_SINK_THRESHOLD, 100 * ATTN_TOP_SHARE, EVAL_ATTN_WINDOWS, (int)(100 * EVAL_CI_LEVEL + 0.5), EVAL_CI_RESAMPLES, EVAL_CI_SEED, EVAL_CI_SEGMENTS, MAX_SEGMENTS,
           progress_line_help);
}

/* --split validation: the held-out books of the trained models' corpus,
 * shipped as data/text/kjv-valid.txt (data/README.md). */
static int find_split(const char *split, EvalOpts *o, Err *e)
{
    static char path[4096];
    if (strcmp(split, "validation") != 0)
        return err_set(e, ERR_USAGE, "--split: 'validation' is the one split shipped, got '%s'", split);
    if (o->text)
        return err_set(e, ERR_USAGE, "--split: one text per run (--split and --text exclude each other)");
    if (files_find("KVSCOPE_DATA", "data", "text/kjv-valid.txt", path, sizeof path) < 0)
        return err_set(e, ERR_USAGE, "--split validation: data/text/kjv-valid.txt is missing (is KVSCOPE_DATA right?)");
    o->text = path;
    o->text_label = "data/text/kjv-valid.txt (--split validation)";
    return 1;
}

/* --paired I,J: two rows, 0 .. MAX_CACHES - 1 (checked against the caches
 * given once all options are read). */
static int parse_pair(const char *arg, EvalOpts *o, Err *e)
{
    if (o->n_pairs == MAX_PAIRS)
        return err_set(e, ERR_USAGE, "--paired: at most %d pairs", MAX_PAIRS);
    const char *comma = strchr(arg, ',');
    char first[32];
    if (!comma || (size_t)(comma - arg) >= sizeof first)
        return err_set(e, ERR_USAGE, "--paired: want two rows as I,J (0: the reference), got '%s'", arg);
    memcpy(first, arg, (size_t)(comma - arg));
    first[comma - arg] = '\0';
    size_t *p = o->pairs[o->n_pairs];
    if (parse_size0(first, "--paired", &p[0], e) < 0 || parse_size0(comma + 1, "--paired", &p[1], e) < 0)
        return -1;
    if (p[0] == p[1])
        return err_set(e, ERR_USAGE, "--paired %s: a cache against itself", arg);
    o->n_pairs++;
    return 1;
}

static int parse_options(int argc, char **argv, EvalOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },   { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },     { "shared", no_argument, 0, 0 },
        { "allow-nan", no_argument, 0, 0 },
        { "weights", required_argument, 0, 0 }, { "int-dot", optional_argument, 0, 0 },
        { "text", required_argument, 0, 0 },    { "cache", required_argument, 0, 0 },
        { "split", required_argument, 0, 0 },
        { "tokens", required_argument, 0, 0 },  { "prefill", required_argument, 0, 0 },
        { "attention", required_argument, 0, 0 }, { "format", required_argument, 0, 0 },
        { "per-position", no_argument, 0, 0 },  { "help", no_argument, 0, 'h' },
        { "threads", required_argument, 0, 0 }, { "quiet", no_argument, 0, 0 },
        { "segments", required_argument, 0, 0 }, { "paired", required_argument, 0, 0 },
        { "per-segment", no_argument, 0, 0 },   { "attention-stats", no_argument, 0, 0 },
        { "windows", required_argument, 0, 0 }, { "window-len", required_argument, 0, 0 },
        { "reference", required_argument, 0, 0 },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "eval", &name, e)) == CLI_OPTION) {
        int rc = cli_model_option(&o->mo, name, optarg, e);
        if (rc == 0 && strcmp(name, "attention") == 0) {
            GenOptions unused = { 0 };
            rc = cli_generation_option(&unused, &o->attend, name, optarg, e);
        } else if (rc == 0) {
            rc = 1;
            if (strcmp(name, "text") == 0 && o->text)
                rc = err_set(e, ERR_USAGE, "--text: one text per run (--split and --text exclude each other)");
            else if (strcmp(name, "text") == 0)
                o->text = o->text_label = optarg;
            else if (strcmp(name, "split") == 0)
                rc = find_split(optarg, o, e);
            else if (strcmp(name, "cache") == 0 && o->n_caches == MAX_CACHES - 1)
                rc = err_set(e, ERR_USAGE, "--cache: at most %d caches besides the reference", MAX_CACHES - 1);
            else if (strcmp(name, "cache") == 0)
                o->caches[++o->n_caches] = optarg;
            else if (strcmp(name, "reference") == 0)
                o->caches[0] = optarg;
            else if (strcmp(name, "tokens") == 0)
                rc = parse_size(optarg, "--tokens", &o->tokens, e);
            else if (strcmp(name, "prefill") == 0)
                rc = parse_size(optarg, "--prefill", &o->prefill, e);
            else if (strcmp(name, "format") == 0)
                rc = out_format_parse(optarg, &o->fmt, e);
            else if (strcmp(name, "per-position") == 0)
                o->per_position = 1;
            else if (strcmp(name, "per-segment") == 0)
                o->per_segment = 1;
            else if (strcmp(name, "attention-stats") == 0)
                o->attention_stats = 1;
            else if (strcmp(name, "windows") == 0 && (rc = parse_size(optarg, "--windows", &o->windows, e)) == 0 &&
                     (o->windows == 0 || o->windows > 4096))
                rc = err_set(e, ERR_USAGE, "--windows: 1 to 4096, got %zu", o->windows);
            else if (strcmp(name, "window-len") == 0)
                rc = parse_size(optarg, "--window-len", &o->window_len, e);
            else if (strcmp(name, "segments") == 0 &&
                     (rc = parse_size(optarg, "--segments", &o->segments, e)) == 0 &&
                     (o->segments < 2 || o->segments > MAX_SEGMENTS))
                rc = err_set(e, ERR_USAGE, "--segments: 2 to %d, got %zu", MAX_SEGMENTS, o->segments);
            else if (strcmp(name, "paired") == 0)
                rc = parse_pair(optarg, o, e);
            else if (strcmp(name, "quiet") == 0)
                o->quiet = 1;
            else if (strcmp(name, "threads") == 0)
                rc = parse_size0(optarg, "--threads", &o->threads, e);
        }
        if (rc < 0)
            return -1;
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (optind < argc)
        return err_set(e, ERR_USAGE, "eval: unexpected argument '%s' (see `kvscope eval --help`)", argv[optind]);
    if (!o->text)
        return err_set(e, ERR_USAGE, "eval: --text FILE or --split validation is required (see `kvscope eval --help`)");
    if (o->per_position && o->per_segment)
        return err_set(e, ERR_USAGE, "eval: --per-position or --per-segment, not both");
    if (o->attention_stats && (o->n_caches || strcmp(o->caches[0], REFERENCE_SPEC) != 0 || o->per_position || o->per_segment || o->n_pairs))
        return err_set(e, ERR_USAGE, "eval: --attention-stats measures the model, not caches: no --cache, "
                       "--reference, --per-position, --per-segment or --paired with it");
    if (!o->attention_stats && (o->windows || o->window_len))
        return err_set(e, ERR_USAGE, "eval: --windows and --window-len go with --attention-stats");
    for (size_t p = 0; p < o->n_pairs; p++)
        for (int k = 0; k < 2; k++)
            if (o->pairs[p][k] > o->n_caches)
                return err_set(e, ERR_USAGE, "--paired %zu,%zu: row %zu is not a cache here (0 .. %zu)", o->pairs[p][0],
                               o->pairs[p][1], o->pairs[p][k], o->n_caches);
    return pool_set_threads(o->threads, e);
}

/* The count of positions on the progress line. */
static int on_progress(void *user, size_t done, size_t total)
{
    progress_line_count(user, done, total);
    return 0;
}

/* What one run owns. */
typedef struct {
    size_t text_len;
    int *ids;
    size_t *bytes;
    char tokenizer[64];
    Model m;
    int model_ready;
    KvCache *caches[MAX_CACHES];
    EvalRecompute recompute[MAX_CACHES]; /* the rows that recompute their window (window 0: a cache) */
    EvalResult results[MAX_CACHES];
    size_t used[MAX_CACHES];
    size_t trained_ctx; /* the model's max_seq_len before the text stretched it */
} EvalJob;

static void job_free(EvalJob *j, size_t n_caches)
{
    for (size_t i = 0; i < n_caches; i++) {
        kv_free(j->caches[i]);
        eval_result_free(&j->results[i]);
    }
    if (j->model_ready)
        model_free(&j->m);
    free(j->ids);
    free(j->bytes);
}

/* The text, its tokens, the model stretched to them and the caches. */
static int job_open(EvalJob *j, EvalOpts *o, size_t *n, Err *e)
{
    Config cfg;
    if (setup_load_config(&o->mo, &cfg, e) < 0)
        return -1;
    if (cfg.architecture == ARCH_ENCDEC)
        return err_set(e, ERR_USAGE, "eval: model '%s' is an encoder-decoder; eval streams a decoder-only model",
                       cfg.name);
    size_t n_ids;
    if (setup_text_ids(&cfg, o->text, MAX_TEXT_BYTES, &j->ids, &j->bytes, &n_ids, &j->text_len, j->tokenizer,
                       sizeof j->tokenizer, e) < 0)
        return -1;
    *n = o->tokens ? o->tokens : n_ids;
    if (*n > n_ids)
        return err_set(e, ERR_USAGE, "--tokens %zu: '%s' holds only %zu tokens", *n, o->text_label, n_ids);
    if (*n <= o->prefill)
        return err_set(e, ERR_USAGE, "eval: %zu tokens leave nothing to score after --prefill %zu", *n, o->prefill);
    j->trained_ctx = cfg.max_seq_len;
    if (cfg.max_seq_len < *n)
        cfg.max_seq_len = *n; /* positions past the trained context: the cache decides what is kept */
    KvGeometry shape = config_kv_geometry(&cfg, 1);
    size_t extra = size_mul3_sat(o->n_caches + 1, cfg.n_layers,
                                 size_mul_sat(cfg.max_seq_len, kv_row_pair_bytes(&shape, FMT_F32, FMT_F32)));
    if (setup_model(&cfg, o->mo.isa, extra, &j->m, e) < 0)
        return -1;
    j->model_ready = 1;
    j->m.attend = o->attend;
    setup_int_dot(&j->m, &o->mo);
    KvGeometry geo = model_kv_geometry(&j->m, 1);
    for (size_t i = 0; i <= o->n_caches; i++) {
        const int rw = eval_recompute_parse(o->caches[i], j->trained_ctx, &j->recompute[i], e);
        char spec[64];
        if (rw == 1 && j->recompute[i].window > cfg.max_seq_len)
            return err_set(e, ERR_USAGE, "--cache %s: a window past the model's %zu positions (the text's, or its "
                           "context's if longer)", o->caches[i], cfg.max_seq_len);
        if (rw == 1)
            snprintf(spec, sizeof spec, "contiguous:max=%zu", j->recompute[i].window);
        if (rw < 0 || !(j->caches[i] = kv_open(rw == 1 ? spec : o->caches[i], &geo, e)))
            return err_wrap(e, "--cache");
    }
    return 0;
}

int cmd_eval(int argc, char **argv)
{
    EvalOpts o = { .mo.model = "kjv-tiny", .prefill = 1, .attend = ATTEND_FLASH, .caches = { REFERENCE_SPEC },
                   .segments = EVAL_CI_SEGMENTS };
    Err e = { 0 };
    int pr = parse_options(argc, argv, &o, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);
    if (o.attention_stats) {
        EvalAttnOpts ao = { .mo = &o.mo, .text = o.text, .text_label = o.text_label, .windows = o.windows,
                            .len = o.window_len, .tokens = o.tokens, .fmt = o.fmt, .quiet = o.quiet };
        return eval_attention_stats(&ao);
    }
    EvalJob j = { 0 };
    size_t n = 0, n_caches = o.n_caches + 1;
    ProgressLine line;
    progress_line_init(&line, o.quiet);
    progress_line_begin(&line, "kvscope eval: the text and the model", NULL);
    if (job_open(&j, &o, &n, &e) < 0) {
        progress_line_end(&line);
        job_free(&j, n_caches);
        return cli_fail(&e);
    }
    EvalOptions eo = { .prefill = o.prefill, .token_bytes = j.bytes, .per_position = o.per_position,
                       .segments = o.segments, .recompute = j.recompute };
    const double start = clock_seconds();
    progress_line_begin(&line, "kvscope eval", "position");
    int rc = eval_run(&j.m, j.caches, n_caches, j.ids, n, &eo, j.results, on_progress, &line, &e);
    progress_line_end(&line);
    if (rc < 0) {
        job_free(&j, n_caches);
        return cli_fail(&e);
    }
    for (size_t i = 0; i < n_caches; i++)
        j.used[i] = kv_bytes_used(j.caches[i]);
    EvalRun run = { .model = j.m.cfg.name, .weights = j.m.source, .text = o.text_label, .tokenizer = j.tokenizer,
                    .tokens = n, .prefill = o.prefill, .text_bytes = j.text_len, .trained_ctx = j.trained_ctx,
                    .reference_exact = strcmp(o.caches[0], REFERENCE_SPEC) == 0,
                    .seconds = clock_seconds() - start };
    /* every cache against the reference, then the pairs asked for */
    size_t pairs[MAX_CACHES - 1 + MAX_PAIRS][2], n_pairs = 0;
    for (size_t i = 1; i < n_caches; i++) {
        pairs[n_pairs][0] = i;
        pairs[n_pairs++][1] = 0;
    }
    for (size_t p = 0; p < o.n_pairs; p++) {
        pairs[n_pairs][0] = o.pairs[p][0];
        pairs[n_pairs++][1] = o.pairs[p][1];
    }
    EvalIntervals iv;
    if (!o.per_position && !o.per_segment &&
        eval_intervals(j.results, n_caches, (const size_t(*)[2])pairs, n_pairs, &iv, &e) < 0) {
        eval_intervals_free(&iv);
        job_free(&j, n_caches);
        return cli_fail(&e);
    }
    if (o.per_position)
        eval_report_positions(stdout, o.fmt, &run, o.caches, j.results, n_caches);
    else if (o.per_segment)
        eval_report_segments(stdout, o.fmt, &run, o.caches, j.results, n_caches);
    else {
        eval_report(stdout, o.fmt, &run, o.caches, j.results, j.used, n_caches, &iv);
        eval_intervals_free(&iv);
    }
    job_free(&j, n_caches);
    return EXIT_OK;
}
