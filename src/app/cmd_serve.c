/* cmd_serve.c: `kvscope serve`: a serving simulation over one page pool
 * (sim/serve.h runs it; this file reads the options and prints). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/commands.h"
#include "kv/cache.h"
#include "sim/serve.h"
#include "sim/setup.h"
#include "util/parse.h"

#define DEFAULT_MODEL "small"
#define DEFAULT_CACHE "paged:page=16,pages=96"

typedef struct {
    ModelOpts mo;
    ServeOptions so;
    const char *cache_spec;
    size_t slots;
    size_t every;       /* a step row every N steps; 0 = about 24 rows */
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
           "it would alone. Time is in engine steps (and wall time beside).\n\n"
           "model (default %s):\n%s\n"
           "workload:\n"
           "  --requests N        requests in all (default 32)\n"
           "  --rate R            arrivals per step, Poisson (default 0.5)\n"
           "  --prompt-len A..B   prompt lengths, uniform (default 16..48; one number: fixed)\n"
           "  --output-len A..B   tokens each generates (default 8..32)\n"
           "  --shared-prefix S   the first S prompt tokens are the same for all: a system\n"
           "                      prompt whose full pages are shared (default 0)\n"
           "  --seed S            arrivals, lengths and prompts (default 1; gsl mt19937)\n"
           "engine:\n"
           "  --cache SPEC        a paged cache (default %s)\n"
           "  --slots N           sequences running at once (default 8)\n"
           "  --token-budget T    tokens one step runs, decodes and prompt chunks (default 64)\n"
           "  --preempt HOW       recompute (default: the preempted sequence's pages given back,\n"
           "                      its tokens run again later) or swap (its rows copied to host\n"
           "                      memory and back, counted; f32 caches)\n"
           "output:\n"
           "  --every N           a row every N steps (default: about 24 rows)\n\n"
           "A pool too small for the longest request, a cache that is not paged, a rate of 0\n"
           "or an empty range is refused before anything runs. The run is bounded: it fails\n"
           "rather than spin if the requests do not finish in twice the steps they would\n"
           "take one after another.\n"
           "example: kvscope serve --requests 48 --rate 1 --shared-prefix 32 --cache paged:page=16,pages=48\n",
           DEFAULT_MODEL, cli_model_help, DEFAULT_CACHE);
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
        { "weights", required_argument, 0, 0 },       { "requests", required_argument, 0, 0 },
        { "rate", required_argument, 0, 0 },          { "prompt-len", required_argument, 0, 0 },
        { "output-len", required_argument, 0, 0 },    { "shared-prefix", required_argument, 0, 0 },
        { "seed", required_argument, 0, 0 },          { "cache", required_argument, 0, 0 },
        { "slots", required_argument, 0, 0 },         { "token-budget", required_argument, 0, 0 },
        { "every", required_argument, 0, 0 },         { "preempt", required_argument, 0, 0 },
        { "help", no_argument, 0, 'h' },
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
        else if (strcmp(name, "shared-prefix") == 0)
            rc = parse_size(optarg, "--shared-prefix", &o->so.shared_prefix, e);
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
        else if (strcmp(name, "preempt") == 0) {
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
    return 0;
}

typedef struct {
    size_t every;
    int progress; /* stderr is a terminal */
    size_t n_requests;
} Printer;

static void print_step_header(void)
{
    printf("%6s %7s %7s %5s %6s %7s %9s %5s %6s %5s %7s\n", "step", "running", "waiting", "done", "decode",
           "prefill", "preempted", "pages", "shared", "free", "hits");
}

static void print_step(const ServeStep *st)
{
    printf("%6zu %7zu %7zu %5zu %6zu %7zu %9zu %5zu %6zu %5zu %7zu\n", st->step, st->running, st->waiting,
           st->done, st->decode_tokens, st->prefill_tokens, st->preempted, st->pool.pages_used,
           st->pool.pages_shared, st->pool.pages_free + st->pool.pages_cached, st->pool.prefix_hits);
}

static int on_step(void *user, const ServeStep *st)
{
    Printer *p = user;
    if (p->every && st->step % p->every == 0)
        print_step(st);
    if (p->progress && st->step % 16 == 0)
        fprintf(stderr, "\rkvscope serve: step %zu, %zu of %zu requests done ", st->step, st->done, p->n_requests);
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Time to first token and per output token, in steps: median and mean. */
static void print_summary(const ServeResult *r, const KvCache *cache)
{
    size_t n = r->n_requests;
    size_t *ttft = malloc(n * sizeof *ttft);
    double tpot = 0, ttft_sum = 0;
    size_t tpot_n = 0;
    for (size_t i = 0; ttft && i < n; i++) {
        const ServeRequest *q = &r->req[i];
        ttft[i] = q->first_token - q->arrival;
        ttft_sum += (double)ttft[i];
        if (q->n_output > 1) {
            tpot += (double)(q->finished - q->first_token) / (double)(q->n_output - 1);
            tpot_n++;
        }
    }
    const ServeStep *last = &r->steps[r->n_steps - 1];
    size_t peak_used = 0, waste = 0, used_rows = 0;
    for (size_t s = 0; s < r->n_steps; s++) {
        const KvStats *p = &r->steps[s].pool;
        peak_used = p->pages_used > peak_used ? p->pages_used : peak_used;
        waste += p->waste_rows, used_rows += p->pages_used * p->page_rows;
    }
    printf("\n%zu requests in %zu steps, %.3f s: %zu tokens generated (%.1f tokens/s), %zu prompt tokens\n", n,
           r->n_steps, r->seconds, r->generated_tokens, r->seconds > 0 ? (double)r->generated_tokens / r->seconds : 0,
           r->prompt_tokens);
    if (ttft) {
        qsort(ttft, n, sizeof *ttft, cmp_size);
        printf("time to first token: median %zu steps, mean %.1f; time per output token: mean %.2f steps\n",
               ttft[n / 2], ttft_sum / (double)n, tpot_n ? tpot / (double)tpot_n : 0.0);
    }
    if (r->swapped_out_bytes || r->swapped_in_bytes)
        printf("preemptions %zu (by swap: %.1f KiB copied out to host memory, %.1f KiB back)\n", r->preemptions,
               (double)r->swapped_out_bytes / 1024.0, (double)r->swapped_in_bytes / 1024.0);
    else
        printf("preemptions %zu (by recompute: %zu tokens run again)\n", r->preemptions, r->recomputed_tokens);
    printf("pool: %zu pages of %zu rows, at most %zu in use; prefix hits %zu pages: %zu rows mapped from the "
           "prefix cache, not written (a shared prefix, or a preempted sequence's own pages)\n",
           last->pool.pages_total, last->pool.page_rows, peak_used, last->pool.prefix_hits,
           last->pool.prefix_hits * last->pool.page_rows);
    printf("internal fragmentation: %.1f%% of the rows in mapped pages were empty, over the steps\n",
           used_rows ? 100.0 * (double)waste / (double)used_rows : 0.0);
    printf("cache %s\n", cache->spec);
    free(ttft);
}

int cmd_serve(int argc, char **argv)
{
    ServeOpts o = { .mo.model = DEFAULT_MODEL, .cache_spec = DEFAULT_CACHE, .slots = 8,
                    .so = { .n_requests = 32, .rate = 0.5, .prompt_min = 16, .prompt_max = 48, .output_min = 8,
                            .output_max = 32, .token_budget = 64, .seed = 1 } };
    Err e = { 0 };
    int pr = parse_options(argc, argv, &o, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);
    Model m;
    if (setup_load_model(&o.mo, 0, &m, &e) < 0)
        return cli_fail(&e);
    KvGeometry geo = model_kv_geometry(&m, o.slots);
    KvCache *cache = kv_open(o.cache_spec, &geo, &e);
    if (!cache || serve_check(&m, cache, &o.so, &e) < 0) {
        kv_free(cache);
        model_free(&m);
        return cli_fail(&e);
    }
    printf("serve: model %s, %zu requests at %.3g a step, prompts %zu..%zu tokens (%zu shared), outputs %zu..%zu, "
           "%zu slots, %zu tokens a step\n", m.cfg.name, o.so.n_requests, o.so.rate, o.so.prompt_min, o.so.prompt_max,
           o.so.shared_prefix, o.so.output_min, o.so.output_max, o.slots, o.so.token_budget);
    Printer p = { .every = o.every, .progress = isatty(STDERR_FILENO), .n_requests = o.so.n_requests };
    if (!p.every) /* about 24 rows: the expected length over 24 */
        p.every = (size_t)fmax(1.0, ((double)o.so.n_requests / o.so.rate + (double)o.so.output_max) / 24.0);
    print_step_header();
    ServeResult r;
    int rc = serve_run(&m, cache, &o.so, on_step, &p, &r, &e);
    if (p.progress)
        fprintf(stderr, "\r%60s\r", "");
    if (rc == 0) {
        if ((r.n_steps - 1) % p.every) /* the last step, unless its row is out already */
            print_step(&r.steps[r.n_steps - 1]);
        print_summary(&r, cache);
    }
    serve_result_free(&r);
    kv_free(cache);
    model_free(&m);
    return rc < 0 ? cli_fail(&e) : EXIT_OK;
}
