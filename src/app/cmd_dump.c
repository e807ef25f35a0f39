/* cmd_dump.c: `kvscope dump`: run cached greedy generation and write the
 * weights, the per-step logits, the tokens and the cache contents as .npy
 * files with a manifest.json, so that anyone can re-derive them in NumPy
 * (tests/cli/numpy_forward.py does, from the weights alone). This file
 * reads the options and runs the model; dump_arrays.c writes the .npy
 * files and dump_manifest.c the manifest. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "report/dump_arrays.h"
#include "report/dump_manifest.h"
#include "kv/cache.h"
#include "model/generate.h"
#include "util/checked.h"
#include "util/npy.h"
#include "util/parse.h"
#include "util/pool.h"

_Static_assert(sizeof(int) == 4, "tokens are written as int32 straight from int arrays");

#define DEFAULT_MODEL "worked-example"
#define DEFAULT_PROMPT "0,1,2" /* the worked example's prompt */
#define DEFAULT_TOKENS 4

typedef struct {
    ModelOpts mo;
    PromptOpts po;
    size_t n_tokens;
    const char *cache_spec;
    const char *out;
    int force;
    size_t threads;     /* --threads (0: every CPU this process may use) */
} DumpOpts;

static void help(void)
{
    char caches[4096]; /* kv_spec_help: every layout and modifier, about 2 KB */
    kv_spec_help(caches, sizeof caches);
    printf("usage: kvscope dump --out DIR [OPTIONS]\n\n"
           "Run greedy generation with a KV cache and write everything needed to check it\n"
           "independently, as NumPy .npy files (format 1.0, little-endian, C order) plus a\n"
           "manifest.json that lists every file with its shape and dtype:\n\n"
           "  embed.npy, unembed.npy      [vocab, d_model]\n"
           "  final_norm.npy              [d_model]\n"
           "  layerL.NAME.npy             the weights of layer L, matrices [out, in]:\n"
           "                              attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down\n"
           "                              (with shared_layers only layer0, used by every layer)\n"
           "  prompt.npy                  int32 [n_seqs, prompt_len]\n"
           "  tokens.npy                  int32 [n_seqs, tokens]: the tokens generated\n"
           "  logits.npy                  float32 [steps, n_seqs, vocab]: step s chose token s\n"
           "  cache.layerL.k.npy, .v.npy  float32 [n_seqs, n_kv_heads, len, head_dim]: the cache\n"
           "                              after the run (K after RoPE, V as projected), decoded\n"
           "                              to f32 as attention reads it\n"
           "  cache.layerL.k.rawS.npy     a cache stored in other formats (+quant, mixed, kivi):\n"
           "                              uint8 [n_seqs, n_kv_heads, rows, row_bytes], the stored\n"
           "                              bytes of segment S, a run of positions in one format\n"
           "                              (manifest.json's cache_storage: positions, format,\n"
           "                              block_values, block_bytes, row_extra); kivi's keys add\n"
           "                              .rawS.chan.npy, float16 scales then minimums per group\n"
           "  manifest.json               config, weights source and seed, prompt, tokens,\n"
           "                              files, and the conventions of the forward pass\n\n"
           "The files are written into a folder beside DIR, then moved into DIR (a folder\n"
           "that is there keeps its owner and mode; a new one follows the umask): a failed\n"
           "dump leaves nothing. Caches that drop rows (ring, h2o, snapkv, +sparse) are\n"
           "refused.\n\n"
           "options:\n"
           "  --out DIR           where to write (created if missing; must be empty)\n"
           "  --force             write into a non-empty DIR, replacing files of the same name\n"
           "  --tokens N          tokens to generate per sequence (default %d)\n"
           "  --threads N         threads for the prefill's rows and a decode step's matrices (each\n"
           "                      thread a part of their output rows): the same bytes for every N;\n"
           "                      default: the CPUs this process may use\n"
           "  --cache SPEC        the cache (default contiguous); accepted:\n%s\n"
           "model (default %s):\n%s%s\n"
           "prompt (default %s for the worked example, else random ids):\n%s\n"
           "load in Python:\n"
           "  import json, numpy as np\n"
           "  man = json.load(open('DIR/manifest.json'))\n"
           "  wq = np.load('DIR/layer0.wq.npy')       # [n_heads*head_dim, d_model]: q = wq @ x\n"
           "  k = np.load('DIR/cache.layer0.k.npy')  # [n_seqs, n_kv_heads, len, head_dim]\n"
           "tests/cli/numpy_forward.py DIR recomputes the whole model from the weights and\n"
           "compares tokens, logits and cache (an f32 cache: the run must be exact);\n"
           "tests/cli/dump_storage.py DIR decodes a quantized cache's stored bytes again.\n"
           "example: kvscope dump --out kvdump --model tiny --prompt-len 5 --tokens 6 --batch 2\n",
           DEFAULT_TOKENS, caches, DEFAULT_MODEL, cli_model_help, cli_int_dot_help, DEFAULT_PROMPT, cli_prompt_help);
}

/* 1: --help; 0: options in o; -1: error in e. */
static int parse_options(int argc, char **argv, DumpOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },   { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },     { "shared", no_argument, 0, 0 },
        { "allow-nan", no_argument, 0, 0 },
        { "weights", required_argument, 0, 0 }, { "int-dot", optional_argument, 0, 0 },
        { "prompt", required_argument, 0, 0 },      { "prompt-ids", required_argument, 0, 0 },  { "prompt-len", required_argument, 0, 0 },
        { "prompt-seed", required_argument, 0, 0 }, { "batch", required_argument, 0, 0 },
        { "tokens", required_argument, 0, 0 },  { "cache", required_argument, 0, 0 },
        { "out", required_argument, 0, 0 },     { "force", no_argument, 0, 0 },
        { "threads", required_argument, 0, 0 },
        { "help", no_argument, 0, 'h' },        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "dump", &name, e)) == CLI_OPTION) {
        int taken = cli_model_option(&o->mo, name, optarg, e);
        if (taken == 0)
            taken = cli_prompt_option(&o->po, name, optarg, e);
        if (taken < 0)
            return -1;
        if (taken)
            continue;
        if (strcmp(name, "tokens") == 0) {
            if (parse_size(optarg, "--tokens", &o->n_tokens, e) < 0)
                return -1;
        } else if (strcmp(name, "cache") == 0) {
            o->cache_spec = optarg;
        } else if (strcmp(name, "out") == 0) {
            if (!*optarg)
                return err_set(e, ERR_USAGE, "dump: --out needs a directory name");
            o->out = optarg;
        } else if (strcmp(name, "force") == 0) {
            o->force = 1;
        } else if (strcmp(name, "threads") == 0) {
            if (parse_size0(optarg, "--threads", &o->threads, e) < 0)
                return -1;
        }
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (optind < argc)
        return err_set(e, ERR_USAGE, "dump: unexpected argument '%s' (see `kvscope dump --help`)", argv[optind]);
    if (!o->out)
        return err_set(e, ERR_USAGE, "dump: --out DIR is required (see `kvscope dump --help`)");
    return pool_set_threads(o->threads, e);
}

typedef struct {
    size_t per_step;  /* n_seqs * vocab */
    float *logits;    /* [steps][n_seqs][vocab] */
    size_t steps, cap;
} Collector;

static int on_step(void *user, const StepReport *r)
{
    Collector *col = user;
    if (!r->sampled || col->steps == col->cap)
        return 0; /* a prefill chunk that chose nothing */
    memcpy(col->logits + col->steps++ * col->per_step, r->logits, col->per_step * sizeof(float));
    return 0;
}

/* Everything a dump run holds, released by state_free. */
typedef struct {
    Config cfg;
    Model m;
    KvCache *cache;
    int *prompt, *tokens;
    size_t batch, plen, cache_len;
    int default_prompt;
    Collector col;
} DumpState;

/* Refuse a cache that drops rows: its arrays could not be [len] rows at
 * positions 0..len-1. Decided by the layout, before anything runs. */
static int check_dumpable(const KvCache *cache, Err *e)
{
    static const char *const dropping[] = { "ring", "h2o", "snapkv", "shift" };
    for (size_t i = 0; i < sizeof dropping / sizeof dropping[0]; i++) {
        size_t n = strlen(dropping[i]);
        if (strncmp(cache->spec, dropping[i], n) == 0 && strchr(":+", cache->spec[n]))
            return err_set(e, ERR_USAGE, "dump: cache '%s' drops rows; dump writes caches that keep every "
                           "position (contiguous, dynamic, paged, mixed, kivi, any of them +quant)", cache->spec);
    }
    if (strstr(cache->spec, "+sparse"))
        return err_set(e, ERR_USAGE, "dump: cache '%s' gives pages back; dump writes caches that keep every "
                       "position", cache->spec);
    return 0;
}

/* Everything that can be refused before the run: the config, the prompt,
 * the length, the cache spec (opened here) and whether it can be dumped. */
static int prepare(DumpOpts *o, DumpState *s, Err *e)
{
    const Config *cfg = &s->cfg;
    if (setup_load_config(&o->mo, &s->cfg, e) < 0)
        return -1;
    if (cfg->attention != ATTN_GQA)
        return err_set(e, ERR_USAGE, "dump: model '%s' uses MLA attention; dump covers GQA models only", cfg->name);
    s->default_prompt = !setup_prompt_given(&o->po) && !o->po.len && strcmp(cfg->name, DEFAULT_MODEL) == 0;
    if (s->default_prompt)
        o->po.ids = DEFAULT_PROMPT;
    if (setup_make_prompt(&o->po, cfg, &s->prompt, &s->batch, &s->plen, e) < 0)
        return -1;
    size_t need = generate_positions(s->plen, o->n_tokens);
    if (need > cfg->max_seq_len)
        return err_set(e, ERR_USAGE, "dump: a prompt of %zu plus %zu generated tokens needs %zu positions; model "
                       "'%s' has max_seq_len %zu", s->plen, o->n_tokens, need, cfg->name, cfg->max_seq_len);
    KvGeometry geo = { .n_layers = cfg->n_layers, .n_seqs = s->batch, .n_kv_heads = cfg->n_kv_heads,
                       .head_dim = cfg->head_dim, .max_seq_len = cfg->max_seq_len };
    s->cache = kv_open(o->cache_spec, &geo, e);
    if (!s->cache || check_dumpable(s->cache, e) < 0 || kv_check_room(s->cache, need, e) < 0)
        return -1;
    return 0;
}

/* Load the model and generate, keeping every step's logits. */
static int run(const DumpOpts *o, DumpState *s, Err *e)
{
    const Config *cfg = &s->cfg;
    /* extra memory: the logits, the gathered copy of the cache */
    size_t kv_bytes = size_mul3_sat(2 * cfg->n_layers, s->batch,
                                    size_mul3_sat(cfg->max_seq_len, config_kv_dim(cfg), sizeof(float)));
    size_t n_out, logit_bytes;
    if (size_mul(s->batch, o->n_tokens, &n_out) < 0 ||
        size_mul(n_out, size_mul_sat(cfg->vocab, sizeof(float)), &logit_bytes) < 0)
        return err_set(e, ERR_USAGE, "dump: %zu sequences x %zu tokens of logits: too many to count", s->batch,
                       o->n_tokens);
    if (setup_load_model(&o->mo, size_add_sat(kv_bytes, logit_bytes), &s->m, e) < 0)
        return -1;
    s->tokens = malloc(n_out * sizeof(int));
    s->col.per_step = s->batch * cfg->vocab;
    s->col.cap = o->n_tokens;
    s->col.logits = malloc(logit_bytes);
    if (!s->tokens || !s->col.logits)
        return err_set(e, ERR_RUNTIME, "out of memory for %zu tokens of logits", o->n_tokens);
    GenOptions go = { .n_generate = o->n_tokens };
    if (generate(&s->m, s->cache, s->prompt, s->batch, s->plen, &go, s->tokens, on_step, &s->col, e) < 0)
        return -1;
    /* the .npy weights are f32; the run multiplied the matrices as stored, as `run` does */
    return model_dequantize(&s->m, e);
}

/* Every array, then the manifest, into a folder beside o->out, renamed to
 * o->out at the end; on failure nothing is left behind. */
static int write_all(const DumpOpts *o, DumpState *s, Dump *d, Err *e)
{
    const size_t prompt_shape[2] = { s->batch, s->plen }, tok_shape[2] = { s->batch, o->n_tokens };
    const size_t logit_shape[3] = { s->col.steps, s->batch, s->cfg.vocab };
    if (dump_dir_begin(d, o->out, e) < 0)
        return -1;
    int rc = dump_weights(d, &s->m, e) < 0 ||
                     dump_array(d, "prompt.npy", NPY_I32, prompt_shape, 2, s->prompt, "prompt token ids", e) < 0 ||
                     dump_array(d, "tokens.npy", NPY_I32, tok_shape, 2, s->tokens, "generated token ids (greedy)",
                                e) < 0 ||
                     dump_array(d, "logits.npy", NPY_F32, logit_shape, 3, s->col.logits,
                                "logits each generated token was chosen from: [step, seq, vocab]", e) < 0 ||
                     dump_cache(d, s->cache, &s->cfg, s->batch, &s->cache_len, e) < 0
                 ? -1
                 : 0;
    if (rc == 0) {
        const DumpRun r = { .model = &s->m, .cache_spec = s->cache->spec, .po = &o->po,
                            .default_prompt = s->default_prompt, .prompt = s->prompt, .tokens = s->tokens,
                            .n_seqs = s->batch, .prompt_len = s->plen, .n_tokens = o->n_tokens,
                            .steps = s->col.steps, .cache_len = s->cache_len };
        rc = dump_write_manifest(d, &r, e);
    }
    if (rc == 0)
        rc = dump_dir_commit(d, o->out, e);
    if (rc < 0)
        dump_dir_abort(d);
    return rc;
}

static void print_summary(const DumpOpts *o, const DumpState *s, const Dump *d)
{
    printf("wrote %zu arrays and manifest.json to %s\n", d->n_written, o->out);
    printf("model %s (%s); cache %s; prompt %zu x %zu; %zu tokens generated; cache length %zu\n", s->cfg.name,
           s->m.source, s->cache->spec, s->batch, s->plen, o->n_tokens, s->cache_len);
    printf("tokens (seq 0):");
    for (size_t i = 0; i < o->n_tokens; i++)
        printf(" %d", s->tokens[i]);
    printf("\nload: python3 -c \"import numpy as np; print(np.load('%s/logits.npy').shape)\"\n", o->out);
}

static void state_free(DumpState *s)
{
    kv_free(s->cache);
    free(s->col.logits);
    free(s->tokens);
    free(s->prompt);
    if (s->m.arena)
        model_free(&s->m);
}

int cmd_dump(int argc, char **argv)
{
    DumpOpts o = { .mo = { .model = DEFAULT_MODEL }, .n_tokens = DEFAULT_TOKENS, .cache_spec = "contiguous" };
    Err e = { 0 };
    int rc = parse_options(argc, argv, &o, &e);
    if (rc == 1) {
        help();
        return EXIT_OK;
    }
    if (rc < 0 || dump_dir_check(o.out, o.force, &e) < 0)
        return cli_fail(&e);

    DumpState s;
    memset(&s, 0, sizeof s);
    Dump d = { .files = json_array() };
    int code = EXIT_OK;
    if (prepare(&o, &s, &e) < 0 || run(&o, &s, &e) < 0 || write_all(&o, &s, &d, &e) < 0)
        code = cli_fail(&e);
    else
        print_summary(&o, &s, &d);
    json_decref(d.files);
    json_decref(d.storage);
    state_free(&s);
    return code;
}
