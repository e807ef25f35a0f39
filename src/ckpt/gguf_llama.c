/* gguf_llama.c: the `llama` architecture of a GGUF file: its shape from
 * the metadata (keys prefixed "llama."), its tensors by role. */
#include <stdio.h>
#include <string.h>

#include "ckpt/ckpt.h"

/* Larger sizes than these are refused as absurd before anything is sized
 * from them (every tensor is also checked against the file). */
#define MAX_CONTEXT ((uint64_t)1 << 24)
#define MAX_LAYERS 4096

/* A required (req = 1) or optional size from "llama.<key>"; 0 when missing. */
static int get_size(const GgufFile *g, const char *key, int req, size_t *out, Err *e)
{
    char full[96];
    snprintf(full, sizeof full, "llama.%s", key);
    uint64_t v = 0;
    int got = gguf_get_uint(g, full, &v, e);
    if (got < 0)
        return -1;
    if (!got) {
        *out = 0;
        return req ? err_set(e, ERR_USAGE, "metadata '%s' is missing", full) : 0;
    }
    if (v == 0 || v > SIZE_MAX / 2)
        return err_set(e, ERR_USAGE, "metadata '%s' is %llu", full, (unsigned long long)v);
    *out = (size_t)v;
    return 0;
}

static int get_double(const GgufFile *g, const char *key, double dflt, double *out, Err *e)
{
    char full[96];
    snprintf(full, sizeof full, "llama.%s", key);
    *out = dflt;
    if (gguf_get_float(g, full, out, e) < 0)
        return -1;
    if (!(*out > 0.0) || *out > 1e300)
        return err_set(e, ERR_USAGE, "metadata '%s' is %g; it must be positive", full, *out);
    return 0;
}

/* general.architecture must be llama; general.name, or fallback_name. */
static int llama_arch_name(const GgufFile *g, CkptShape *s, const char *fallback_name, Err *e)
{
    GgufStr arch, name;
    char buf[80];
    int got = gguf_get_str(g, "general.architecture", &arch, e);
    if (got < 0)
        return -1;
    if (!got)
        return err_set(e, ERR_USAGE, "metadata 'general.architecture' is missing");
    if (!gguf_str_eq(arch, "llama"))
        return err_set(e, ERR_USAGE, "architecture '%s'; kvscope runs 'llama' (LLaMA, Mistral-style GQA)",
                       gguf_str_print(arch, buf, sizeof buf));
    got = gguf_get_str(g, "general.name", &name, e);
    if (got < 0)
        return -1;
    if (got && name.len > 0)
        gguf_str_print(name, s->name, sizeof s->name);
    else
        snprintf(s->name, sizeof s->name, "%s", fallback_name);
    return 0;
}

/* The head size from key_length (else d_model / heads), checked against
 * what kvscope's attention and RoPE can run. */
static int llama_heads(const GgufFile *g, CkptShape *s, size_t key_len, size_t value_len, size_t rope_dim, Err *e)
{
    if (!s->n_kv_heads)
        s->n_kv_heads = s->n_heads; /* no key: multi-head attention */
    if (s->n_layers > MAX_LAYERS || s->context > MAX_CONTEXT)
        return err_set(e, ERR_USAGE, "metadata: %zu layers, context %zu: beyond kvscope's limits (%d, %llu)",
                       s->n_layers, s->context, MAX_LAYERS, (unsigned long long)MAX_CONTEXT);
    if (s->n_kv_heads > s->n_heads || s->n_heads % s->n_kv_heads != 0)
        return err_set(e, ERR_USAGE, "metadata: %zu KV heads do not divide %zu query heads", s->n_kv_heads,
                       s->n_heads);
    if (key_len) {
        s->head_dim = key_len;
    } else {
        if (s->d_model % s->n_heads != 0)
            return err_set(e, ERR_USAGE, "metadata: embedding_length %zu is not a multiple of head_count %zu",
                           s->d_model, s->n_heads);
        s->head_dim = s->d_model / s->n_heads;
    }
    if (value_len && value_len != s->head_dim)
        return err_set(e, ERR_USAGE, "metadata: value_length %zu differs from key_length %zu; kvscope needs them "
                       "equal", value_len, s->head_dim);
    if (rope_dim && rope_dim != s->head_dim)
        return err_set(e, ERR_USAGE, "metadata: RoPE rotates %zu of each head's %zu dimensions; kvscope rotates "
                       "whole heads", rope_dim, s->head_dim);
    if (s->head_dim % 2 != 0)
        return err_set(e, ERR_USAGE, "metadata: head size %zu is odd; RoPE rotates pairs", s->head_dim);
    GgufStr scaling;
    char buf[80];
    int got = gguf_get_str(g, "llama.rope.scaling.type", &scaling, e);
    if (got < 0)
        return -1;
    if (got && !gguf_str_eq(scaling, "none"))
        return err_set(e, ERR_USAGE, "metadata: RoPE scaling '%s' is not supported",
                       gguf_str_print(scaling, buf, sizeof buf));
    return 0;
}

/* The vocabulary: the tokenizer's token list, else vocab_size, else the
 * embedding's rows; tied when there is no output.weight. */
static int llama_vocab(const GgufFile *g, CkptShape *s, size_t vocab_meta, Err *e)
{
    GgufValueType elem;
    uint64_t n_tokens = 0;
    int got = gguf_get_array(g, "tokenizer.ggml.tokens", &elem, &n_tokens, e);
    if (got < 0)
        return -1;
    if (got && (elem != GGUF_STRING || n_tokens == 0))
        return err_set(e, ERR_USAGE, "metadata 'tokenizer.ggml.tokens' is an array of %llu %s, not of strings",
                       (unsigned long long)n_tokens, gguf_value_type_name(elem));
    const GgufTensor *emb = gguf_find_tensor(g, "token_embd.weight");
    s->vocab = got ? (size_t)n_tokens : vocab_meta ? vocab_meta : emb ? (size_t)emb->ne[1] : 0;
    if (got && vocab_meta && vocab_meta != n_tokens)
        return err_set(e, ERR_USAGE, "metadata: vocab_size %zu but the tokenizer lists %llu tokens", vocab_meta,
                       (unsigned long long)n_tokens);
    if (!s->vocab)
        return err_set(e, ERR_USAGE, "tensor 'token_embd.weight' is missing");
    s->tied = gguf_find_tensor(g, "output.weight") == NULL;
    return 0;
}

int gguf_llama_shape(Checkpoint *ck, const char *fallback_name, Err *e)
{
    const GgufFile *g = &ck->gguf;
    CkptShape *s = &ck->shape;
    memset(s, 0, sizeof *s);
    if (llama_arch_name(g, s, fallback_name, e) < 0)
        return -1;
    size_t key_len = 0, value_len = 0, rope_dim = 0, vocab_meta = 0;
    if (get_size(g, "block_count", 1, &s->n_layers, e) < 0 || get_size(g, "embedding_length", 1, &s->d_model, e) < 0 ||
        get_size(g, "feed_forward_length", 1, &s->ffn_dim, e) < 0 ||
        get_size(g, "attention.head_count", 1, &s->n_heads, e) < 0 ||
        get_size(g, "attention.head_count_kv", 0, &s->n_kv_heads, e) < 0 ||
        get_size(g, "context_length", 1, &s->context, e) < 0 ||
        get_size(g, "attention.key_length", 0, &key_len, e) < 0 ||
        get_size(g, "attention.value_length", 0, &value_len, e) < 0 ||
        get_size(g, "rope.dimension_count", 0, &rope_dim, e) < 0 || get_size(g, "vocab_size", 0, &vocab_meta, e) < 0 ||
        get_size(g, "attention.sliding_window", 0, &s->sliding_window, e) < 0 ||
        get_double(g, "rope.freq_base", 10000.0, &s->rope_theta, e) < 0 ||
        get_double(g, "attention.layer_norm_rms_epsilon", 1e-5, &s->norm_eps, e) < 0)
        return -1;
    if (llama_heads(g, s, key_len, value_len, rope_dim, e) < 0)
        return -1;
    return llama_vocab(g, s, vocab_meta, e);
}

int gguf_llama_tensor(const Checkpoint *ck, CkptRole r, size_t layer, CkptTensor *t, Err *e)
{
    if (r == CK_OUTPUT && ck->shape.tied)
        r = CK_EMBED;
    char name[GGUF_MAX_NAME];
    ckpt_gguf_name(r, layer, name, sizeof name);
    const GgufTensor *g = gguf_find_tensor(&ck->gguf, name);
    if (!g)
        return err_set(e, ERR_USAGE, "tensor '%s' is missing", name);
    size_t rows, cols;
    ckpt_role_dims(&ck->shape, r, &rows, &cols);
    if (g->ne[0] != cols || g->ne[1] != rows || g->ne[2] != 1 || g->ne[3] != 1)
        return err_set(e, ERR_USAGE, "tensor '%s' has dimensions %llu x %llu x %llu x %llu, the metadata implies "
                       "%zu x %zu", name, (unsigned long long)g->ne[0], (unsigned long long)g->ne[1],
                       (unsigned long long)g->ne[2], (unsigned long long)g->ne[3], cols, rows);
    *t = (CkptTensor){ .data = g->data, .fmt = g->fmt, .rows = rows, .cols = cols };
    snprintf(t->name, sizeof t->name, "%s", name);
    return 0;
}

/* 1 when name is one of the model's tensors. */
static int known(const CkptShape *s, GgufStr name)
{
    char want[GGUF_MAX_NAME];
    for (int r = 0; r < CK_ROLE_COUNT; r++) {
        if (!ckpt_role_per_layer((CkptRole)r)) {
            ckpt_gguf_name((CkptRole)r, 0, want, sizeof want);
            if (gguf_str_eq(name, want))
                return 1;
            continue;
        }
        /* blk.L.<role>.weight: read L from the name rather than try every layer */
        size_t l = 0, i = 4;
        if (name.len < 6 || memcmp(name.ptr, "blk.", 4) != 0)
            continue;
        while (i < name.len && i < 12 && name.ptr[i] >= '0' && name.ptr[i] <= '9')
            l = l * 10 + (size_t)(name.ptr[i++] - '0');
        if (i == 4 || l >= s->n_layers)
            continue;
        ckpt_gguf_name((CkptRole)r, l, want, sizeof want);
        if (gguf_str_eq(name, want))
            return 1;
    }
    return 0;
}

int gguf_llama_known_tensors(const Checkpoint *ck, Err *e)
{
    for (size_t i = 0; i < ck->gguf.n_tensors; i++)
        if (!known(&ck->shape, ck->gguf.tensors[i].name)) {
            char name[80];
            return err_set(e, ERR_USAGE, "tensor '%s' is not part of a %zu-layer llama model; kvscope does not "
                           "know what it does", gguf_str_print(ck->gguf.tensors[i].name, name, sizeof name),
                           ck->shape.n_layers);
        }
    return 0;
}
