/* cmd_dump.c: `kvscope dump`: run cached greedy generation and write the
 * weights, the per-step logits, the tokens and the cache contents as .npy
 * files with a manifest.json, so that anyone can re-derive them in NumPy
 * (tests/cli/numpy_forward.py does, from the weights alone). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>

#include "app/cli.h"
#include "app/commands.h"
#include "kv/cache.h"
#include "model/generate.h"
#include "util/npy.h"
#include "util/parse.h"

_Static_assert(sizeof(int) == 4, "tokens are written as int32 straight from int arrays");

#define DUMP_FORMAT "kvscope-dump 1"
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
} DumpOpts;

static void help(void)
{
    char caches[1024];
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
           "                              after the run (K after RoPE, V as projected)\n"
           "  manifest.json               config, weights source and seed, prompt, tokens,\n"
           "                              files, and the conventions of the forward pass\n\n"
           "options:\n"
           "  --out DIR           where to write (created if missing; must be empty)\n"
           "  --force             write into a non-empty DIR, replacing files of the same name\n"
           "  --tokens N          tokens to generate per sequence (default %d)\n"
           "  --cache SPEC        the cache (default contiguous); accepted:\n%s\n"
           "model (default %s):\n%s\n"
           "prompt (default %s for the worked example, else random ids):\n%s\n"
           "load in Python:\n"
           "  import json, numpy as np\n"
           "  man = json.load(open('DIR/manifest.json'))\n"
           "  wq = np.load('DIR/layer0.wq.npy')       # [n_heads*head_dim, d_model]: q = wq @ x\n"
           "  k = np.load('DIR/cache.layer0.k.npy')  # [n_seqs, n_kv_heads, len, head_dim]\n"
           "tests/cli/numpy_forward.py DIR recomputes the whole model from the weights and\n"
           "compares tokens, logits and cache.\n"
           "example: kvscope dump --out kvdump --model tiny --prompt-len 5 --tokens 6 --batch 2\n",
           DEFAULT_TOKENS, caches, DEFAULT_MODEL, cli_model_help, DEFAULT_PROMPT, cli_prompt_help);
}

/* 1: --help; 0: options in o; -1: error in e. */
static int parse_options(int argc, char **argv, DumpOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },   { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },     { "shared", no_argument, 0, 0 },
        { "prompt", required_argument, 0, 0 },  { "prompt-len", required_argument, 0, 0 },
        { "prompt-seed", required_argument, 0, 0 }, { "batch", required_argument, 0, 0 },
        { "tokens", required_argument, 0, 0 },  { "cache", required_argument, 0, 0 },
        { "out", required_argument, 0, 0 },     { "force", no_argument, 0, 0 },
        { "help", no_argument, 0, 'h' },        { 0, 0, 0, 0 },
    };
    opterr = 0;
    optind = 1;
    int c, idx;
    while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        if (c == 'h')
            return 1;
        if (c == '?')
            return err_set(e, ERR_USAGE, "dump: unknown or incomplete option '%s' (see `kvscope dump --help`)",
                           argv[optind - 1]);
        const char *name = longopts[idx].name;
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
        }
    }
    if (optind < argc)
        return err_set(e, ERR_USAGE, "dump: unexpected argument '%s' (see `kvscope dump --help`)", argv[optind]);
    if (!o->out)
        return err_set(e, ERR_USAGE, "dump: --out DIR is required (see `kvscope dump --help`)");
    return 0;
}

/* ---- the output directory ---- */

/* Refuse a DIR that is a file, or a non-empty directory without --force.
 * A missing DIR is fine: it is created later, once the run is known good. */
static int dir_check(const char *dir, int force, Err *e)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        return err_set(e, ERR_RUNTIME, "--out %s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return err_set(e, ERR_USAGE, "--out %s: exists and is not a directory", dir);
    if (force)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return err_set(e, ERR_RUNTIME, "--out %s: %s", dir, strerror(errno));
    int empty = 1;
    for (struct dirent *ent; empty && (ent = readdir(d));)
        empty = strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0;
    closedir(d);
    if (!empty)
        return err_set(e, ERR_USAGE, "--out %s: directory is not empty (add --force to write into it)", dir);
    return 0;
}

/* mkdir -p: create dir and any missing parents. */
static int dir_make(const char *dir, Err *e)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return err_set(e, ERR_USAGE, "--out: path too long");
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return err_set(e, ERR_RUNTIME, "cannot create %s: %s", path, strerror(errno));
        *p = saved;
        if (saved == '\0')
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(e, ERR_RUNTIME, "cannot create directory %s", dir);
    return 0;
}

/* ---- writing arrays and recording them in the manifest ---- */

typedef struct {
    const char *dir;
    json_t *files; /* [{name, dtype, shape, what}] */
    size_t n_written;
} Dump;

static int dump_array(Dump *d, const char *name, NpyType type, const size_t *shape, size_t ndim,
                      const void *data, const char *what, Err *e)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", d->dir, name) >= (int)sizeof path)
        return err_set(e, ERR_USAGE, "--out: path too long");
    if (npy_write(path, type, shape, ndim, data, e) < 0)
        return -1;
    json_t *dims = json_array();
    for (size_t i = 0; i < ndim; i++)
        json_array_append_new(dims, json_integer((json_int_t)shape[i]));
    json_array_append_new(d->files, json_pack("{s:s, s:s, s:o, s:s}", "name", name, "dtype", npy_descr(type),
                                              "shape", dims, "what", what));
    d->n_written++;
    return 0;
}

static int dump_weights(Dump *d, const Model *m, Err *e)
{
    const Config *c = &m->cfg;
    const size_t dm = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim;
    const size_t embed_shape[2] = { c->vocab, dm };
    const size_t norm_shape[1] = { dm };
    if (dump_array(d, "embed.npy", NPY_F32, embed_shape, 2, m->embed, "token embeddings: row t is token t", e) < 0)
        return -1;

    size_t stored = c->shared_layers ? 1 : c->n_layers;
    for (size_t l = 0; l < stored; l++) {
        const LayerWeights *w = model_layer(m, l);
        const struct {
            const char *name;
            const float *data;
            size_t rows, cols; /* cols 0: a vector of rows */
            const char *what;
        } t[] = {
            { "attn_norm", w->attn_norm, dm, 0, "RMSNorm gain before attention" },
            { "wq", w->wq, q, dm, "query projection [n_heads*head_dim, d_model]" },
            { "wk", w->wk, kv, dm, "key projection [n_kv_heads*head_dim, d_model]" },
            { "wv", w->wv, kv, dm, "value projection [n_kv_heads*head_dim, d_model]" },
            { "wo", w->wo, dm, q, "output projection [d_model, n_heads*head_dim]" },
            { "ffn_norm", w->ffn_norm, dm, 0, "RMSNorm gain before the FFN" },
            { "w_gate", w->w_gate, f, dm, "SwiGLU gate [ffn_dim, d_model]" },
            { "w_up", w->w_up, f, dm, "SwiGLU up [ffn_dim, d_model]" },
            { "w_down", w->w_down, dm, f, "SwiGLU down [d_model, ffn_dim]" },
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            char name[64];
            snprintf(name, sizeof name, "layer%zu.%s.npy", l, t[i].name);
            const size_t shape[2] = { t[i].rows, t[i].cols };
            if (dump_array(d, name, NPY_F32, shape, t[i].cols ? 2 : 1, t[i].data, t[i].what, e) < 0)
                return -1;
        }
    }
    if (dump_array(d, "final_norm.npy", NPY_F32, norm_shape, 1, m->final_norm, "RMSNorm gain before unembedding",
                   e) < 0)
        return -1;
    return dump_array(d, "unembed.npy", NPY_F32, embed_shape, 2, m->unembed,
                      "unembedding: logits = unembed @ final_norm(x)", e);
}

/* Copy the rows of (layer, seq, kv head h) into k and v, each [len][head_dim]
 * with row p at position p, walking the cache's blocks. */
static int gather_head(const KvCache *cache, size_t l, size_t b, size_t h, size_t len, float *k, float *v, Err *e)
{
    const size_t hd = cache->geo.head_dim, row_bytes = hd * sizeof(float);
    size_t next = 0; /* the position the next block must start at */
    for (size_t i = 0; i < kv_n_blocks(cache, l, b); i++) {
        KvBlock blk;
        kv_block(cache, l, b, h, i, &blk);
        if (blk.k_fmt != FMT_F32 || blk.v_fmt != FMT_F32)
            return err_set(e, ERR_USAGE, "cache '%s' stores %s/%s rows; dump writes f32 caches only", cache->spec,
                           format_name(blk.k_fmt), format_name(blk.v_fmt));
        if (blk.pos != next || blk.pos + blk.n > len)
            return err_set(e, ERR_USAGE, "cache '%s' does not hold positions 0..%zu in order; dump writes full "
                           "caches only", cache->spec, len - 1);
        for (size_t r = 0; r < blk.n; r++) {
            memcpy(k + (blk.pos + r) * hd, (const char *)blk.k + r * blk.k_stride, row_bytes);
            memcpy(v + (blk.pos + r) * hd, (const char *)blk.v + r * blk.v_stride, row_bytes);
        }
        next = blk.pos + blk.n;
    }
    if (next != len)
        return err_set(e, ERR_USAGE, "cache '%s' holds %zu of %zu positions; dump writes full caches only",
                       cache->spec, next, len);
    return 0;
}

/* The cache after the run, layer by layer, gathered through kv_block:
 * [n_seqs][n_kv_heads][len][head_dim] for K and for V. Every sequence must
 * hold the same `len` rows at positions 0..len-1 in f32. */
static int dump_cache(Dump *d, const KvCache *cache, const Config *c, size_t n_seqs, size_t *len_out, Err *e)
{
    const size_t hd = c->head_dim, H = c->n_kv_heads;
    const size_t len = kv_length(cache, 0, 0);
    *len_out = len;
    float *k = malloc(n_seqs * H * len * hd * sizeof(float) + 1); /* [n_seqs][H][len][hd] */
    float *v = malloc(n_seqs * H * len * hd * sizeof(float) + 1);
    if (!k || !v) {
        free(k);
        free(v);
        return err_set(e, ERR_RUNTIME, "out of memory gathering the cache");
    }
    int rc = 0;
    for (size_t l = 0; l < c->n_layers && rc == 0; l++) {
        for (size_t b = 0; b < n_seqs && rc == 0; b++) {
            if (kv_length(cache, l, b) != len)
                rc = err_set(e, ERR_RUNTIME, "cache '%s': layer %zu sequence %zu holds %zu rows, not %zu",
                             cache->spec, l, b, kv_length(cache, l, b), len);
            for (size_t h = 0; h < H && rc == 0; h++)
                rc = gather_head(cache, l, b, h, len, k + (b * H + h) * len * hd, v + (b * H + h) * len * hd, e);
        }
        if (rc < 0)
            break;
        char kname[64], vname[64];
        snprintf(kname, sizeof kname, "cache.layer%zu.k.npy", l);
        snprintf(vname, sizeof vname, "cache.layer%zu.v.npy", l);
        const size_t shape[4] = { n_seqs, H, len, hd };
        rc = dump_array(d, kname, NPY_F32, shape, 4, k, "cached keys after the run, RoPE applied", e);
        if (rc == 0)
            rc = dump_array(d, vname, NPY_F32, shape, 4, v, "cached values after the run (no RoPE)", e);
    }
    free(k);
    free(v);
    return rc;
}

/* ---- the run ---- */

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

static json_t *ids_json(const int *ids, size_t rows, size_t cols)
{
    json_t *all = json_array();
    for (size_t r = 0; r < rows; r++) {
        json_t *row = json_array();
        for (size_t i = 0; i < cols; i++)
            json_array_append_new(row, json_integer(ids[r * cols + i]));
        json_array_append_new(all, row);
    }
    return all;
}

static json_t *config_json(const Config *c)
{
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:b, s:s}",
                          "name", c->name, "weights", c->weights, "d_model", (json_int_t)c->d_model,
                          "n_layers", (json_int_t)c->n_layers, "n_heads", (json_int_t)c->n_heads,
                          "n_kv_heads", (json_int_t)c->n_kv_heads, "head_dim", (json_int_t)c->head_dim,
                          "ffn_dim", (json_int_t)c->ffn_dim, "vocab", (json_int_t)c->vocab,
                          "max_seq_len", (json_int_t)c->max_seq_len, "rope_theta", c->rope_theta,
                          "norm_eps", c->norm_eps, "seed", (json_int_t)c->seed,
                          "sliding_window", (json_int_t)c->sliding_window, "shared_layers", c->shared_layers,
                          "attention", c->attention == ATTN_MLA ? "mla" : "gqa");
    return o;
}

static json_t *conventions_json(const Config *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "arrays", json_string("little-endian, C order; float32 '<f4', token ids int32 '<i4'"));
    json_object_set_new(o, "matrices", json_string("row-major [out, in]: y = W @ x, one dot product per output"));
    if (c->shared_layers)
        json_object_set_new(o, "layers", json_sprintf("shared_layers: only layer0.*.npy is written; all %zu "
                                                      "layers use those weights", c->n_layers));
    else
        json_object_set_new(o, "layers", json_sprintf("one set of weights per layer: layer0 .. layer%zu",
                                                      c->n_layers - 1));
    json_object_set_new(o, "block", json_string(
        "x = embed[token]; per layer: x += wo @ attn(rmsnorm(x, attn_norm)); "
        "x += w_down @ (silu(w_gate @ h) * (w_up @ h)) with h = rmsnorm(x, ffn_norm); "
        "logits = unembed @ rmsnorm(x, final_norm)"));
    json_object_set_new(o, "rmsnorm", json_string("y = x / sqrt(mean(x^2) + norm_eps) * gain"));
    json_object_set_new(o, "rope", json_string(
        "per head, pairs (2i, 2i+1) rotated by angle pos * rope_theta^(-2i/head_dim): "
        "(a, b) -> (a cos - b sin, a sin + b cos); applied to q and k, never to v"));
    json_object_set_new(o, "attention", json_string(
        "causal; scores q.k / sqrt(head_dim), softmax over positions j <= pos (and pos - sliding_window < j when the config sets a window); query head h reads KV head "
        "h * n_kv_heads / n_heads (GQA); heads concatenated in order before wo"));
    json_object_set_new(o, "silu", json_string("silu(g) = g / (1 + exp(-g))"));
    json_object_set_new(o, "cache", json_string(
        "cache.layerL.k/v: [n_seqs, n_kv_heads, len, head_dim], row p is position p; K stored after RoPE, "
        "V without; len = prompt_len + tokens - 1 (the last token is never fed back)"));
    json_object_set_new(o, "logits", json_string(
        "logits[s, b] are the last-position logits of pass s for sequence b; greedy: tokens[b, s] = "
        "argmax(logits[s, b]); pass 0 is the prefill over the prompt, pass s > 0 feeds tokens[b, s-1] "
        "at position prompt_len + s - 1"));
    return o;
}

/* jansson's indented output puts every array element on its own line; put
 * arrays of plain numbers back on one line ("shape": [2, 2, 10, 16]) so the
 * manifest reads well. Works in place: the text only ever shrinks. */
static void compact_number_arrays(char *s)
{
    char *w = s;
    const char *r = s;
    int in_str = 0;
    while (*r) {
        if (in_str) {
            if (*r == '\\' && r[1])
                *w++ = *r++;
            else if (*r == '"')
                in_str = 0;
            *w++ = *r++;
            continue;
        }
        if (*r == '"')
            in_str = 1;
        if (*r != '[') {
            *w++ = *r++;
            continue;
        }
        const char *end = r + 1;
        while (*end && strchr("0123456789-+.eE, \n", *end))
            end++;
        if (*end != ']') {
            *w++ = *r++;
            continue;
        }
        int pending = 0; /* 1: after a comma, 2: after a comma and white space */
        *w++ = '[';
        for (const char *p = r + 1; p < end; p++) {
            if (*p == ' ' || *p == '\n') {
                pending = pending ? 2 : 0;
            } else if (*p == ',') {
                *w++ = ',';
                pending = 1;
            } else {
                if (pending == 2)
                    *w++ = ' ';
                pending = 0;
                *w++ = *p;
            }
        }
        *w++ = ']';
        r = end + 1;
    }
    *w = '\0';
}

static int write_manifest(const Dump *d, const Model *m, const DumpOpts *o, int default_prompt, const KvCache *cache,
                          const int *prompt, const int *tokens, size_t batch, size_t plen, size_t steps,
                          size_t cache_len, Err *e)
{
    const Config *c = &m->cfg;
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string(DUMP_FORMAT));
    json_object_set_new(root, "kvscope_version", json_string(KVSCOPE_VERSION));
    json_object_set_new(root, "config", config_json(c));

    json_t *w = json_object();
    json_object_set_new(w, "source", json_string(m->source));
    /* the seed makes synthetic weights; file weights do not use it */
    int synthetic = strcmp(c->weights, "synthetic") == 0;
    json_object_set_new(w, "seed", synthetic ? json_integer((json_int_t)c->seed) : json_null());
    json_object_set_new(w, "shared_layers", json_boolean(c->shared_layers));
    json_object_set_new(root, "weights", w);

    json_t *run = json_object();
    json_object_set_new(run, "cache", json_string(cache->spec));
    json_object_set_new(run, "sampling", json_string("greedy"));
    json_object_set_new(run, "kernels", json_string(m->kern->isa));
    json_object_set_new(run, "n_seqs", json_integer((json_int_t)batch));
    json_object_set_new(run, "prompt_len", json_integer((json_int_t)plen));
    json_object_set_new(run, "tokens_generated", json_integer((json_int_t)o->n_tokens));
    json_object_set_new(run, "steps", json_integer((json_int_t)steps));
    json_object_set_new(run, "cache_len", json_integer((json_int_t)cache_len));
    if (o->po.ids)
        json_object_set_new(run, "prompt_source", json_string(default_prompt ? "the worked example's prompt (default)"
                                                                             : "given (--prompt)"));
    else {
        unsigned long long seed = o->po.seed ? o->po.seed : 1;
        json_object_set_new(run, "prompt_source", json_sprintf("random ids, gsl mt19937, prompt seed %llu", seed));
        json_object_set_new(run, "prompt_seed", json_integer((json_int_t)seed));
    }
    json_object_set_new(run, "prompt", ids_json(prompt, batch, plen));
    json_object_set_new(run, "tokens", ids_json(tokens, batch, o->n_tokens));
    json_object_set_new(root, "run", run);

    json_object_set(root, "files", d->files);
    json_object_set_new(root, "conventions", conventions_json(c));
    json_object_set_new(root, "load", json_string(
        "python3: import numpy as np; np.load('layer0.wq.npy'); tests/cli/numpy_forward.py DIR re-checks "
        "tokens, logits and cache from the weights alone"));

    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", d->dir);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!text)
        return err_set(e, ERR_RUNTIME, "out of memory writing %s", path);
    compact_number_arrays(text);
    FILE *f = fopen(path, "w");
    int bad = !f || fputs(text, f) == EOF || fputc('\n', f) == EOF;
    int saved = errno;
    if (f && fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    free(text);
    if (bad)
        return err_set(e, ERR_RUNTIME, "cannot write %s: %s", path, strerror(saved));
    return 0;
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
    if (rc < 0 || dir_check(o.out, o.force, &e) < 0)
        return cli_fail(&e);

    Model m;
    memset(&m, 0, sizeof m);
    int *prompt = NULL, *tokens = NULL;
    KvCache *cache = NULL;
    Collector col = { 0 };
    Dump d = { .dir = o.out, .files = json_array() };
    size_t batch = 0, plen = 0, cache_len = 0;
    int code = EXIT_OK;

    Config cfg;
    if (cli_load_config(&o.mo, &cfg, &e) < 0)
        goto fail;
    if (cfg.attention != ATTN_GQA) {
        err_set(&e, ERR_USAGE, "dump: model '%s' uses MLA attention; dump covers GQA models only", cfg.name);
        goto fail;
    }
    int default_prompt = !o.po.ids && !o.po.len && strcmp(cfg.name, DEFAULT_MODEL) == 0;
    if (default_prompt)
        o.po.ids = DEFAULT_PROMPT;
    if (cli_make_prompt(&o.po, &cfg, &prompt, &batch, &plen, &e) < 0)
        goto fail;
    size_t need = generate_positions(plen, o.n_tokens);
    if (need > cfg.max_seq_len) {
        err_set(&e, ERR_USAGE, "dump: a prompt of %zu plus %zu generated tokens needs %zu positions; model '%s' "
                "has max_seq_len %zu", plen, o.n_tokens, need, cfg.name, cfg.max_seq_len);
        goto fail;
    }
    /* extra memory: the cache reserved to max_seq_len, the logits, the gathered copy */
    size_t kv_bytes = 2 * cfg.n_layers * batch * cfg.max_seq_len * config_kv_dim(&cfg) * sizeof(float);
    size_t logit_bytes = o.n_tokens * batch * cfg.vocab * sizeof(float);
    if (cli_load_model(&o.mo, kv_bytes + logit_bytes, &m, &e) < 0)
        goto fail;

    KvGeometry geo = { .n_layers = cfg.n_layers, .n_seqs = batch, .n_kv_heads = cfg.n_kv_heads,
                       .head_dim = cfg.head_dim, .max_seq_len = cfg.max_seq_len };
    cache = kv_open(o.cache_spec, &geo, &e);
    if (!cache)
        goto fail;
    tokens = malloc(batch * o.n_tokens * sizeof(int));
    col.per_step = batch * cfg.vocab;
    col.cap = o.n_tokens;
    col.logits = malloc(logit_bytes);
    if (!tokens || !col.logits) {
        err_set(&e, ERR_RUNTIME, "out of memory for %zu tokens of logits", o.n_tokens);
        goto fail;
    }
    GenOptions go = { .n_generate = o.n_tokens };
    if (generate(&m, cache, prompt, batch, plen, &go, tokens, on_step, &col, &e) < 0)
        goto fail;

    if (dir_make(o.out, &e) < 0 || dump_weights(&d, &m, &e) < 0)
        goto fail;
    const size_t prompt_shape[2] = { batch, plen }, tok_shape[2] = { batch, o.n_tokens };
    const size_t logit_shape[3] = { col.steps, batch, cfg.vocab };
    if (dump_array(&d, "prompt.npy", NPY_I32, prompt_shape, 2, prompt, "prompt token ids", &e) < 0 ||
        dump_array(&d, "tokens.npy", NPY_I32, tok_shape, 2, tokens, "generated token ids (greedy)", &e) < 0 ||
        dump_array(&d, "logits.npy", NPY_F32, logit_shape, 3, col.logits,
                   "logits each generated token was chosen from: [step, seq, vocab]", &e) < 0 ||
        dump_cache(&d, cache, &cfg, batch, &cache_len, &e) < 0 ||
        write_manifest(&d, &m, &o, default_prompt, cache, prompt, tokens, batch, plen, col.steps, cache_len, &e) < 0)
        goto fail;

    printf("wrote %zu arrays and manifest.json to %s\n", d.n_written, o.out);
    printf("model %s (%s); cache %s; prompt %zu x %zu; %zu tokens generated; cache length %zu\n", cfg.name,
           m.source, cache->spec, batch, plen, o.n_tokens, cache_len);
    printf("tokens (seq 0):");
    for (size_t i = 0; i < o.n_tokens; i++)
        printf(" %d", tokens[i]);
    printf("\nload: python3 -c \"import numpy as np; print(np.load('%s/logits.npy').shape)\"\n", o.out);
    goto done;

fail:
    code = cli_fail(&e);
done:
    json_decref(d.files);
    kv_free(cache);
    free(col.logits);
    free(tokens);
    free(prompt);
    if (m.arena)
        model_free(&m);
    return code;
}
