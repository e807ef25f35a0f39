#include "sim/setup.h"

#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint.h"
#include "util/checked.h"
#include "util/files.h"
#include "util/human.h"
#include "util/parse.h"
#include "util/sysmem.h"

/* With --shared the vocabulary is capped so that a real model's shape fits:
 * a 128k vocabulary alone is 2 GB of f32 embeddings. */
#define SHARED_VOCAB_CAP 4096

int setup_load_config(const ModelOpts *mo, Config *cfg, Err *e)
{
    if (mo->weights && mo->shared)
        return err_set(e, ERR_USAGE, "--weights and --shared: a checkpoint brings its own layers");
    if (mo->weights ? config_from_checkpoint(cfg, mo->weights, e) < 0 : config_load(cfg, mo->model, e) < 0)
        return -1;
    cfg->allow_nan = mo->allow_nan;
    if (mo->shared) {
        cfg->shared_layers = 1;
        if (cfg->vocab > SHARED_VOCAB_CAP)
            cfg->vocab = SHARED_VOCAB_CAP;
    }
    for (size_t i = 0; i < mo->n_sets; i++) {
        char key[64];
        const char *eq = strchr(mo->sets[i], '=');
        size_t len = (size_t)(eq - mo->sets[i]);
        if (len == 0 || len >= sizeof key)
            return err_set(e, ERR_USAGE, "--set: '%s' has no usable key", mo->sets[i]);
        memcpy(key, mo->sets[i], len);
        key[len] = '\0';
        if (config_set(cfg, key, eq + 1, e) < 0)
            return err_wrap(e, "--set");
    }
    return config_validate(cfg, e);
}

int setup_check_memory(size_t bytes, const char *what, Err *e)
{
    size_t have = sysmem_physical_bytes();
    if (have && bytes > have) {
        char need_s[32], have_s[32];
        if (bytes == SIZE_MAX) /* a saturated product (util/checked.h): too large to count */
            snprintf(need_s, sizeof need_s, "more than 16 EiB");
        else
            human_bytes(need_s, sizeof need_s, (double)bytes);
        return err_set(e, ERR_USAGE, "%s needs %s but this machine has %s (try --shared, a smaller "
                       "--set max_seq_len, or `kvscope calc`)",
                       what, need_s, human_bytes(have_s, sizeof have_s, (double)have));
    }
    return 0;
}

int setup_model(const Config *cfg, const char *isa, size_t extra_bytes, Model *m, Err *e)
{
    const Kernels *k = kernels_select(isa, e);
    if (!k)
        return -1;
    char what[128];
    snprintf(what, sizeof what, "model '%s' (weights, cache and activations)", cfg->name);
    if (setup_check_memory(model_param_floats(cfg) * sizeof(float) + extra_bytes, what, e) < 0)
        return -1;
    return model_init(m, cfg, k, e);
}

int setup_load_model(const ModelOpts *mo, size_t extra_bytes, Model *m, Err *e)
{
    Config cfg;
    if (setup_load_config(mo, &cfg, e) < 0 || setup_model(&cfg, mo->isa, extra_bytes, m, e) < 0)
        return -1;
    setup_int_dot(m, mo);
    return 0;
}

void setup_int_dot(Model *m, const ModelOpts *mo)
{
    if (!mo->int_dot_set)
        return;
    m->int_dot = mo->int_dot;
    m->mat_dot = mo->int_dot;
}

/* [batch][len] token ids, or NULL with e set: a product that does not fit
 * is refused (ERR_USAGE), not wrapped into a small buffer. */
static int *alloc_prompts(size_t batch, size_t len, Err *e)
{
    size_t bytes;
    if (size_mul(batch, len, &bytes) < 0 || size_mul(bytes, sizeof(int), &bytes) < 0) {
        err_set(e, ERR_USAGE, "--batch %zu of %zu-token prompts: too many tokens to count", batch, len);
        return NULL;
    }
    int *ids = malloc(bytes ? bytes : 1);
    if (!ids)
        err_set(e, ERR_RUNTIME, "out of memory for %zu prompts of %zu tokens", batch, len);
    return ids;
}

int setup_check_batch(const Config *cfg, size_t batch, Err *e)
{
    KvGeometry g = config_kv_geometry(cfg, 1);
    size_t per_seq = size_mul3_sat(cfg->n_layers, cfg->max_seq_len, kv_row_pair_bytes(&g, FMT_F32, FMT_F32));
    size_t need = size_add_sat(size_mul_sat(model_param_floats(cfg), sizeof(float)), size_mul_sat(batch, per_seq));
    char what[160];
    snprintf(what, sizeof what, "--batch %zu (the weights, and a cache of %zu positions for each sequence)", batch,
             cfg->max_seq_len);
    return setup_check_memory(need, what, e);
}

/* "1,2,3" into ids (at most cap); each must be a whole number. */
static int parse_ids(const char *text, int *ids, size_t cap, size_t *n, Err *e)
{
    char buf[32];
    *n = 0;
    const char *p = text;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= sizeof buf)
            return err_set(e, ERR_USAGE, "--prompt-ids: '%s' is not a comma-separated list of token ids", text);
        memcpy(buf, p, len);
        buf[len] = '\0';
        size_t v;
        if (parse_size0(buf, "--prompt-ids token id", &v, e) < 0)
            return -1;
        if (v > 0x7fffffff)
            return err_set(e, ERR_USAGE, "--prompt-ids: token id %s is too large", buf);
        if (*n == cap)
            return err_set(e, ERR_USAGE, "--prompt-ids: more than %zu tokens", cap);
        ids[(*n)++] = (int)v;
        p += len + (comma ? 1 : 0);
        if (comma && !*p)
            return err_set(e, ERR_USAGE, "--prompt-ids: '%s' ends with a comma", text);
    }
    if (*n == 0)
        return err_set(e, ERR_USAGE, "--prompt-ids: no token ids given");
    return 0;
}

/* Explicit prompts: "a,b;c,d" -> rows of equal length. */
static int parse_prompts(const char *text, size_t want_batch, int **out, size_t *batch, size_t *len, Err *e)
{
    size_t n_rows = 1;
    for (const char *p = text; *p; p++)
        n_rows += (*p == ';');
    size_t cap = strlen(text) / 2 + 1;
    int *ids = alloc_prompts(n_rows, cap, e);
    if (!ids)
        return -1;
    char *copy = strdup(text);
    if (!copy) {
        free(ids);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    size_t row = 0, row_len = 0;
    char *save = NULL;
    for (char *part = strtok_r(copy, ";", &save); part; part = strtok_r(NULL, ";", &save), row++) {
        size_t n;
        if (parse_ids(part, ids + row * cap, cap, &n, e) < 0 ||
            (row > 0 && n != row_len && err_set(e, ERR_USAGE, "--prompt-ids: prompts differ in length (%zu vs %zu); "
                                                "a batch needs equal lengths", row_len, n) < 0)) {
            free(ids);
            free(copy);
            return -1;
        }
        row_len = n;
    }
    free(copy);
    if (row != n_rows) {
        free(ids);
        return err_set(e, ERR_USAGE, "--prompt-ids: '%s' has an empty prompt", text);
    }
    if (want_batch > 1 && n_rows > 1 && want_batch != n_rows) {
        free(ids);
        return err_set(e, ERR_USAGE, "--batch %zu but --prompt-ids holds %zu prompts", want_batch, n_rows);
    }
    *batch = n_rows > 1 ? n_rows : want_batch;
    *len = row_len;
    int *packed = alloc_prompts(*batch, row_len, e);
    if (!packed) {
        free(ids);
        return -1;
    }
    for (size_t b = 0; b < *batch; b++)
        memcpy(packed + b * row_len, ids + (n_rows > 1 ? b : 0) * cap, row_len * sizeof(int));
    free(ids);
    *out = packed;
    return 0;
}

int setup_tokenizer(const Config *cfg, Tokenizer **out, Err *e)
{
    *out = NULL;
    if (!cfg->tokenizer[0])
        return 0;
    if (strcmp(cfg->tokenizer, CHECKPOINT_TOKENIZER) == 0) {
        if (checkpoint_tokenizer(cfg, out, e) < 0)
            return -1;
    } else if (tokenizer_open(out, cfg->tokenizer, e) < 0)
        return err_wrap(e, "model '%s'", cfg->name);
    if (cfg->add_bos && tokenizer_set_bos(*out, cfg->bos_token, e) < 0) {
        tokenizer_free(*out);
        *out = NULL;
        return err_wrap(e, "model '%s'", cfg->name);
    }
    if (tokenizer_vocab(*out) > cfg->vocab) {
        err_set(e, ERR_USAGE, "model '%s': tokenizer '%s' makes %zu ids, more than its vocabulary of %zu", cfg->name,
                cfg->tokenizer, tokenizer_vocab(*out), cfg->vocab);
        tokenizer_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* The error for text given to a model without a tokenizer (what: "--prompt"). */
static int no_tokenizer(const Config *cfg, const char *what, Err *e)
{
    if (cfg->tokenizer_note[0])
        return err_set(e, ERR_USAGE, "%s: model '%s' runs on token ids: %s; give them with --prompt-ids, e.g. "
                       "--prompt-ids 1,2,3", what, cfg->name, cfg->tokenizer_note);
    return err_set(e, ERR_USAGE, "%s: model '%s' has no tokenizer: its tokens are ids (give them with --prompt-ids, "
                   "e.g. --prompt-ids 1,2,3)", what, cfg->name);
}

/* --prompt TEXT: the model's tokens for it, the same for every sequence. */
static int encode_prompt(const char *text, const Config *cfg, size_t batch, int **out, size_t *len, Err *e)
{
    Tokenizer *tok;
    if (setup_tokenizer(cfg, &tok, e) < 0)
        return -1;
    if (!tok)
        return no_tokenizer(cfg, "--prompt", e);
    int *ids;
    size_t n;
    int rc = strlen(text) == 0 ? err_set(e, ERR_USAGE, "--prompt: the text is empty")
                               : tokenizer_encode(tok, text, strlen(text), &ids, &n, e);
    tokenizer_free(tok);
    if (rc < 0)
        return -1;
    *out = alloc_prompts(batch, n, e);
    if (!*out) {
        free(ids);
        return -1;
    }
    for (size_t b = 0; b < batch; b++)
        memcpy(*out + b * n, ids, n * sizeof(int));
    free(ids);
    *len = n;
    return 0;
}

/* The prompt of a trained model when none is given: text, so a learner sees
 * words; from a held-out book (Ecclesiastes 1:2, data/README.md), so the
 * model has not seen it; repeating itself, so heads that look back at an
 * earlier copy have something to find. */
static const char default_text_prompt[] =
    "Vanity of vanities, saith the Preacher, vanity of vanities; all is vanity.";

static int has_trained_weights(const Config *cfg)
{
    return cfg->tokenizer[0] && cfg->weights[0] && strcmp(cfg->weights, "synthetic") != 0;
}

PromptSource setup_prompt_source(const PromptOpts *po, const Config *cfg)
{
    if (po->text)
        return PROMPT_TEXT;
    if (po->ids)
        return PROMPT_IDS;
    return !po->len && has_trained_weights(cfg) ? PROMPT_DEFAULT_TEXT : PROMPT_RANDOM_IDS;
}

const char *setup_prompt_source_name(PromptSource s)
{
    static const char *const names[] = { "given (--prompt)", "given (--prompt-ids)",
                                         "default text: Ecclesiastes 1:2, held out", "random ids, gsl mt19937" };
    return names[s];
}

int setup_make_prompt(const PromptOpts *po, const Config *cfg, int **out, size_t *batch, size_t *len, Err *e)
{
    size_t want_batch = po->batch ? po->batch : 1;
    *out = NULL;
    if (setup_check_batch(cfg, want_batch, e) < 0)
        return -1;
    if (setup_prompt_source(po, cfg) == PROMPT_DEFAULT_TEXT) {
        *batch = want_batch;
        return encode_prompt(default_text_prompt, cfg, want_batch, out, len, e);
    }
    if (po->text && po->ids)
        return err_set(e, ERR_USAGE, "--prompt and --prompt-ids exclude each other");
    if (po->text) {
        *batch = want_batch;
        return encode_prompt(po->text, cfg, want_batch, out, len, e);
    }
    if (po->ids) {
        if (parse_prompts(po->ids, want_batch, out, batch, len, e) < 0)
            return -1;
        for (size_t i = 0; i < *batch * *len; i++)
            if ((size_t)(*out)[i] >= cfg->vocab) {
                int bad_id = (*out)[i];
                free(*out);
                *out = NULL;
                return err_set(e, ERR_USAGE, "--prompt-ids: token id %d is outside model '%s''s vocabulary 0..%zu",
                               bad_id, cfg->name, cfg->vocab - 1);
            }
        return 0;
    }
    *batch = want_batch;
    *len = po->len ? po->len : 8;
    size_t most = po->max_len ? po->max_len : cfg->max_seq_len;
    if (most > SETUP_MAX_PROMPT)
        most = SETUP_MAX_PROMPT;
    if (*len > most)
        return most == cfg->max_seq_len
                   ? err_set(e, ERR_USAGE, "a prompt of %zu random ids (--prompt-len): model '%s' has max_seq_len "
                             "%zu", *len, cfg->name, cfg->max_seq_len)
                   : err_set(e, ERR_USAGE, "a prompt of %zu random ids (--prompt-len): kvscope draws at most %zu",
                             *len, most);
    char what[96];
    snprintf(what, sizeof what, "--batch %zu of %zu-token prompts", *batch, *len);
    if (setup_check_memory(size_mul3_sat(*batch, *len, sizeof(int)), what, e) < 0)
        return -1;
    if (!(*out = alloc_prompts(*batch, *len, e)))
        return -1;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) {
        free(*out);
        *out = NULL;
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    gsl_rng_set(rng, (unsigned long)(po->seed ? po->seed : 1));
    for (size_t i = 0; i < *batch * *len; i++)
        (*out)[i] = (int)gsl_rng_uniform_int(rng, cfg->vocab);
    gsl_rng_free(rng);
    return 0;
}

int setup_text_ids(const Config *cfg, const char *path, size_t max_bytes, int **ids, size_t **bytes, size_t *n,
                   size_t *text_len, char *tok_name, size_t cap, Err *e)
{
    *ids = NULL;
    if (bytes)
        *bytes = NULL;
    Tokenizer *tok;
    if (setup_tokenizer(cfg, &tok, e) < 0)
        return -1;
    if (!tok)
        return cfg->tokenizer_note[0]
                   ? err_set(e, ERR_USAGE, "model '%s' cannot read text: %s", cfg->name, cfg->tokenizer_note)
                   : err_set(e, ERR_USAGE, "model '%s' has no tokenizer: it cannot read text", cfg->name);
    if (tok_name)
        snprintf(tok_name, cap, "%s", tokenizer_name(tok));
    char *text;
    int rc = files_read_text(path, max_bytes, &text, text_len, e);
    if (rc == 0) {
        rc = tokenizer_encode(tok, text, *text_len, ids, n, e);
        free(text);
    }
    if (rc == 0 && bytes && !(*bytes = malloc((*n ? *n : 1) * sizeof **bytes)))
        rc = err_set(e, ERR_RUNTIME, "out of memory for %zu tokens", *n);
    for (size_t i = 0; rc == 0 && bytes && i < *n; i++)
        tokenizer_piece(tok, (*ids)[i], &(*bytes)[i]);
    tokenizer_free(tok);
    return rc;
}
