#include "model/config.h"

#include <dirent.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "util/escape.h"
#include "util/files.h"
#include "util/parse.h"

typedef enum { K_SIZE, K_SIZE0, K_DOUBLE, K_U64, K_STR, K_BOOL, K_ATTN, K_SINK, K_ARCH, K_TOKEN } KeyType;

typedef struct {
    const char *key;
    KeyType type;
    size_t offset;
} KeyDef;

#define KEY(name, type) { #name, type, offsetof(Config, name) }
static const KeyDef keys[] = {
    KEY(name, K_STR),          KEY(weights, K_STR),
    KEY(tokenizer, K_STR),
    KEY(d_model, K_SIZE),      KEY(n_layers, K_SIZE),
    KEY(n_heads, K_SIZE),      KEY(n_kv_heads, K_SIZE),
    KEY(head_dim, K_SIZE),     KEY(ffn_dim, K_SIZE),
    KEY(vocab, K_SIZE),        KEY(max_seq_len, K_SIZE),
    KEY(rope_theta, K_DOUBLE), KEY(norm_eps, K_DOUBLE),
    KEY(seed, K_U64),          KEY(sliding_window, K_SIZE0),
    KEY(shared_layers, K_BOOL), KEY(attention, K_ATTN),
    KEY(kv_lora_rank, K_SIZE0), KEY(qk_rope_dim, K_SIZE0),
    KEY(qk_nope_dim, K_SIZE0), KEY(v_head_dim, K_SIZE0),
    KEY(architecture, K_ARCH), KEY(encoder_layers, K_SIZE0),
    KEY(src_len, K_SIZE0),     KEY(bos_token, K_TOKEN),
    KEY(eos_token, K_TOKEN),   KEY(add_bos, K_BOOL),
    KEY(attn_sink, K_SINK),
};
#undef KEY

void config_defaults(Config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->weights, sizeof c->weights, "synthetic");
    c->rope_theta = 10000.0;
    c->norm_eps = 1e-5;
    c->seed = 42;
    c->attention = ATTN_GQA;
    c->architecture = ARCH_DECODER;
    c->bos_token = 0;
    c->eos_token = -1;
}

static void key_names(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", keys[i].key);
}

int config_set(Config *c, const char *key, const char *value, Err *e)
{
    const KeyDef *k = NULL;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(keys[i].key, key) == 0)
            k = &keys[i];
    if (!k) {
        char names[512];
        key_names(names, sizeof names);
        return err_set(e, ERR_USAGE, "unknown key '%s' (keys: %s)", key, names);
    }
    void *field = (char *)c + k->offset;
    switch (k->type) {
    case K_SIZE:
        return parse_size(value, key, field, e);
    case K_SIZE0:
        return parse_size0(value, key, field, e);
    case K_DOUBLE:
        return parse_double(value, key, field, e);
    case K_U64: {
        unsigned long long v;
        if (parse_u64(value, key, &v, e) < 0)
            return -1;
        *(uint64_t *)field = v;
        return 0;
    }
    case K_STR: {
        size_t cap = k->offset == offsetof(Config, name) ? sizeof c->name : sizeof c->weights;
        if (strlen(value) == 0 || strlen(value) >= cap)
            return err_set(e, ERR_USAGE, "%s: '%s' must be 1 to %zu characters", key, value, cap - 1);
        if (k->offset == offsetof(Config, name)) /* printed on stdout: a terminal's control bytes as \xNN */
            escape_controls(field, cap, value);
        else
            memcpy(field, value, strlen(value) + 1);
        return 0;
    }
    case K_BOOL:
        if (strcmp(value, "1") == 0 || strcasecmp(value, "true") == 0 || strcasecmp(value, "yes") == 0)
            *(int *)field = 1;
        else if (strcmp(value, "0") == 0 || strcasecmp(value, "false") == 0 || strcasecmp(value, "no") == 0)
            *(int *)field = 0;
        else
            return err_set(e, ERR_USAGE, "%s: '%s' is not 0/1, true/false or yes/no", key, value);
        return 0;
    case K_ATTN:
        if (strcmp(value, "gqa") == 0 || strcmp(value, "mha") == 0)
            c->attention = ATTN_GQA;
        else if (strcmp(value, "mla") == 0)
            c->attention = ATTN_MLA;
        else
            return err_set(e, ERR_USAGE, "attention: '%s' is not one of gqa, mha, mla", value);
        return 0;
    case K_SINK:
        if (strcmp(value, "none") == 0)
            c->attn_sink = SINK_NONE;
        else if (strcmp(value, "learned") == 0)
            c->attn_sink = SINK_LEARNED;
        else
            return err_set(e, ERR_USAGE, "attn_sink: '%s' is not one of none, learned", value);
        return 0;
    case K_ARCH:
        if (strcmp(value, "decoder") == 0)
            c->architecture = ARCH_DECODER;
        else if (strcmp(value, "encdec") == 0)
            c->architecture = ARCH_ENCDEC;
        else
            return err_set(e, ERR_USAGE, "architecture: '%s' is not one of decoder, encdec", value);
        return 0;
    case K_TOKEN: {
        size_t v;
        if (strcmp(value, "none") == 0) {
            *(int *)field = -1;
            return 0;
        }
        if (parse_size0(value, key, &v, e) < 0)
            return err_wrap(e, "%s: a token id or none", key);
        if (v > ((size_t)1 << 24))
            return err_set(e, ERR_USAGE, "%s: token id %zu is beyond kvscope's limit of %zu", key, v,
                           (size_t)1 << 24);
        *(int *)field = (int)v;
        return 0;
    }
    }
    return err_set(e, ERR_RUNTIME, "config key '%s' has no type", key);
}

/* --- data directory ----------------------------------------------------- */

static int file_exists(const char *path)
{
    return access(path, R_OK) == 0;
}

int config_data_path(const char *rel, char *out, size_t cap)
{
    return files_find("KVSCOPE_DATA", "data", rel, out, cap);
}

void config_list(char *buf, size_t cap)
{
    char dir[PATH_MAX];
    buf[0] = '\0';
    if (config_data_path("models", dir, sizeof dir) == 0)
        files_list(dir, ".ini", buf, cap);
}

/* --- loading ------------------------------------------------------------ */

typedef struct {
    Config *c;
    Err *e;
    int failed;
} LoadCtx;

static int on_ini_value(void *user, const char *section, const char *key, const char *value)
{
    LoadCtx *ctx = user;
    (void)section; /* one flat namespace: sections only group keys for readers */
    if (ctx->failed)
        return 0;
    if (config_set(ctx->c, key, value, ctx->e) < 0) {
        ctx->failed = 1;
        return 0;
    }
    return 1;
}

int config_load(Config *c, const char *name, Err *e)
{
    char path[PATH_MAX];
    int is_file = strchr(name, '/') || (strlen(name) > 4 && strcmp(name + strlen(name) - 4, ".ini") == 0);
    if (is_file) {
        snprintf(path, sizeof path, "%s", name);
        if (!file_exists(path))
            return err_set(e, ERR_RUNTIME, "model file '%s' cannot be read", name);
    } else {
        char rel[128];
        if (strlen(name) > 64)
            return err_set(e, ERR_USAGE, "unknown model '%.64s...'", name);
        snprintf(rel, sizeof rel, "models/%s.ini", name);
        if (config_data_path(rel, path, sizeof path) < 0) {
            char list[1024];
            config_list(list, sizeof list);
            return err_set(e, ERR_USAGE, "unknown model '%s' (models: %s)", name,
                           list[0] ? list : "none found; is KVSCOPE_DATA right?");
        }
    }
    config_defaults(c);
    /* the file's base name is the model's name unless the file says otherwise */
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(c->name, sizeof c->name, "%.*s", (int)(strlen(base) > 4 ? strlen(base) - 4 : strlen(base)), base);

    if (files_check_input(path, e) < 0) /* a FIFO or a folder: refused, not waited on */
        return e && e->kind == ERR_USAGE ? -1 : err_set(e, ERR_RUNTIME, "cannot read model file '%s'", path);
    LoadCtx ctx = { c, e, 0 };
    int line = ini_parse(path, on_ini_value, &ctx);
    if (line < 0)
        return err_set(e, ERR_RUNTIME, "cannot read model file '%s'", path);
    if (line > 0) {
        if (ctx.failed)
            return err_wrap(e, "%s line %d", base, line);
        return err_set(e, ERR_USAGE, "%s line %d: malformed line (expected key = value)", base, line);
    }
    return 0;
}

/* --- validation --------------------------------------------------------- */

/* The keys of an encoder-decoder, and their absence in a decoder-only model. */
static int config_validate_encdec(const Config *c, Err *e)
{
    if (c->architecture == ARCH_DECODER) {
        if (c->encoder_layers || c->src_len)
            return err_set(e, ERR_USAGE, "model '%s' is decoder-only: encoder_layers and src_len apply to "
                           "architecture = encdec", c->name);
        if (c->add_bos && (c->bos_token < 0 || (size_t)c->bos_token >= c->vocab))
            return err_set(e, ERR_USAGE, "model '%s': add_bos with bos_token %d outside the vocabulary 0..%zu",
                           c->name, c->bos_token, c->vocab - 1);
        return 0;
    }
    if (c->add_bos)
        return err_set(e, ERR_USAGE, "model '%s': add_bos applies to a decoder (an encoder-decoder's target "
                       "always starts with bos_token)", c->name);
    if (c->encoder_layers == 0 || c->src_len == 0)
        return err_set(e, ERR_USAGE, "model '%s': an encoder-decoder needs encoder_layers and src_len (at least 1)",
                       c->name);
    if (c->encoder_layers > 4096 || c->src_len > ((size_t)1 << 24))
        return err_set(e, ERR_USAGE, "model '%s': encoder_layers = %zu, src_len = %zu is beyond kvscope's limits "
                       "(4096, %zu)", c->name, c->encoder_layers, c->src_len, (size_t)1 << 24);
    if (c->attention != ATTN_GQA || c->shared_layers)
        return err_set(e, ERR_USAGE, "model '%s': an encoder-decoder runs GQA/MHA attention with its own weights "
                       "per layer (no MLA, no shared_layers)", c->name);
    if (c->bos_token < 0 || (size_t)c->bos_token >= c->vocab)
        return err_set(e, ERR_USAGE, "model '%s': bos_token %d is outside the vocabulary 0..%zu", c->name,
                       c->bos_token, c->vocab - 1);
    if (c->eos_token >= 0 && (size_t)c->eos_token >= c->vocab)
        return err_set(e, ERR_USAGE, "model '%s': eos_token %d is outside the vocabulary 0..%zu", c->name,
                       c->eos_token, c->vocab - 1);
    if (c->eos_token == c->bos_token)
        return err_set(e, ERR_USAGE, "model '%s': eos_token and bos_token are both %d", c->name, c->bos_token);
    return 0;
}

size_t config_q_dim(const Config *c) { return c->n_heads * c->head_dim; }
size_t config_kv_dim(const Config *c) { return c->n_kv_heads * c->head_dim; }

int config_validate(const Config *c, Err *e)
{
    const struct { const char *key; size_t v; } need[] = {
        { "d_model", c->d_model },   { "n_layers", c->n_layers }, { "n_heads", c->n_heads },
        { "n_kv_heads", c->n_kv_heads }, { "head_dim", c->head_dim }, { "ffn_dim", c->ffn_dim },
        { "vocab", c->vocab },       { "max_seq_len", c->max_seq_len },
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (need[i].v == 0)
            return err_set(e, ERR_USAGE, "model '%s': %s must be set and at least 1", c->name, need[i].key);
        if (need[i].v > ((size_t)1 << 24))
            return err_set(e, ERR_USAGE, "model '%s': %s = %zu is beyond kvscope's limit of %zu",
                           c->name, need[i].key, need[i].v, (size_t)1 << 24);
    }
    if (c->n_heads % c->n_kv_heads != 0)
        return err_set(e, ERR_USAGE, "model '%s': n_heads (%zu) is not a multiple of n_kv_heads (%zu)",
                       c->name, c->n_heads, c->n_kv_heads);
    if (c->n_heads / c->n_kv_heads > ATTEND_MAX_GROUP)
        return err_set(e, ERR_USAGE, "model '%s': %zu query heads per KV head; kvscope serves at most %d",
                       c->name, c->n_heads / c->n_kv_heads, ATTEND_MAX_GROUP);
    if (c->head_dim % 2 != 0)
        return err_set(e, ERR_USAGE, "model '%s': head_dim (%zu) must be even (RoPE rotates pairs)",
                       c->name, c->head_dim);
    if (c->rope_theta <= 1.0)
        return err_set(e, ERR_USAGE, "model '%s': rope_theta must be greater than 1", c->name);
    if (c->norm_eps <= 0.0 || c->norm_eps > 1.0)
        return err_set(e, ERR_USAGE, "model '%s': norm_eps must be in (0, 1]", c->name);
    if (c->attn_sink && (c->attention != ATTN_GQA || c->architecture != ARCH_DECODER))
        return err_set(e, ERR_USAGE, "model '%s': attn_sink = learned applies to a decoder with GQA/MHA attention, "
                       "not %s", c->name, c->attention != ATTN_GQA ? "MLA" : "an encoder-decoder");
    if (c->attention == ATTN_MLA && (c->kv_lora_rank == 0 || c->qk_rope_dim == 0))
        return err_set(e, ERR_USAGE, "model '%s': MLA needs kv_lora_rank and qk_rope_dim", c->name);
    return config_validate_encdec(c, e);
}
