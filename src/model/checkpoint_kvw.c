/* checkpoint_kvw.c: `--weights FILE.kvw`: a model from one of kvscope's own
 * weights files (ckpt/kvw.h). Its header holds the shape; the sidecar
 * FILE.kvw.json that `kvscope train` writes beside it names the model and
 * its tokenizer (model/checkpoint.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/kvw.h"
#include "model/checkpoint.h"

/* The sidecar's string member `key` into out [cap]; "" when there is no
 * sidecar, or no such member. */
static void sidecar_string(const char *path, const char *key, char *out, size_t cap)
{
    char side[sizeof ((Config *)0)->checkpoint + 8];
    snprintf(side, sizeof side, "%s.json", path);
    json_t *root = json_load_file(side, 0, NULL);
    const char *v = json_string_value(json_object_get(root, key));
    snprintf(out, cap, "%s", v ? v : "");
    json_decref(root);
}

/* A model whose sequences start with a fixed first token (add_bos): the
 * header cannot say so. The sidecar's "bos_token" does (train writes it);
 * a sidecar written before it did names a model whose .ini, when it has
 * this header's shape and tokenizer, says so instead. Without it a run or
 * an export of the weights would start prompts without that token, unlike
 * the text the model learnt from. */
static int kvw_first_token(Config *cfg, const char *path, Err *e)
{
    char side[sizeof cfg->checkpoint + 8];
    snprintf(side, sizeof side, "%s.json", path);
    json_t *root = json_load_file(side, 0, NULL);
    json_t *bos = json_object_get(root, "bos_token");
    const json_int_t id = json_is_integer(bos) ? json_integer_value(bos) : -1;
    const int given = bos != NULL;
    json_decref(root);
    if (given) {
        if (id < 0 || (size_t)id >= cfg->vocab)
            return err_set(e, ERR_USAGE, "%s: bos_token is not an id of the model's vocabulary 0..%zu", side,
                           cfg->vocab - 1);
        cfg->add_bos = 1;
        cfg->bos_token = (int)id;
        return 0;
    }
    Config named;
    Err quiet = { 0 };
    if (!cfg->name[0] || strchr(cfg->name, '/') || config_load(&named, cfg->name, &quiet) < 0)
        return 0;
    if (named.add_bos && named.d_model == cfg->d_model && named.n_layers == cfg->n_layers &&
        named.n_heads == cfg->n_heads && named.n_kv_heads == cfg->n_kv_heads && named.head_dim == cfg->head_dim &&
        named.ffn_dim == cfg->ffn_dim && named.vocab == cfg->vocab && strcmp(named.tokenizer, cfg->tokenizer) == 0) {
        cfg->add_bos = 1;
        cfg->bos_token = named.bos_token;
    }
    return 0;
}

/* A file with learnt sink logits (layer0.attn_sink, weights_kvw.c) is a
 * model with attn_sink = learned: the header records the shape only. */
static int kvw_sink_probe(Config *cfg, const char *path, const KvwShape *s, Err *e)
{
    float *buf = malloc((s->n_heads ? s->n_heads : 1) * sizeof *buf);
    if (!buf)
        return err_set(e, ERR_RUNTIME, "out of memory");
    KvwTensor probe = { "layer0.attn_sink", KVW_F32, 1, s->n_heads, buf };
    int rc = kvw_read(path, s, &probe, 1, 1, e);
    free(buf);
    if (rc == 0 && probe.rows)
        cfg->attn_sink = SINK_LEARNED;
    return rc;
}

int config_from_kvw(Config *cfg, const char *path, Err *e)
{
    config_defaults(cfg);
    if (strlen(path) >= sizeof cfg->checkpoint)
        return err_set(e, ERR_USAGE, "--weights: a path of %zu bytes is too long (at most %zu)", strlen(path),
                       sizeof cfg->checkpoint - 1);
    KvwShape s;
    if (kvw_read_shape(path, &s, e) < 0)
        return -1;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const size_t stem = strlen(base) > 4 && strcmp(base + strlen(base) - 4, ".kvw") == 0 ? strlen(base) - 4
                                                                                          : strlen(base);
    sidecar_string(path, "model", cfg->name, sizeof cfg->name);
    if (!cfg->name[0])
        snprintf(cfg->name, sizeof cfg->name, "%.*s", (int)stem, base);
    snprintf(cfg->weights, sizeof cfg->weights, "%s", base);
    snprintf(cfg->checkpoint, sizeof cfg->checkpoint, "%s", path);
    cfg->d_model = s.d_model;
    cfg->n_layers = s.n_layers;
    cfg->n_heads = s.n_heads;
    cfg->n_kv_heads = s.n_kv_heads;
    cfg->head_dim = s.head_dim;
    cfg->ffn_dim = s.ffn_dim;
    cfg->vocab = s.vocab;
    cfg->max_seq_len = s.max_seq_len;
    cfg->rope_theta = s.rope_theta;
    cfg->norm_eps = s.norm_eps;
    if (kvw_sink_probe(cfg, path, &s, e) < 0)
        return -1;
    sidecar_string(path, "tokenizer", cfg->tokenizer, sizeof cfg->tokenizer);
    if (!cfg->tokenizer[0])
        snprintf(cfg->tokenizer_note, sizeof cfg->tokenizer_note, "no %.32s.json names its tokenizer (--model NAME "
                 "--set weights=FILE gives NAME's)", base);
    return cfg->tokenizer[0] ? kvw_first_token(cfg, path, e) : 0;
}
