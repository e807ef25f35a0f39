/* dump_manifest.c: manifest.json of `kvscope dump`. */
#include "report/dump_manifest.h"
#include "util/version.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"

#define DUMP_FORMAT "kvscope-dump 1"

/* rows x cols ids as rows of arrays: [[0, 1, 2], ...]. */
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

/* The config as run, every key that shapes the forward pass. */
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

/* The conventions of the forward pass, in the order the manifest lists
 * them; "layers" depends on the config and is written by layers_json. */
static const struct {
    const char *key, *text;
} conventions[] = {
    { "arrays", "little-endian, C order; float32 '<f4', token ids int32 '<i4'" },
    { "matrices", "row-major [out, in]: y = W @ x, one dot product per output" },
    { "layers", NULL },
    { "block", "x = embed[token]; per layer: x += wo @ attn(rmsnorm(x, attn_norm)); "
               "x += w_down @ (silu(w_gate @ h) * (w_up @ h)) with h = rmsnorm(x, ffn_norm); "
               "logits = unembed @ rmsnorm(x, final_norm)" },
    { "rmsnorm", "y = x / sqrt(mean(x^2) + norm_eps) * gain" },
    { "rope", "per head, pairs (2i, 2i+1) rotated by angle pos * rope_theta^(-2i/head_dim): "
              "(a, b) -> (a cos - b sin, a sin + b cos); applied to q and k, never to v" },
    { "attention", "causal; scores q.k / sqrt(head_dim), softmax over positions j <= pos (and pos - sliding_window "
                   "< j when the config sets a window); query head h reads KV head "
                   "h * n_kv_heads / n_heads (GQA); heads concatenated in order before wo" },
    { "silu", "silu(g) = g / (1 + exp(-g))" },
    { "cache", "cache.layerL.k/v: [n_seqs, n_kv_heads, len, head_dim], row p is position p; K stored after RoPE, "
               "V without; len = prompt_len + tokens - 1 (the last token is never fed back); rows stored in another "
               "format are decoded to float32 here, as attention reads them" },
    { "cache_storage", "per layer, K and V: segments, runs of positions [p0, p1) stored in one format; file: "
                       "uint8 [n_seqs, n_kv_heads, p1 - p0, row_bytes], each row ceil(head_dim / block_values) "
                       "blocks of block_bytes bytes then row_extra bytes (the formats' layouts: "
                       "src/kernels/format.h); a float32 side's file is cache.layerL.k/v itself; per-channel "
                       "keys (u4, u2) add chan_file: float16 [n_seqs, n_kv_heads, groups, 2 * head_dim], each "
                       "group of group_rows rows' scales then minimums, key = scale * code + min" },
    { "logits", "logits[s, b] are the last-position logits of pass s for sequence b; greedy: tokens[b, s] = "
                "argmax(logits[s, b]); pass 0 is the prefill over the prompt, pass s > 0 feeds tokens[b, s-1] "
                "at position prompt_len + s - 1" },
};

static json_t *layers_json(const Config *c)
{
    if (c->shared_layers)
        return json_sprintf("shared_layers: only layer0.*.npy is written; all %zu layers use those weights",
                            c->n_layers);
    return json_sprintf("one set of weights per layer: layer0 .. layer%zu", c->n_layers - 1);
}

static json_t *conventions_json(const Config *c)
{
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof conventions / sizeof conventions[0]; i++)
        json_object_set_new(o, conventions[i].key,
                            conventions[i].text ? json_string(conventions[i].text) : layers_json(c));
    return o;
}

/* Where the weights came from; the seed only when it made them. */
static json_t *weights_json(const Model *m)
{
    const Config *c = &m->cfg;
    json_t *w = json_object();
    json_object_set_new(w, "source", json_string(m->source));
    /* the seed makes synthetic weights; file weights do not use it */
    int synthetic = strcmp(c->weights, "synthetic") == 0;
    json_object_set_new(w, "seed", synthetic ? json_integer((json_int_t)c->seed) : json_null());
    json_object_set_new(w, "shared_layers", json_boolean(c->shared_layers));
    return w;
}

/* The run: cache, sampling, kernels, sizes, and the prompt and tokens. */
static json_t *run_json(const DumpRun *r)
{
    json_t *run = json_object();
    json_object_set_new(run, "cache", json_string(r->cache_spec));
    json_object_set_new(run, "sampling", json_string("greedy"));
    json_object_set_new(run, "kernels", json_string(r->model->kern->isa));
    json_object_set_new(run, "n_seqs", json_integer((json_int_t)r->n_seqs));
    json_object_set_new(run, "prompt_len", json_integer((json_int_t)r->prompt_len));
    json_object_set_new(run, "tokens_generated", json_integer((json_int_t)r->n_tokens));
    json_object_set_new(run, "steps", json_integer((json_int_t)r->steps));
    json_object_set_new(run, "cache_len", json_integer((json_int_t)r->cache_len));
    const PromptSource src = setup_prompt_source(r->po, &r->model->cfg);
    if (src != PROMPT_RANDOM_IDS)
        json_object_set_new(run, "prompt_source", json_string(r->default_prompt ? "the worked example's prompt (default)"
                                                                                : setup_prompt_source_name(src)));
    else {
        unsigned long long seed = r->po->seed ? r->po->seed : 1;
        json_object_set_new(run, "prompt_source", json_sprintf("random ids, gsl mt19937, prompt seed %llu", seed));
        json_object_set_new(run, "prompt_seed", json_integer((json_int_t)seed));
    }
    json_object_set_new(run, "prompt", ids_json(r->prompt, r->n_seqs, r->prompt_len));
    json_object_set_new(run, "tokens", ids_json(r->tokens, r->n_seqs, r->n_tokens));
    return run;
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

/* Write text and a newline to path: 0, or -1 with *err_no set to errno. */
static int write_text(const char *path, const char *text, int *err_no)
{
    FILE *f = fopen(path, "w");
    int bad = !f || fputs(text, f) == EOF || fputc('\n', f) == EOF;
    int saved = errno;
    if (f && fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    *err_no = saved;
    return bad ? -1 : 0;
}

int dump_write_manifest(const Dump *d, const DumpRun *run, Err *e)
{
    const Config *c = &run->model->cfg;
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string(DUMP_FORMAT));
    json_object_set_new(root, "kvscope_version", json_string(KVSCOPE_VERSION));
    json_object_set_new(root, "config", config_json(c));
    json_object_set_new(root, "weights", weights_json(run->model));
    json_object_set_new(root, "run", run_json(run));
    json_object_set(root, "files", d->files);
    if (d->storage)
        json_object_set(root, "cache_storage", d->storage);
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
    int saved, rc = write_text(path, text, &saved);
    free(text);
    if (rc < 0)
        return err_set(e, ERR_RUNTIME, "cannot write %s: %s", path, strerror(saved));
    return 0;
}
