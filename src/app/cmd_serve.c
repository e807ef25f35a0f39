/* cmd_serve.c: `kvscope serve`: a serving simulation over one page pool
 * (sim/serve.h runs it; this file reads the options and prints). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/progress_line.h"
#include "kv/cache.h"
#include "report/serve_report.h"
#include "sim/serve.h"
#include "sim/setup.h"
#include "util/parse.h"
#include "util/pool.h"

#define DEFAULT_MODEL "small"
#define DEFAULT_CACHE "paged:page=16,pages=96"
#define FEWSHOT_PREAMBLE 40 /* --workload fewshot's preamble without --shared-prefix */

typedef struct {
    ModelOpts mo;
    ServeOptions so;
    const char *cache_spec;
    size_t slots;
    size_t every;       /* a table row every N steps; 0 = about 24 rows */
    OutFormat fmt;
    const char *trace;  /* --trace FILE */
    int fork_share_given;
    int prefix_given;   /* --shared-prefix given (few-shot has its own default) */
    int quiet;          /* --quiet: no progress line */
    size_t threads;     /* --threads (0: every CPU this process may use) */
} ServeOpts;

static void help(void)
{
    printf("usage: kvscope serve [OPTIONS]\n\n"
           "Serve a stream of requests with the real model over one page pool, as a\n"
           "serving engine does (vLLM's continuous batching): requests arrive at random\n"
           "(Poisson), each step decodes one token of every running sequence and spends the\n"
           "rest of its token budget on prompt chunks; a request is admitted only when a\n"
           "slot and its prompt's pages are free; when the pool runs out mid-decode the\n"
           "newest running sequence is preempted by recompute (its pages given back, its\n"
           "tokens prefilled again later). Greedy decoding: every request generates what\n"
           "it would alone. With --samples, requests fork into parallel samples that share\n"
           "their prompt's pages. Time is in engine steps (and wall time beside).\n\n"
           "model (default %s):\n%s%s\n"
           "workload:\n"
           "  --requests N        requests in all (default 32)\n"
           "  --rate R            arrivals per step, Poisson (default 0.5)\n"
           "  --prompt-len A..B   prompt lengths, uniform (default 16..48; one number: fixed)\n"
           "  --output-len A..B   tokens each generates (default 8..32); fewer where it chooses the\n"
           "                      model's end-of-text token, which ends it (not --workload chat,\n"
           "                      whose turns' lengths are drawn ahead)\n"
           "  --ignore-eos        each request goes on to its output length past the end-of-text token\n"
           "  --shared-prefix S   the first S prompt tokens are the same for all: a system\n"
           "                      prompt whose full pages are shared (default 0)\n"
           "  --samples N         a forked request draws N samples (N >= 2; default 1: none):\n"
           "                      its prompt prefilled once, its pages shared by the samples,\n"
           "                      the partial last page copied on a sample's first write; each\n"
           "                      sample a sequence of its own, drawn at temperature %.0f\n"
           "  --fork-share P      the share of requests that fork, 0..1 (default 1 with\n"
           "                      --samples)\n"
           "  --seed S            arrivals, lengths, prompts, forks and samples (default 1;\n"
           "                      gsl mt19937)\n"
           "  --workload W        random (default: the prompts above), chat (conversations of\n"
           "                      --turns requests: each turn's prompt is the previous turn's\n"
           "                      prompt and output and a new message of --prompt-len tokens;\n"
           "                      it arrives 1..%d steps after the previous turn finished) or\n"
           "                      fewshot (one of %d preambles of --shared-prefix tokens, default\n"
           "                      %d, sharing their first half, then a question of --prompt-len)\n"
           "  --turns T           chat: requests a conversation has (default 4)\n"
           "  --trace FILE        the requests from a file instead: a line `ARRIVAL PROMPT_LEN\n"
           "                      OUTPUT_LEN` each (arrival in engine steps, sorted; # comments);\n"
           "                      --requests, --rate and the length ranges are then not used\n"
           "engine:\n"
           "  --cache SPEC        a paged cache (default %s)\n"
           "  --slots N           sequences running at once (default 8)\n"
           "  --token-budget T    tokens one step runs, decodes and prompt chunks (default 64)\n"
           "  --prefix-cache C    how finished requests' rows serve later ones: pages (default:\n"
           "                      full pages found by their hash are mapped, not written, but\n"
           "                      every prompt token still runs through the model), block (vLLM:\n"
           "                      the same hash, and a request starts past the full pages found)\n"
           "                      or radix (SGLang's RadixAttention: a radix tree over token ids\n"
           "                      keeps every row of finished requests and shares any common\n"
           "                      prefix, its partly filled last page copied on the first write;\n"
           "                      least recently used leaves are evicted when pages run short,\n"
           "                      never pages a running request maps). The prompt's last token\n"
           "                      always runs: its logits choose the first output token\n"
           "  --preempt HOW       recompute (default: the preempted sequence's pages given back,\n"
           "                      its tokens run again later) or swap (its rows copied to host\n"
           "                      memory and back, counted; f32 caches)\n"
           "  --threads N         threads for a step's prompt chunks, cut by rows, and its decode\n"
           "                      tokens' matrices, a part of their output rows a thread (the same\n"
           "                      bytes for every N), and a decode's attention past 511 visible rows\n"
           "                      (split-K, within 1e-6 of one thread); default: the CPUs this\n"
           "                      process may use\n"
           "output:\n"
           "  --every N           a table row every N steps (default: about 24 rows)\n"
           "  --format F          table (default), tsv (a row per step) or json (the summary and\n"
           "                      every step)\n"
           "%s\n"
           "A pool too small for the longest request, a cache that is not paged, a rate of 0\n"
           "or an empty range is refused before anything runs. The run is bounded: it fails\n"
           "rather than spin if the requests do not finish in twice the steps they would\n"
           "take one after another.\n"
           "example: kvscope serve --requests 48 --rate 1 --shared-prefix 32 --cache paged:page=16,pages=48\n",
           DEFAULT_MODEL, cli_model_help, cli_int_dot_help, SERVE_SAMPLE_TEMPERATURE, SERVE_CHAT_PAUSE, SERVE_FEWSHOT_PREAMBLES,
           FEWSHOT_PREAMBLE, DEFAULT_CACHE, progress_line_help);
}

/* "A..B" or "A" into [lo, hi]. */
static int parse_range(const char *s, const char *what, size_t *lo, size_t *hi, Err *e)
{
    const char *dots = strstr(s, "..");
    if (!dots)
        return parse_size(s, what, lo, e) < 0 ? -1 : (*hi = *lo, 0);
    char first[32];
    size_t n = (size_t)(dots - s);
    if (n == 0 || n >= sizeof first)
        return err_set(e, ERR_USAGE, "%s: '%s' is not A..B", what, s);
    memcpy(first, s, n);
    first[n] = '\0';
    if (parse_size(first, what, lo, e) < 0 || parse_size(dots + 2, what, hi, e) < 0)
        return -1;
    return *lo > *hi ? err_set(e, ERR_USAGE, "%s: '%s' runs backwards", what, s) : 0;
}

/* 1: --help; 0: options in o; -1: error in e. */
static int parse_options(int argc, char **argv, ServeOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },         { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },           { "shared", no_argument, 0, 0 },
        { "allow-nan", no_argument, 0, 0 },           { "int-dot", optional_argument, 0, 0 },
        { "weights", required_argument, 0, 0 },       { "requests", required_argument, 0, 0 },
        { "rate", required_argument, 0, 0 },          { "prompt-len", required_argument, 0, 0 },
        { "output-len", required_argument, 0, 0 },    { "shared-prefix", required_argument, 0, 0 },
        { "seed", required_argument, 0, 0 },          { "cache", required_argument, 0, 0 },
        { "slots", required_argument, 0, 0 },         { "token-budget", required_argument, 0, 0 },
        { "every", required_argument, 0, 0 },         { "preempt", required_argument, 0, 0 },
        { "format", required_argument, 0, 0 },        { "trace", required_argument, 0, 0 },
        { "samples", required_argument, 0, 0 },       { "fork-share", required_argument, 0, 0 },
        { "quiet", no_argument, 0, 0 },               { "help", no_argument, 0, 'h' },
        { "threads", required_argument, 0, 0 },      { "prefix-cache", required_argument, 0, 0 },
        { "workload", required_argument, 0, 0 },      { "turns", required_argument, 0, 0 },
        { "ignore-eos", no_argument, 0, 0 },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "serve", &name, e)) == CLI_OPTION) {
        int taken = cli_model_option(&o->mo, name, optarg, e), rc = 0;
        if (taken)
            rc = taken < 0 ? -1 : 0;
        else if (strcmp(name, "requests") == 0)
            rc = parse_size(optarg, "--requests", &o->so.n_requests, e);
        else if (strcmp(name, "rate") == 0)
            rc = parse_double(optarg, "--rate", &o->so.rate, e);
        else if (strcmp(name, "prompt-len") == 0)
            rc = parse_range(optarg, "--prompt-len", &o->so.prompt_min, &o->so.prompt_max, e);
        else if (strcmp(name, "output-len") == 0)
            rc = parse_range(optarg, "--output-len", &o->so.output_min, &o->so.output_max, e);
        else if (strcmp(name, "shared-prefix") == 0) {
            rc = parse_size(optarg, "--shared-prefix", &o->so.shared_prefix, e);
            o->prefix_given = 1;
        } else if (strcmp(name, "turns") == 0)
            rc = parse_size(optarg, "--turns", &o->so.turns, e);
        else if (strcmp(name, "prefix-cache") == 0)
            rc = serve_prefix_parse(optarg, &o->so.prefix, e);
        else if (strcmp(name, "workload") == 0)
            rc = serve_workload_parse(optarg, &o->so.workload, e);
        else if (strcmp(name, "seed") == 0) {
            unsigned long long v;
            rc = parse_u64(optarg, "--seed", &v, e);
            o->so.seed = v;
        } else if (strcmp(name, "cache") == 0)
            o->cache_spec = optarg;
        else if (strcmp(name, "slots") == 0)
            rc = parse_size(optarg, "--slots", &o->slots, e);
        else if (strcmp(name, "token-budget") == 0)
            rc = parse_size(optarg, "--token-budget", &o->so.token_budget, e);
        else if (strcmp(name, "every") == 0)
            rc = parse_size(optarg, "--every", &o->every, e);
        else if (strcmp(name, "format") == 0)
            rc = out_format_parse(optarg, &o->fmt, e);
        else if (strcmp(name, "trace") == 0)
            o->trace = optarg;
        else if (strcmp(name, "quiet") == 0)
            o->quiet = 1;
        else if (strcmp(name, "ignore-eos") == 0)
            o->so.stop_at_eos = 0;
        else if (strcmp(name, "threads") == 0)
            rc = parse_size0(optarg, "--threads", &o->threads, e);
        else if (strcmp(name, "samples") == 0) {
            rc = parse_size(optarg, "--samples", &o->so.n_samples, e);
            if (rc == 0 && o->so.n_samples < 2)
                return err_set(e, ERR_USAGE, "--samples: a forked request draws at least 2 samples, not %s", optarg);
        } else if (strcmp(name, "fork-share") == 0) {
            rc = parse_double(optarg, "--fork-share", &o->so.fork_share, e); /* its range: serve_check */
            o->fork_share_given = 1;
        } else if (strcmp(name, "preempt") == 0) {
            if (strcmp(optarg, "recompute") != 0 && strcmp(optarg, "swap") != 0)
                return err_set(e, ERR_USAGE, "--preempt: '%s' is not recompute or swap", optarg);
            o->so.swap = strcmp(optarg, "swap") == 0;
        }
        if (rc < 0)
            return -1;
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (optind < argc)
        return err_set(e, ERR_USAGE, "serve: unexpected argument '%s' (see `kvscope serve --help`)", argv[optind]);
    if (o->so.workload == SERVE_WORKLOAD_FEWSHOT && !o->prefix_given)
        o->so.shared_prefix = FEWSHOT_PREAMBLE;
    if (o->trace && o->so.workload != SERVE_WORKLOAD_RANDOM)
        return err_set(e, ERR_USAGE, "serve: --trace brings its own requests; --workload draws them (not both)");
    if (o->so.n_samples >= 2 && !o->fork_share_given)
        o->so.fork_share = 1; /* --samples alone: every request forks */
    return pool_set_threads(o->threads, e);
}

typedef struct {
    OutFormat fmt;
    size_t every;
    ProgressLine line;  /* requests done */
    size_t n_requests;
} Printer;

static int on_step(void *user, const ServeStep *st)
{
    Printer *p = user;
    if (p->fmt == OUT_TSV || (p->fmt == OUT_TABLE && st->step % p->every == 0)) {
        progress_line_clear(&p->line);
        serve_report_step(stdout, p->fmt, st);
    }
    char detail[32];
    snprintf(detail, sizeof detail, "step %zu", st->step);
    progress_line_detail(&p->line, detail);
    progress_line_count(&p->line, st->done, p->n_requests);
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    ServeOpts o = { .mo.model = DEFAULT_MODEL, .cache_spec = DEFAULT_CACHE, .slots = 8,
                    .so = { .n_requests = 32, .rate = 0.5, .prompt_min = 16, .prompt_max = 48, .output_min = 8,
                            .output_max = 32, .token_budget = 64, .n_samples = 1, .seed = 1, .turns = 4,
                            .stop_at_eos = 1 } };
    Err e = { 0 };
    int pr = parse_options(argc, argv, &o, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);
    ServeTraceEntry *trace = NULL;
    if (o.trace) {
        if (serve_trace_read(o.trace, &trace, &o.so.n_requests, &e) < 0)
            return cli_fail(&e);
        o.so.trace = trace;
    }
    /* the pool and the workload are checked on the config, before the
     * weights are read: a refused run costs no load */
    Config cfg;
    const Kernels *kern = NULL;
    KvCache *cache = NULL;
    Model m;
    if (setup_load_config(&o.mo, &cfg, &e) < 0 || !(kern = kernels_select(o.mo.isa, &e))) {
        free(trace);
        return cli_fail(&e);
    }
    KvGeometry geo = config_kv_geometry(&cfg, o.slots);
    geo.codec = kern->codec; /* as model_kv_geometry gives it */
    if (!(cache = kv_open(o.cache_spec, &geo, &e)) || serve_check(&cfg, cache, &o.so, &e) < 0 ||
        setup_model(&cfg, o.mo.isa, 0, &m, &e) < 0) {
        kv_free(cache);
        free(trace);
        return cli_fail(&e);
    }
    setup_int_dot(&m, &o.mo);
    ServeRun run = { .model = m.cfg.name, .cache = cache->spec, .o = &o.so, .slots = o.slots, .eos = m.cfg.eos_token };
    Printer p = { .fmt = o.fmt, .every = o.every, .n_requests = o.so.n_requests };
    progress_line_init(&p.line, o.quiet);
    if (!p.every) /* about 24 rows: the expected length over 24 */
        p.every = (size_t)fmax(1.0, (trace ? (double)trace[o.so.n_requests - 1].arrival + 32.0
                                           : (double)o.so.n_requests / o.so.rate + (double)o.so.output_max) /
                                          24.0);
    serve_report_header(stdout, o.fmt, &run);
    ServeResult r;
    ServeSummary sum;
    progress_line_begin(&p.line, "kvscope serve", "request");
    progress_line_count(&p.line, 0, o.so.n_requests);
    int rc = serve_run(&m, cache, &o.so, on_step, &p, &r, &e);
    progress_line_end(&p.line);
    if (rc == 0 && serve_summarize(&r, &sum) < 0)
        rc = err_set(&e, ERR_RUNTIME, "out of memory");
    if (rc == 0) {
        if (o.fmt == OUT_TABLE && (r.n_steps - 1) % p.every) /* the last step, unless its row is out already */
            serve_report_step(stdout, o.fmt, &r.steps[r.n_steps - 1]);
        serve_report_summary(stdout, o.fmt, &run, &r, &sum);
    }
    serve_result_free(&r);
    kv_free(cache);
    model_free(&m);
    free(trace);
    return rc < 0 ? cli_fail(&e) : EXIT_OK;
}
