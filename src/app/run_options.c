/* run_options.c: the options of `kvscope run` (run_options.h). */
#include "app/run_options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "app/run_beam.h"
#include "app/run_speculate.h"
#include "model/mla_shape.h"
#include "util/parse.h"
#include "util/pool.h"

static const char mla_help[] =
    "  --mla PATH          MLA models: how attention reads the latent cache: absorbed\n"
    "                      (default: W_uk folded into the query, W_uv into the output, K\n"
    "                      and V never built) or decompress (every row up-projected to\n"
    "                      per-head K and V, through an LRU of 4 decompressed tiles)\n";

static int mla_parse(const char *text, MlaPath *out, Err *e)
{
    if (mla_path_parse(text, out) < 0)
        return err_set(e, ERR_USAGE, "--mla: '%s' is not one of absorbed, decompress", text);
    return 0;
}

static int mla_check(const Config *c, int given, unsigned bugs, Err *e)
{
    if (given && c->attention != ATTN_MLA)
        return err_set(e, ERR_USAGE, "--mla: model '%s' uses GQA attention; --mla applies to MLA models "
                       "(`kvscope calc --list` names them)", c->name);
    if (bugs && c->attention == ATTN_MLA)
        return err_set(e, ERR_USAGE, "--bug: the pitfalls act on GQA attention; model '%s' uses MLA", c->name);
    return 0;
}

void run_options_help(void)
{
    char caches[4096]; /* kv_spec_help: every layout and modifier, about 2 KB */
    kv_spec_help(caches, sizeof caches);
    printf("usage: kvscope run [OPTIONS]\n\n"
           "Generate tokens with a KV cache (default), without one (--no-cache), or both\n"
           "(--compare), and print what every forward pass did: tokens projected, cache\n"
           "length, attention shape, FLOPs, bytes moved and time. Generating N tokens takes\n"
           "N passes: a prefill over the prompt, then N-1 one-token decode steps; without a\n"
           "cache every pass re-runs the whole sequence.\n\n"
           "model:\n%s%s\n"
           "prompt:\n%s\n"
           "generation:\n"
           "  --tokens N          tokens to generate per sequence (default 16)\n"
           "  --chunk C           prefill the prompt in chunks of C tokens (default: all at once)\n"
           "  --temperature T     sample at temperature T (default 0: greedy)\n"
           "  --top-k K           with --temperature, sample among the K likeliest (default: all)\n"
           "  --sample-seed S     seed of the sampler (default 1; gsl mt19937)\n"
           "  --ignore-eos        go on to --tokens past the model's end-of-text token (by default a\n"
           "                      run stops once every sequence has chosen it, greedy or sampled, and\n"
           "                      says so: a config's eos_token, a GGUF's tokenizer.ggml.eos_token_id)\n\n"
           "cache:\n"
           "  --cache SPEC        the cache (default contiguous); accepted:\n%s"
           "  --attention FORM    flash (default: tiles of " STR_OF(ATTEND_TILE) ", online softmax, dequantization\n"
           "                      fused), naive (all scores, then softmax), or materialize\n"
           "                      (naive over an f32 view of the cache, its traffic counted)\n"
           "  --bug NAME          commit one of the document's pitfalls in the cached run, on\n"
           "                      purpose (repeatable): rope-position, mask-in-decode,\n"
           "                      rope-on-v, ignore-append; --compare then shows the damage\n"
           "%s"
           "  --preset NAME       a source document's system: marlin (the Marlin design), mla (the\n"
           "                      MLA notes), teaching (the teaching notes), encdec (the\n"
           "                      encoder-decoder notes), mixed (the mixed-precision proposal);\n"
           "                      its model, cache and workload are defaults the other options override\n"
           "  --no-cache          recompute everything at every step\n"
           "  --quality           measure the cache against an exact shadow run fed the same\n"
           "                      tokens: attention error and attention mass kept per layer,\n"
           "                      logit error, and where greedy tokens first differ\n"
           "  --compare           run cached and uncached; report whether the tokens are\n"
           "                      identical, the largest logit difference, and the ratios\n\n"
           "attention structure (decoder-only models; the output names it):\n%s"
           "  e.g. --structure retrieval --cache ring:window=16 --quality: the needle falls out\n\n"
           "encoder-decoder (beam search; the model's architecture = encdec):\n%s\n"
           "speculative decoding:\n%s\n"
           "threads:\n"
           "  --threads N         threads for the wide passes (the prefill, every uncached pass), cut\n"
           "                      by rows, and a decode step's matrices and lm head, each thread a\n"
           "                      part of their output rows: the same bytes for every N; and for a\n"
           "                      decode step's attention past 511 visible rows (split-K, within\n"
           "                      1e-6 of one thread). Default: the CPUs this process may use\n\n"
           "output:\n"
           "  --format F          table (default), tsv (one row per pass) or json\n\n"
           "Counters are measured where the work happens. FLOPs count a multiply-add as 2;\n"
           "softmax is counted as 5 FLOPs per score (an estimate, labelled so).\n"
           "example: kvscope run --model small --prompt-len 10 --tokens 50 --compare\n",
           cli_model_help, cli_int_dot_help, cli_prompt_help, caches, mla_help, structure_help, run_beam_help,
           run_speculate_help);
}

static int parse_options(int argc, char **argv, RunOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },   { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },     { "shared", no_argument, 0, 0 },
        { "allow-nan", no_argument, 0, 0 },
        { "weights", required_argument, 0, 0 }, { "int-dot", optional_argument, 0, 0 },
        { "prompt", required_argument, 0, 0 },      { "prompt-ids", required_argument, 0, 0 },  { "prompt-len", required_argument, 0, 0 },
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
        { "structure", required_argument, 0, 0 }, { "threads", required_argument, 0, 0 },
        { "draft", required_argument, 0, 0 },   { "speculate", required_argument, 0, 0 },
        { "ignore-eos", no_argument, 0, 0 },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "run", &name, e)) == CLI_OPTION) {
        o->tokens_given |= strcmp(name, "tokens") == 0;
        int taken = cli_model_option(&o->mo, name, optarg, e);
        if (taken == 0)
            taken = cli_prompt_option(&o->po, name, optarg, e);
        if (taken == 0)
            taken = cli_generation_option(&o->go, &o->attend, name, optarg, e);
        if (taken < 0)
            return -1;
        if (taken)
            continue;
        int rc = 0;
        if (strcmp(name, "beams") == 0)
            rc = parse_size(optarg, "--beams", &o->beams, e);
        else if (strcmp(name, "src-len") == 0)
            rc = parse_size(optarg, "--src-len", &o->src_len, e);
        else if (strcmp(name, "alpha") == 0)
            rc = parse_double(optarg, "--alpha", &o->alpha, e), o->alpha_given = 1;
        else if (strcmp(name, "structure") == 0)
            rc = structure_parse(optarg, &o->structure, e);
        else if (strcmp(name, "cache") == 0)
            o->cache_spec = optarg;
        else if (strcmp(name, "bug") == 0) {
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
            rc = mla_parse(optarg, &o->mla, e), o->mla_given = 1;
        else if (strcmp(name, "threads") == 0)
            rc = parse_size0(optarg, "--threads", &o->threads, e);
        else if (strcmp(name, "draft") == 0)
            o->draft = optarg;
        else if (strcmp(name, "speculate") == 0)
            rc = parse_size(optarg, "--speculate", &o->speculate, e);
        else if (strcmp(name, "ignore-eos") == 0)
            o->ignore_eos = 1;
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
    if (run_speculate_check(o, e) < 0)
        return -1;
    o->go.stop_at_eos = !o->ignore_eos && !o->quality; /* --quality compares every step with its shadow */
    return pool_set_threads(o->threads, e);
}

/* A preset's values become the defaults; options parsed later override them. */
static int apply_preset(RunOpts *o, const Preset *p, Err *e)
{
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

int run_options_read(int argc, char **argv, RunOpts *o, Err *e)
{
    o->has_preset = preset_scan(argc, argv, &o->preset, e);
    if (o->has_preset < 0 || (o->has_preset && apply_preset(o, &o->preset, e) < 0))
        return -1;
    return parse_options(argc, argv, o, e);
}

int run_options_check(const RunOpts *o, const Config *cfg, Err *e)
{
    if (mla_check(cfg, o->mla_given, o->bugs, e) < 0)
        return -1;
    if (structure_on(&o->structure) && (cfg->architecture == ARCH_ENCDEC || cfg->attention == ATTN_MLA))
        return err_set(e, ERR_USAGE, "--structure: model '%s' is %s; attention structure applies to decoder-only "
                       "models with standard attention", cfg->name,
                       cfg->attention == ATTN_MLA ? "an MLA model" : "encoder-decoder");
    return 0;
}
