/* cmd_view.c: `kvscope view` (and `kvscope` with no command): the
 * interactive view, or its headless twin for tests. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "sim/preset.h"
#include "sim/roofs.h"
#include "app/commands.h"
#include "kv/cache.h"
#include "sim/session.h"
#include "sim/setup.h"
#include "ui/headless.h"
#include "ui/keys.h"
#include "ui/tty.h"
#include "ui/view.h"
#include "model/structure.h"
#include "report/serve_report.h"
#include "util/parse.h"
#include "util/pool.h"

/* The worked example: the teaching notes' 3-token prompt and 4 generated tokens. */
#define EXAMPLE_MODEL "worked-example"
#define EXAMPLE_TOKENS 4
/* The view keeps every step of a model in memory and replays it to go
 * back: it loads models up to this size (a real model's shape runs with
 * --shared). */
#define VIEW_MAX_MODEL_BYTES ((size_t)1 << 30)
/* view --serve's pool and slots when no paged --cache is given. */
#define VIEW_SERVE_CACHE "paged:page=16,pages=48"
#define VIEW_SERVE_SLOTS 8
/* Weights from which drawing them takes long enough to say so first. */
#define VIEW_SAY_BUILD_BYTES 256e6

typedef struct {
    ModelOpts mo;
    PromptOpts po;
    GenOptions go;
    const char *cache_spec;
    AttendAlgo attend;
    Structure structure;
    UncachedMode uncached;
    const char *screen;
    const char *preset;    /* --preset's name, or NULL */
    size_t beams;          /* an encoder-decoder's beam width (its preset's, else 4) */
    int serve;             /* --serve: the simulation screen shows many requests over one pool */
    ServePrefix serve_prefix;     /* --prefix-cache, with --serve */
    ServeWorkload serve_workload; /* --workload, with --serve */
    const char *draft;     /* --draft: with --speculate, the simulation screen shows speculative decoding */
    size_t speculate;      /* --speculate K */
    int model_given;
    int no_color, ascii;
    int headless, measure;
    int w, h;
    const char *keys;
    FramePrint frames;
    size_t threads;        /* --threads: decode attention split across them (split-K); 1 by default */
} ViewOpts;

static void help(void)
{
    char caches[4096]; /* kv_spec_help: every layout and modifier, about 2 KB */
    kv_spec_help(caches, sizeof caches);
    printf("usage: kvscope [view] [OPTIONS]\n\n"
           "The interactive view: step through the source document's worked example, or any\n"
           "model and cache, one forward pass at a time, and watch the cache fill, the\n"
           "attention weights and the counters move, with and without a cache. Without\n"
           "--model it opens on the worked example; with one, on the simulation.\n\n"
           "keys: Space/Right step, Left back (replay), p play/pause, + - speed, Tab panel,\n"
           "[ ] layer, { } head, s the next sequence's map (--batch), c cache, m model,\n"
           "t type a prompt, r reset, 1 2 3 screen, ? help (every key), q quit.\n\n"
           "model (the simulation and compare screens; default kjv-tiny, trained on the KJV):\n%s\n"
           "prompt:\n"
           "  --prompt TEXT       the prompt as text, through the model's tokenizer\n"
           "  --prompt-ids IDS    token ids instead, e.g. 0,1,2\n"
           "  --prompt-len N      N random token ids instead (default 8)\n"
           "  --prompt-seed S     seed of those random ids (default 1; gsl mt19937)\n"
           "  --batch N           run N sequences side by side (at most 8): sequence 0 runs the\n"
           "                      prompt, the middle ones the prompt with its last token changed\n"
           "                      (a paged cache shares their full pages by prefix), the last is\n"
           "                      forked from sequence 0 after the prefill (shared pages, copied\n"
           "                      on write); the cache map shows sequence 0 (s: the next), the\n"
           "                      counters the batch; e.g. --batch 3 --cache paged:page=3\n\n"
           "generation:\n"
           "  --tokens N          tokens to generate (default 32)\n"
           "  --chunk C           prefill the prompt in chunks of C tokens\n"
           "  --temperature T     sample at temperature T (default 0: greedy)\n"
           "  --top-k K           with --temperature, sample among the K likeliest\n"
           "  --sample-seed S     seed of the sampler (default 1)\n\n"
           "cache and attention:\n"
           "  --preset NAME       open a source document's system on the simulation screen:\n"
           "                      marlin, mla, teaching, mixed, encdec (defaults the options\n"
           "                      override); an encoder-decoder (encdec) shows its beam search\n"
           "                      step by step: beams, their slots, block tables and the shared\n"
           "                      cross cache (compare, c, m and t are for decoders)\n"
           "  --threads N         decode attention with the flash form split across N threads\n"
           "                      (split-K: each query's rows in parts of at least 256, merged by\n"
           "                      the log-sum-exp rule; the step's line says so; default 1, 0: every CPU)\n"
           "  --serve             the simulation screen serves many requests over one page pool\n"
           "                      (`kvscope serve`'s loop, recorded): 24 requests at 0.5 a step,\n"
           "                      a 16-token shared prompt, 8 slots; the pool's pages by the\n"
           "                      request holding them, the queue, preemptions. --cache must be\n"
           "                      paged (default with --serve: " VIEW_SERVE_CACHE ")\n"
           "  --prefix-cache C    with --serve: pages (default), block or radix (as serve's; the\n"
           "                      radix tree drawn beside the pool)\n"
           "  --workload W        with --serve: random (default), chat (conversations of 3 turns)\n"
           "                      or fewshot (preambles of 40 tokens; see kvscope serve --help)\n"
           "  --draft NAME        with --speculate K: the simulation screen shows speculative\n"
           "  --speculate K       decoding, greedy, recorded: NAME drafts K tokens a round (one\n"
           "                      step each), --model checks them in one pass, both caches give\n"
           "                      back the refused rows; a step is one event. e.g. --model\n"
           "                      kjv-small --draft kjv-tiny --speculate 4 (see kvscope run --help)\n"
           "  --cache SPEC        the cache (default contiguous); accepted:\n%s"
           "  --attention FORM    naive (default: the heatmaps need its weights), flash or\n"
           "                      materialize\n"
           "  --uncached HOW      the uncached equivalent of each pass: auto (default:\n"
           "                      measured for models small enough), measured (a real\n"
           "                      uncached pass beside each), formula (rows and projection\n"
           "                      FLOPs from the closed form, labelled so)\n\n"
           "attention structure (decoder-only models with standard attention):\n%s"
           "  e.g. --structure retrieval --cache ring:window=16: the needle falls out\n\n"
           "display:\n"
           "  --screen S          start on example, sim or compare\n"
           "  --no-color          no colours (also when NO_COLOR is set): glyphs and words\n"
           "                      carry every meaning anyway\n"
           "  --ascii             ASCII glyphs only, for terminals without UTF-8\n\n"
           "for testing (no terminal needed):\n"
           "  --headless          render frames as text instead of opening the terminal\n"
           "  --size WxH          the headless frame size (default 100x30)\n"
           "  --keys SCRIPT       keys to send: characters, and <space> <left> <right>\n"
           "                      <up> <down> <tab> <btab> <enter> <esc> <f1> <c-c>\n"
           "                      <tick> <tick:N> (play-mode timer) <resize:WxH> <lt>;\n"
           "                      e.g. \"<space> <right> p <tick:3> q\"\n"
           "  --frames WHICH      all (default: the frame after every key), last or none\n"
           "  --measure           time building and emitting frames at --size (ncurses,\n"
           "                      into /dev/null) and play mode on the simulation\n\n"
           "The smallest terminal it lays out is %dx%d. Headless frames show '-' for wall\n"
           "times, so they are the same on every run.\n",
           cli_model_help, caches, structure_help, VIEW_MIN_W, VIEW_MIN_H);
}

static int parse_size_wh(const char *s, int *w, int *h, Err *e)
{
    int used = 0;
    if (sscanf(s, "%dx%d%n", w, h, &used) != 2 || s[used] != '\0' || *w < 1 || *h < 1 || *w > 1000 || *h > 1000)
        return err_set(e, ERR_USAGE, "--size: '%s' is not WxH (from 1x1 to 1000x1000), e.g. 100x30", s);
    return 0;
}

/* Take one option of how the view shows itself (--uncached, --screen,
 * --no-color, --ascii, --headless, --measure, --size, --keys, --frames):
 * 1 taken, 0 not, -1 error. */
static int display_option(ViewOpts *o, const char *name, const char *arg, Err *e)
{
    int rc = 0;
    if (strcmp(name, "uncached") == 0) {
        if (strcmp(arg, "auto") == 0)
            o->uncached = UNCACHED_AUTO;
        else if (strcmp(arg, "measured") == 0)
            o->uncached = UNCACHED_MEASURED;
        else if (strcmp(arg, "formula") == 0)
            o->uncached = UNCACHED_FORMULA;
        else
            rc = err_set(e, ERR_USAGE, "--uncached: '%s' is not one of auto, measured, formula", arg);
    } else if (strcmp(name, "screen") == 0) {
        if (strcmp(arg, "example") && strcmp(arg, "sim") && strcmp(arg, "compare"))
            rc = err_set(e, ERR_USAGE, "--screen: '%s' is not one of example, sim, compare", arg);
        o->screen = arg;
    } else if (strcmp(name, "no-color") == 0)
        o->no_color = 1;
    else if (strcmp(name, "ascii") == 0)
        o->ascii = 1;
    else if (strcmp(name, "headless") == 0)
        o->headless = 1;
    else if (strcmp(name, "measure") == 0)
        o->measure = 1;
    else if (strcmp(name, "size") == 0)
        rc = parse_size_wh(arg, &o->w, &o->h, e);
    else if (strcmp(name, "keys") == 0)
        o->keys = arg;
    else if (strcmp(name, "frames") == 0) {
        if (strcmp(arg, "all") == 0)
            o->frames = FRAMES_ALL;
        else if (strcmp(arg, "last") == 0)
            o->frames = FRAMES_LAST;
        else if (strcmp(arg, "none") == 0)
            o->frames = FRAMES_NONE;
        else
            rc = err_set(e, ERR_USAGE, "--frames: '%s' is not one of all, last, none", arg);
    } else {
        return 0;
    }
    return rc < 0 ? -1 : 1;
}

static int parse_options(int argc, char **argv, ViewOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },       { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },         { "shared", no_argument, 0, 0 },
        { "allow-nan", no_argument, 0, 0 },
        { "weights", required_argument, 0, 0 },
        { "prompt", required_argument, 0, 0 },      { "prompt-ids", required_argument, 0, 0 },      { "prompt-len", required_argument, 0, 0 },
        { "prompt-seed", required_argument, 0, 0 }, { "tokens", required_argument, 0, 0 },
        { "batch", required_argument, 0, 0 },
        { "chunk", required_argument, 0, 0 },       { "temperature", required_argument, 0, 0 },
        { "top-k", required_argument, 0, 0 },       { "sample-seed", required_argument, 0, 0 },
        { "cache", required_argument, 0, 0 },       { "attention", required_argument, 0, 0 },
        { "preset", required_argument, 0, 0 },      { "structure", required_argument, 0, 0 },
        { "uncached", required_argument, 0, 0 },    { "screen", required_argument, 0, 0 },
        { "no-color", no_argument, 0, 0 },          { "ascii", no_argument, 0, 0 },
        { "headless", no_argument, 0, 0 },          { "size", required_argument, 0, 0 },
        { "keys", required_argument, 0, 0 },        { "frames", required_argument, 0, 0 },
        { "measure", no_argument, 0, 0 },           { "serve", no_argument, 0, 0 },
        { "prefix-cache", required_argument, 0, 0 }, { "workload", required_argument, 0, 0 },
        { "threads", required_argument, 0, 0 },
        { "draft", required_argument, 0, 0 },       { "speculate", required_argument, 0, 0 },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "view", &name, e)) == CLI_OPTION) {
        if (strcmp(name, "model") == 0)
            o->model_given = 1;
        int taken = cli_model_option(&o->mo, name, optarg, e);
        if (taken == 0)
            taken = cli_prompt_option(&o->po, name, optarg, e);
        if (taken == 0)
            taken = cli_generation_option(&o->go, &o->attend, name, optarg, e);
        if (taken == 0)
            taken = display_option(o, name, optarg, e);
        if (taken < 0)
            return -1;
        if (strcmp(name, "preset") == 0)
            o->model_given = 1; /* applied before the options, by preset_scan */
        else if (strcmp(name, "cache") == 0)
            o->cache_spec = optarg;
        else if (strcmp(name, "serve") == 0)
            o->serve = o->model_given = 1;
        else if (strcmp(name, "prefix-cache") == 0 && serve_prefix_parse(optarg, &o->serve_prefix, e) < 0)
            return -1;
        else if (strcmp(name, "workload") == 0 && serve_workload_parse(optarg, &o->serve_workload, e) < 0)
            return -1;
        else if (strcmp(name, "threads") == 0 && parse_size0(optarg, "--threads", &o->threads, e) < 0)
            return -1;
        else if (strcmp(name, "draft") == 0)
            o->draft = optarg, o->model_given = 1;
        else if (strcmp(name, "speculate") == 0 && parse_size(optarg, "--speculate", &o->speculate, e) < 0)
            return -1;
        else if (strcmp(name, "structure") == 0 && structure_parse(optarg, &o->structure, e) < 0)
            return -1;
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (optind < argc)
        return err_set(e, ERR_USAGE, "view: unexpected argument '%s' (see `kvscope view --help`)", argv[optind]);
    if (!o->serve && (o->serve_prefix != SERVE_PREFIX_PAGES || o->serve_workload != SERVE_WORKLOAD_RANDOM))
        return err_set(e, ERR_USAGE, "view: --prefix-cache and --workload are for --serve");
    if (!o->draft != !o->speculate)
        return err_set(e, ERR_USAGE, "view: --draft and --speculate go together");
    if (o->speculate && o->speculate > SPEC_MAX_K)
        return err_set(e, ERR_USAGE, "--speculate: %zu draft tokens a round (1 .. %d)", o->speculate, SPEC_MAX_K);
    if (o->speculate && (o->serve || o->po.batch > 1))
        return err_set(e, ERR_USAGE, "view: --speculate shows one sequence decoded: drop --serve and --batch");
    if (o->keys && !o->headless)
        return err_set(e, ERR_USAGE, "view: --keys needs --headless");
    if (o->threads != 1 && pool_set_threads(o->threads, e) < 0) /* 0: every CPU this process may use */
        return -1;
    if (o->po.batch > SESSION_MAX_BATCH)
        return err_set(e, ERR_USAGE, "view: --batch %zu: the view runs at most %d sequences", o->po.batch,
                       SESSION_MAX_BATCH);
    return 0;
}

/* --- what the view asks of the app layer -------------------------------- */

static int load_model(void *ctx, const char *name, Config *cfg, const Kernels **kern, Err *e)
{
    const ViewOpts *o = ctx;
    ModelOpts mo = o->mo;
    mo.model = name;
    if (strcmp(name, EXAMPLE_MODEL) == 0)
        mo.n_sets = 0, mo.shared = 0, mo.weights = NULL; /* the example's shape is the document's */
    else if (strcmp(name, o->mo.model) != 0)
        mo.weights = NULL; /* another model chosen in the view */
    if (setup_load_config(&mo, cfg, e) < 0)
        return -1;
    size_t bytes = model_param_floats(cfg) * sizeof(float);
    if (bytes > VIEW_MAX_MODEL_BYTES) {
        char have[32];
        return err_set(e, ERR_USAGE,
                       "model '%s' holds %s of weights; the view loads models up to 1 GiB (start it with "
                       "--shared to run its shape on one set of layer weights)",
                       cfg->name, human_bytes(have, sizeof have, (double)bytes));
    }
    char what[128];
    snprintf(what, sizeof what, "model '%s'", cfg->name);
    if (setup_check_memory(bytes, what, e) < 0)
        return -1;
    *kern = kernels_select(mo.isa, e);
    return *kern ? 0 : -1;
}

static int make_prompt(void *ctx, const Config *cfg, int **ids, size_t *len, Err *e)
{
    const ViewOpts *o = ctx;
    PromptOpts po = o->po;
    po.batch = 0; /* sequence 0's prompt: the session makes the others from it */
    po.max_len = kv_spec_shifts(o->cache_spec) ? SETUP_MAX_PROMPT : 0; /* only a shift cache runs past the context */
    size_t batch;
    return setup_make_prompt(&po, cfg, ids, &batch, len, e);
}

static int open_session(ViewOpts *o, const char *model, const int *fixed, size_t fixed_len, size_t n_generate,
                        const char *cache, Session **out, Err *e)
{
    Config cfg;
    const Kernels *kern;
    int *prompt = NULL;
    size_t plen = fixed_len;
    if (load_model(o, model, &cfg, &kern, e) < 0)
        return -1;
    if (cfg.architecture != ARCH_DECODER) /* open_beam's */
        return err_set(e, ERR_USAGE, "view: model '%s' is an encoder-decoder: the view shows its beam search",
                       cfg.name);
    if (!fixed && make_prompt(o, &cfg, &prompt, &plen, e) < 0)
        return -1;
    /* a real shape's weights take seconds to draw: say so before the wait */
    double weight_bytes = 4.0 * (double)model_param_floats(&cfg);
    if (!o->headless && !o->measure && weight_bytes > VIEW_SAY_BUILD_BYTES)
        fprintf(stderr, "kvscope view: building %s's weights (%.1f GB), a few seconds...\n", cfg.name,
                weight_bytes / 1e9);
    SessionSpec sp = {
        .cfg = cfg, .kern = kern, .attend = o->attend, .cache_spec = cache, .prompt = fixed ? fixed : prompt,
        .prompt_len = plen, .go = o->go, .uncached = o->uncached, .structure = &o->structure,
        .on_layer = o->headless || o->measure ? NULL : tty_on_layer, .batch = o->po.batch,
    };
    sp.go.n_generate = n_generate;
    if (fixed) { /* the worked example: greedy, naive, every uncached pass measured */
        sp.attend = ATTEND_NAIVE;
        sp.uncached = UNCACHED_MEASURED;
        sp.go = (GenOptions){ .n_generate = n_generate };
        sp.structure = NULL; /* the document's numbers */
        sp.batch = 1;
    }
    int rc = session_init(out, &sp, e);
    free(prompt);
    return rc;
}

/* An encoder-decoder's beam search, run once and recorded for the view:
 * the source from the prompt options (its src_len random ids by default),
 * width o->beams, as many target tokens as the model holds. */
static int open_beam(ViewOpts *o, Config cfg, const Kernels *kern, BeamReplay **out, Err *e)
{
    PromptOpts p = o->po;
    if (!setup_prompt_given(&p))
        p.len = cfg.src_len;
    p.max_len = cfg.src_len; /* a source, not the decoder's positions */
    int *src = NULL;
    size_t batch, len;
    if (setup_make_prompt(&p, &cfg, &src, &batch, &len, e) < 0)
        return -1;
    if (batch != 1) {
        free(src);
        return err_set(e, ERR_USAGE, "view: beam search reads one source, not a batch of %zu", batch);
    }
    cfg.src_len = len;
    Model m;
    BeamReplay *br = calloc(1, sizeof *br);
    int rc = br ? model_init(&m, &cfg, kern, e) : err_set(e, ERR_RUNTIME, "out of memory");
    if (rc == 0) {
        rc = beam_replay_make(br, &m, o->cache_spec, src, len, o->beams ? o->beams : 4, cfg.max_seq_len, e);
        model_free(&m);
    }
    free(src);
    if (rc < 0) {
        free(br);
        return -1;
    }
    *out = br;
    return 0;
}

/* `view --serve`: the serving loop over model o->mo.model and the cache,
 * run once and recorded. */
static int open_serving(const ViewOpts *o, const Config *cfg, const Kernels *kern, ServeReplay **out, Err *e)
{
    const char *spec = strcmp(o->cache_spec, "contiguous") == 0 ? VIEW_SERVE_CACHE : o->cache_spec;
    ServeOptions so = { .n_requests = 24, .rate = 0.5, .prompt_min = 16, .prompt_max = 48, .output_min = 8,
                        .output_max = 32, .shared_prefix = 16, .token_budget = 64, .seed = 1,
                        .prefix = o->serve_prefix, .workload = o->serve_workload, .turns = 4 };
    if (so.workload == SERVE_WORKLOAD_CHAT) /* conversations grow: shorter messages and outputs */
        so.prompt_min = 4, so.prompt_max = 12, so.output_min = 4, so.output_max = 12, so.turns = 3;
    else if (so.workload == SERVE_WORKLOAD_FEWSHOT)
        so.shared_prefix = 40, so.prompt_min = 8, so.prompt_max = 24;
    Model m;
    ServeReplay *sr = calloc(1, sizeof *sr);
    if (!sr)
        return err_set(e, ERR_RUNTIME, "out of memory");
    if (model_init(&m, cfg, kern, e) < 0) {
        free(sr);
        return -1;
    }
    KvGeometry geo = model_kv_geometry(&m, VIEW_SERVE_SLOTS);
    KvCache *cache = kv_open(spec, &geo, e);
    int rc = cache ? serve_replay_make(sr, &m, cache, &so, e) : -1;
    kv_free(cache);
    model_free(&m);
    if (rc < 0) {
        serve_replay_free(sr);
        free(sr);
        return err_wrap(e, "view --serve");
    }
    *out = sr;
    return 0;
}

/* `view --draft NAME --speculate K`: greedy speculative decoding of the
 * model (the target) with the draft, both with --cache, run once and
 * recorded. */
static int open_speculate(const ViewOpts *o, const Config *cfg, const Kernels *kern, SpecReplay **out, Err *e)
{
    Config dcfg;
    const Kernels *dkern;
    Model target, draft;
    int *prompt = NULL;
    size_t plen;
    KvCache *tc = NULL, *dc = NULL;
    SpecReplay *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(e, ERR_RUNTIME, "out of memory");
    if (load_model((void *)o, o->draft, &dcfg, &dkern, e) < 0 || make_prompt((void *)o, cfg, &prompt, &plen, e) < 0 ||
        setup_tokenizer(cfg, &r->tok, e) < 0) {
        free(prompt);
        spec_replay_free(r);
        free(r);
        return err_wrap(e, "--draft");
    }
    int rc = model_init(&target, cfg, kern, e);
    if (rc == 0 && (rc = model_init(&draft, &dcfg, dkern, e)) < 0)
        model_free(&target);
    if (rc == 0) {
        target.attend = draft.attend = o->attend;
        KvGeometry tg = model_kv_geometry(&target, 1), dg = model_kv_geometry(&draft, 1);
        rc = (tc = kv_open(o->cache_spec, &tg, e)) && (dc = kv_open(o->cache_spec, &dg, e)) ? 0 : -1;
        if (rc == 0)
            rc = spec_replay_make(r, &target, tc, &draft, dc, o->cache_spec, prompt, plen, o->go.n_generate,
                                  o->speculate, e);
        kv_free(tc);
        kv_free(dc);
        model_free(&target);
        model_free(&draft);
    }
    free(prompt);
    if (rc < 0) {
        spec_replay_free(r);
        free(r);
        return err_wrap(e, "view --speculate");
    }
    *out = r;
    return 0;
}

static void print_measure(const Measure *m)
{
    printf("view timing at %dx%d (means; measured, not asserted):\n", m->w, m->h);
    static const char *const names[3] = { "example", "simulation", "compare" };
    for (int s = 0; s < 3; s++)
        printf("  build a frame, %-12s %9.3f ms\n", names[s], m->build_ms[s]);
    printf("  emit a frame (ncurses)      %9.3f ms       (into /dev/null, every frame different)\n", m->emit_ms);
    printf("  play mode, simulation       %9.0f steps/s  (%zu passes, each: step + build + emit)\n",
           m->play_steps_s, m->play_steps);
}

/* A preset's model, cache and workload become the defaults. */
static void apply_preset(ViewOpts *o, const Preset *p)
{
    o->mo.model = p->model[0] ? p->model : o->mo.model;
    o->mo.shared |= p->shared;
    o->cache_spec = p->cache[0] ? p->cache : o->cache_spec;
    if (p->view_tokens || p->tokens)
        o->go.n_generate = p->view_tokens ? p->view_tokens : p->tokens;
    if (p->prompt_len)
        o->po.len = p->prompt_len;
    if (p->beams)
        o->beams = p->beams;
    if (p->attention[0] && strcmp(p->attention, "flash") != 0) /* the view keeps weights: not flash */
        attend_algo_parse(p->attention, &o->attend);
}

/* --screen, else the simulation when a model was named, else the example. */
static ScreenId start_screen(const ViewOpts *o)
{
    if (!o->screen)
        return o->model_given ? SCR_SIM : SCR_EXAMPLE;
    return strcmp(o->screen, "example") == 0 ? SCR_EXAMPLE : strcmp(o->screen, "sim") == 0 ? SCR_SIM : SCR_COMPARE;
}

/* Measure, render headless frames, or open the terminal; the exit code. */
static int show(View *v, const ViewOpts *o, const ScriptKey *keys, size_t n_keys)
{
    Err e = { 0 };
    if (o->measure) {
        Measure m;
        if (tty_measure(v, o->w, o->h, 200, &m, &e) < 0)
            return cli_fail(&e);
        print_measure(&m);
        return EXIT_OK;
    }
    if (o->headless) {
        v->hide_times = 1;
        return headless_run(v, o->w, o->h, keys, n_keys, o->frames, stdout, &e) < 0 ? cli_fail(&e) : EXIT_OK;
    }
    int t = tty_run(v, &e);
    return t < 0 ? cli_fail(&e) : t;
}

int cmd_view(int argc, char **argv)
{
    ViewOpts o = { .threads = 1, .mo.model = "kjv-tiny", .go.n_generate = 32, .go.sample_seed = 1, .cache_spec = "contiguous",
                   .attend = ATTEND_NAIVE, .w = 100, .h = 30 };
    Err e = { 0 };
    Preset preset; /* a seed system's model, cache and workload, as defaults */
    int has_preset = preset_scan(argc, argv, &preset, &e);
    if (has_preset < 0)
        return cli_fail(&e);
    if (has_preset) {
        apply_preset(&o, &preset);
        o.preset = preset.name;
    }
    int pr = parse_options(argc, argv, &o, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);
    /* no terminal: say so before loading anything */
    if (!o.headless && !o.measure && tty_check(&e) < 0)
        return cli_fail(&e);
    ScriptKey *keys = NULL;
    size_t n_keys = 0;
    if (o.keys && keys_parse_script(o.keys, &keys, &n_keys, &e) < 0)
        return cli_fail(&e);

    Session *ex = NULL, *sim = NULL;
    BeamReplay *beam = NULL;
    ServeReplay *serving = NULL;
    SpecReplay *spec = NULL;
    static const int example_prompt[3] = { 0, 1, 2 };
    Config cfg; /* the simulation's model: a decoder steps as a session, anything else as a record */
    const Kernels *kern;
    if (load_model(&o, o.mo.model, &cfg, &kern, &e) < 0) {
        free(keys);
        return cli_fail(&e);
    }
    if (open_session(&o, EXAMPLE_MODEL, example_prompt, 3, EXAMPLE_TOKENS, "contiguous", &ex, &e) < 0 ||
        (o.serve ? open_serving(&o, &cfg, kern, &serving, &e)
         : o.draft ? open_speculate(&o, &cfg, kern, &spec, &e)
         : cfg.architecture == ARCH_ENCDEC ? open_beam(&o, cfg, kern, &beam, &e)
                                           : open_session(&o, o.mo.model, NULL, 0, o.go.n_generate, o.cache_spec,
                                                          &sim, &e)) < 0) {
        session_free(ex);
        free(keys);
        return cli_fail(&e);
    }
    ViewHooks hooks = { load_model, make_prompt, &o };
    View v;
    if (beam)
        view_init_beam(&v, ex, beam, SCR_EXAMPLE, &hooks);
    else if (serving)
        view_init_serving(&v, ex, serving, SCR_EXAMPLE, &hooks);
    else if (spec)
        view_init_spec(&v, ex, spec, SCR_EXAMPLE, &hooks);
    else
        view_init(&v, ex, sim, SCR_EXAMPLE, &hooks);
    /* the roofs for the counters and the roofline: given, kept by bench, or probed now */
    if (sim && roofs_get(&v.roofs, kern, 1, &e) < 0) {
        view_free(&v);
        free(keys);
        return cli_fail(&e);
    }
    const char *no_color = getenv("NO_COLOR");
    v.color = !o.no_color && !(no_color && *no_color);
    v.ascii = o.ascii;
    (void)view_key(&v, '1' + (int)start_screen(&o)); /* through the key, as a user would start it */
    v.status[0] = '\0';

    int rc = show(&v, &o, keys, n_keys);
    view_free(&v);
    free(keys);
    return rc;
}
