/* cmd_plot.c: `kvscope plot`: write each figure's data (the engine), copy
 * its gnuplot script beside it and, when gnuplot is installed, draw it. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/progress_line.h"
#include "plot/plot.h"
#include "util/clock.h"
#include "util/parse.h"
#include "util/pool.h"

#define DEFAULT_OUT "kvscope-plots"
#define DEFAULT_SEED 1

const PlotFigure plot_figures[] = {
    { 1, "projection", "projection work vs tokens generated, cached vs uncached (log-log, GSL-fitted slopes)",
      NULL, 0, plot_projection },
    { 2, "attention-flops", "total attention FLOPs vs tokens generated: quadratic vs cubic", NULL, 0,
      plot_attention_flops },
    { 3, "step-time", "measured time per step vs position, cached vs uncached", NULL, 1, plot_step_time },
    { 4, "memory", "KV cache memory vs context for the model configs and every format; MHA, GQA, MQA, MLA", NULL,
      0, plot_memory },
    { 5, "bandwidth", "decode attention time per step per format, beside the floor its bytes set at the read bandwidth",
      NULL, 1, plot_bandwidth },
    { 6, "quant-error", "quantization error per format: attention output error, element error histogram", NULL, 0,
      plot_quant_error },
    { 7, "paged", "paged cache: internal waste vs page size, pages saved by prefix sharing", NULL, 0,
      plot_paged },
    { 8, "eviction", "eviction quality on structured workloads: attention mass kept at an equal budget, and vs "
      "the budget", NULL, 0, plot_eviction },
    { 9, "beam", "beam search memory vs beam width, with and without copy-on-write", NULL, 0, plot_beam },
    { 10, "mla", "MLA vs GQA vs MHA bytes per token, and decompress vs absorbed FLOPs", NULL, 0, plot_mla },
    { 11, "loss", "the shipped models' training and validation bits per byte vs tokens trained on", NULL, 0,
      plot_loss },
    { 12, "streaming", "log-perplexity vs position past the context: full cache, window, sinks, recomputed window",
      NULL, 0, plot_streaming },
    { 13, "kv-formats", "K format x V format on a trained model: KL to the f32 cache; KIVI's per-channel keys",
      NULL, 0, plot_kv_formats },
    { 14, "budget", "eviction at an equal budget on real text: window, sinks, H2O, block-sparse vs the budget",
      NULL, 0, plot_budget },
    { 15, "mixed", "the mixed-precision proposal's cache: hot f16 window size and cold format vs KL and bytes", NULL, 0,
      plot_mixed },
    { 16, "retrieval", "a fact stated early, asked for late: rows each cache still holds, bits the fact saves",
      NULL, 0, plot_retrieval },
    { 17, "serve", "many requests over one page pool: tokens a step and pool use by page size, prefix hits",
      NULL, 0, plot_serve },
    { 18, "roofline", "prefill and decode passes on this machine's roofline and on a data-center GPU's; the batch "
      "where decode crosses the ridge", NULL, 1, plot_roofline },
    { 19, "prefix-cache", "prefix caches on chat and few-shot serving: block hash vs radix tree, hit rate, steps, "
      "evictions and pages held by the pool's size", NULL, 0, plot_prefix_cache },
    { 20, "speculative", "speculative decoding on held-out text: proposals kept, tokens a pass and speed-up "
      "against K", NULL, 1, plot_speculative },
};
const size_t plot_n_figures = sizeof plot_figures / sizeof plot_figures[0];

typedef struct {
    const char *out;
    const char *term; /* NULL: png and svg */
    uint64_t seed;
    int all, list, quick;
    int quiet;           /* --quiet: no progress line */
    const char *model;
    size_t tokens;
    int want[sizeof plot_figures / sizeof plot_figures[0]];
    size_t n_want;
    size_t threads;      /* --threads (0: every CPU this process may use) */
} PlotOpts;

static void names(char *buf, size_t cap)
{
    size_t used = 0;
    for (size_t i = 0; i < plot_n_figures && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", plot_figures[i].name);
}

static void help(void)
{
    printf("usage: kvscope plot [NAME ...|--all] [OPTIONS]\n\n"
           "Write the figures that teach the KV cache. For each: the data the engine computes\n"
           "(DIR/NAME.tsv: a header row, tab-separated; some figures add NAME.*.tsv), the\n"
           "strings it prints (NAME.labels.gp: title, caption, fitted slopes), a copy of its\n"
           "gnuplot script (plots/NAME.gp) and, when gnuplot is installed, the pictures\n"
           "NAME.png and NAME.svg. Redraw one by hand in DIR with\n"
           "    gnuplot -c NAME.gp NAME.tsv NAME.png png      (or svg, or dumb with - as output)\n\n"
           "NAME is a figure's name or number (see --list); --all makes every figure whose\n"
           "engine parts exist.\n\n"
           "options:\n"
           "  --all               every figure that can be made\n"
           "  --list              the figures (and what any waiting one waits for)\n"
           "  --out DIR           where to write (default %s; created if missing)\n"
           "  --term T            png, svg or dumb (draw in this terminal); default png and svg\n"
           "  --seed S            seed of the prompts, sources, request lengths and synthetic\n"
           "                      K/V values (default %d); the same seed writes byte-identical\n"
           "                      data files, except the measured figures (step-time,\n"
           "                      bandwidth, roofline), which hold timings\n"
           "  --model NAME        figures 1-3: the model (defaults: tiny for 1-2, small for 3)\n"
           "  --tokens N          figures 1-3: tokens generated (defaults 256 and 160)\n"
           "  --quick             smaller runs, for tests: shorter measured figures (they then mean\n"
           "                      little) and beam search at widths 1, 2 and 4 only\n%s%s\n"
           "Without gnuplot the data and scripts are still written; install it with\n"
           "sudo apt-get install gnuplot-nox. `make plots` writes every figure to build/plots.\n"
           "example: kvscope plot projection memory --term dumb\n",
           DEFAULT_OUT, DEFAULT_SEED, cli_threads_help, progress_line_help);
}

static void list(void)
{
    printf("  #  name             status\n");
    for (size_t i = 0; i < plot_n_figures; i++) {
        const PlotFigure *f = &plot_figures[i];
        printf(" %2d  %-16s %s: %s\n", f->number, f->name, f->waiting ? "waiting" : "ready  ", f->title);
        if (f->waiting)
            printf("      %-16s waits for %s\n", "", f->waiting);
    }
}

/* A figure by name or number; -1 when there is none. */
static int find_figure(const char *arg)
{
    for (size_t i = 0; i < plot_n_figures; i++) {
        char num[8];
        snprintf(num, sizeof num, "%d", plot_figures[i].number);
        if (strcmp(arg, plot_figures[i].name) == 0 || strcmp(arg, num) == 0)
            return (int)i;
    }
    return -1;
}

static int parse_options(int argc, char **argv, PlotOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "all", no_argument, 0, 0 },         { "list", no_argument, 0, 0 },
        { "out", required_argument, 0, 0 },   { "term", required_argument, 0, 0 },
        { "seed", required_argument, 0, 0 },  { "quick", no_argument, 0, 0 },
        { "model", required_argument, 0, 0 }, { "tokens", required_argument, 0, 0 },
        { "threads", required_argument, 0, 0 }, { "help", no_argument, 0, 'h' },
        { "quiet", no_argument, 0, 0 },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "plot", &name, e)) == CLI_OPTION) {
        int rc = 0;
        if (strcmp(name, "all") == 0)
            o->all = 1;
        else if (strcmp(name, "list") == 0)
            o->list = 1;
        else if (strcmp(name, "quick") == 0)
            o->quick = 1;
        else if (strcmp(name, "quiet") == 0)
            o->quiet = 1;
        else if (strcmp(name, "out") == 0)
            o->out = optarg;
        else if (strcmp(name, "model") == 0)
            o->model = optarg;
        else if (strcmp(name, "tokens") == 0)
            rc = parse_size(optarg, "--tokens", &o->tokens, e);
        else if (strcmp(name, "threads") == 0)
            rc = parse_size0(optarg, "--threads", &o->threads, e);
        else if (strcmp(name, "seed") == 0) {
            unsigned long long v;
            rc = parse_u64(optarg, "--seed", &v, e);
            o->seed = v;
        } else if (strcmp(name, "term") == 0) {
            if (strcmp(optarg, "png") && strcmp(optarg, "svg") && strcmp(optarg, "dumb"))
                rc = err_set(e, ERR_USAGE, "--term: '%s' is not one of png, svg, dumb", optarg);
            o->term = optarg;
        }
        if (rc < 0)
            return -1;
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    char all[256];
    names(all, sizeof all);
    for (int i = optind; i < argc; i++) {
        int fig = find_figure(argv[i]);
        if (fig < 0)
            return err_set(e, ERR_USAGE, "plot: unknown figure '%s' (figures: %s; see `kvscope plot --list`)",
                           argv[i], all);
        if (plot_figures[fig].waiting && !o->list)
            return err_set(e, ERR_USAGE, "plot: figure %d '%s' is waiting for %s", plot_figures[fig].number,
                           plot_figures[fig].name, plot_figures[fig].waiting);
        if (!o->want[fig])
            o->n_want++;
        o->want[fig] = 1;
    }
    if (o->list)
        return 0;
    if (o->all && o->n_want)
        return err_set(e, ERR_USAGE, "plot: name figures or give --all, not both");
    if (!o->all && !o->n_want)
        return err_set(e, ERR_USAGE, "plot: name the figures to make, or --all (see `kvscope plot --list`)");
    if (o->all)
        for (size_t i = 0; i < plot_n_figures; i++)
            if (!plot_figures[i].waiting && !o->want[i]) {
                o->want[i] = 1;
                o->n_want++;
            }
    return pool_set_threads(o->threads, e);
}

/* Draw figure f in every term asked for; the names drawn go into drawn. */
static int render(const PlotCtx *ctx, const PlotFigure *f, const char *term, char *drawn, size_t cap, Err *e)
{
    static const char *const both[] = { "png", "svg" };
    const char *const *terms = term ? &term : both;
    size_t n = term ? 1 : 2;
    drawn[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char out[128], said[2048];
        int dumb = strcmp(terms[i], "dumb") == 0;
        snprintf(out, sizeof out, dumb ? "-" : "%s.%s", f->name, terms[i]);
        if (plot_render(ctx, f->name, terms[i], out, said, sizeof said, e) < 0)
            return -1;
        if (said[0]) {
            /* gnuplot drew it but warned: pass the warning on, in one line */
            said[strcspn(said, "\n")] = '\0';
            char line[sizeof said + 128];
            snprintf(line, sizeof line, "gnuplot warned on %s.gp (%s): %s", f->name, terms[i], said);
            cli_error_line(line);
        }
        if (!dumb)
            snprintf(drawn + strlen(drawn), cap - strlen(drawn), " %s", out);
    }
    return 0;
}

/* The context every maker gets: the options, the kernels to time, this
 * machine's name and size; the output directory made. A bad --model,
 * --tokens or KVSCOPE_LLC is a usage error here, before anything is written. */
static int plot_setup(const PlotOpts *o, PlotCtx *ctx, Err *e)
{
    *ctx = (PlotCtx){ .out_dir = o->out, .seed = o->seed, .quick = o->quick, .model = o->model, .tokens = o->tokens };
    if (!(ctx->kern = kernels_select(NULL, e)))
        return -1;
    for (size_t i = 0; i < plot_n_figures; i++)
        if (o->want[i] && plot_figures[i].number <= 3) {
            if (plot_gen_check(ctx, e) < 0)
                return -1;
            break;
        }
    if (machine_read(&ctx->mach, e) < 0 || plot_prepare_dir(o->out, e) < 0)
        return -1;
    plot_machine(ctx->machine, sizeof ctx->machine);
    char note[256];
    for (size_t i = 0; i < plot_n_figures && !o->quick; i++) /* --quick's sizes are fixed */
        if (o->want[i] && plot_figures[i].make == plot_bandwidth && *machine_llc_note(&ctx->mach, note, sizeof note))
            fprintf(stderr, "kvscope plot: %s\n", note);
    return 0;
}

/* The progress line of the figure being made, and the unit its maker counts. */
typedef struct {
    ProgressLine line;
    char label[96];
    const char *unit;
} PlotShow;

static void on_progress(void *user, const char *unit, size_t done, size_t total)
{
    PlotShow *s = user;
    if (!s->unit || strcmp(s->unit, unit) != 0) /* the maker's count begins: time left from its pace */
        progress_line_begin(&s->line, s->label, s->unit = unit);
    progress_line_count(&s->line, done, total);
}

/* Make figure f, the k-th of n: its data and its script, the progress line
 * shown meanwhile; (have: gnuplot is installed) its pictures; then its two
 * lines: the maker's note and the files written. */
static int make_figure(const PlotCtx *ctx, const PlotFigure *f, size_t k, size_t n, const char *term, int have,
                       PlotShow *show, Err *e)
{
    double t0 = clock_seconds();
    PlotNote note = { "" };
    snprintf(show->label, sizeof show->label, "kvscope plot: figure %zu of %zu, %s", k, n, f->name);
    show->unit = NULL;
    progress_line_begin(&show->line, show->label, NULL);
    if (f->make(ctx, &note, e) < 0 || plot_copy_script(ctx, f->name, e) < 0)
        return -1;
    progress_line_end(&show->line); /* before gnuplot, which may draw here (--term dumb) or warn */
    char drawn[256] = "";
    if (have && render(ctx, f, term, drawn, sizeof drawn, e) < 0)
        return -1;
    printf("%2d %-16s %s\n   %-16s %s.tsv%s ->%s (%.1f s)\n", f->number, f->name, note.note, "", f->name,
           f->measured ? " (measured: timings)" : "", have ? (drawn[0] ? drawn : " terminal") : " (not drawn)",
           clock_seconds() - t0);
    return 0;
}

/* After the figures: those still waiting (with --all), the time taken, and
 * how to redraw the last one by hand (or how to get gnuplot). */
static void print_end(const PlotOpts *o, const PlotFigure *last, int have, double t_all)
{
    int waiting = 0;
    for (size_t i = 0; i < plot_n_figures; i++)
        waiting += plot_figures[i].waiting != NULL;
    if (o->all && waiting) {
        printf("waiting (see --list):");
        for (size_t i = 0; i < plot_n_figures; i++)
            if (plot_figures[i].waiting)
                printf(" %d %s", plot_figures[i].number, plot_figures[i].name);
        printf("\n");
    }
    printf("done in %.1f s. ", clock_seconds() - t_all);
    const char *t = o->term ? o->term : "png";
    if (have && strcmp(t, "dumb") == 0)
        printf("Redraw by hand: cd %s && gnuplot -c %s.gp %s.tsv - dumb\n", o->out, last->name, last->name);
    else if (have)
        printf("Redraw by hand: cd %s && gnuplot -c %s.gp %s.tsv %s.%s %s\n", o->out, last->name, last->name,
               last->name, t, t);
    else
        printf("To draw the figures, install gnuplot: sudo apt-get install gnuplot-nox, then run this again\n"
               "(or, in %s: gnuplot -c NAME.gp NAME.tsv NAME.png png)\n", o->out);
}

int cmd_plot(int argc, char **argv)
{
    PlotOpts o = { .out = DEFAULT_OUT, .seed = DEFAULT_SEED };
    Err e = { 0 };
    int pr = parse_options(argc, argv, &o, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);
    if (o.list) {
        list();
        return EXIT_OK;
    }
    PlotCtx ctx;
    if (plot_setup(&o, &ctx, &e) < 0) {
        plot_run_abort(); /* the folders it made */
        return cli_fail(&e);
    }
    PlotShow show;
    progress_line_init(&show.line, o.quiet);
    ctx.progress = on_progress;
    ctx.progress_user = &show;
    int have = plot_have_gnuplot();

    printf("kvscope plot: %zu figure%s into %s/ (seed %" PRIu64 "%s; %s)\n", o.n_want, o.n_want == 1 ? "" : "s",
           o.out, o.seed, o.quick ? ", quick" : "",
           have ? "gnuplot found" : "gnuplot not found: data and scripts only");
    double t_all = clock_seconds();
    const PlotFigure *last = NULL;
    size_t k = 0;
    for (size_t i = 0; i < plot_n_figures; i++) {
        if (!o.want[i])
            continue;
        if (make_figure(&ctx, &plot_figures[i], ++k, o.n_want, o.term, have, &show, &e) < 0) {
            progress_line_end(&show.line);
            plot_run_abort(); /* --out as it was: the run's files gone, those it replaced put back */
            fflush(stdout);
            return cli_fail(&e);
        }
        last = &plot_figures[i];
    }
    plot_run_commit();
    print_end(&o, last, have, t_all);
    return EXIT_OK;
}
