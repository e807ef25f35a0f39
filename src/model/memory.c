#include "model/memory.h"

#include <stdint.h>

KvShape memory_shape(const Config *c)
{
    KvShape s = { 0 };
    if (c->attention == ATTN_MLA) {
        /* the latent row: c_kv (kv_lora_rank) then the shared RoPE key */
        s.kind = KV_SHAPE_MLA_LATENT;
        s.k_rows = 1;
        s.k_len = c->kv_lora_rank + c->qk_rope_dim;
        return s;
    }
    s.kind = KV_SHAPE_GQA;
    s.k_rows = s.v_rows = c->n_kv_heads;
    s.k_len = s.v_len = c->head_dim;
    return s;
}

int memory_shape_reference(const Config *c, KvShape *out)
{
    KvShape s = { 0 };
    if (c->attention == ATTN_MLA) {
        if (c->v_head_dim == 0)
            return -1; /* the config does not say what the latent stands for */
        s.kind = KV_SHAPE_MLA_DECOMPRESSED;
        s.k_rows = s.v_rows = c->n_heads;
        s.k_len = c->qk_nope_dim + c->qk_rope_dim;
        s.v_len = c->v_head_dim;
    } else {
        if (c->n_kv_heads == c->n_heads)
            return -1; /* already MHA */
        s.kind = KV_SHAPE_MHA;
        s.k_rows = s.v_rows = c->n_heads;
        s.k_len = s.v_len = c->head_dim;
    }
    *out = s;
    return 0;
}

size_t memory_shape_values(const KvShape *s)
{
    return s->k_rows * s->k_len + s->v_rows * s->v_len;
}

size_t memory_token_layer_bytes(const KvShape *s, Format f)
{
    size_t k = s->k_rows ? s->k_rows * format_row_bytes(f, s->k_len) : 0;
    size_t v = s->v_rows ? s->v_rows * format_row_bytes(f, s->v_len) : 0;
    return k + v;
}

/* a * b into *out; -1 when it would not fit in a size_t */
static int mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

int memory_bytes(const Config *c, const KvShape *s, Format f, size_t context, size_t batch,
                 KvBytes *out, Err *e)
{
    KvBytes b = { 0 };
    size_t seq_tokens; /* context x batch: token slots across the batch */
    b.token_layer = memory_token_layer_bytes(s, f);
    if (mul(b.token_layer, c->n_layers, &b.token) < 0 || mul(context, batch, &seq_tokens) < 0 ||
        mul(b.token_layer, seq_tokens, &b.layer) < 0 || mul(b.token, seq_tokens, &b.total) < 0)
        return err_set(e, ERR_USAGE, "model '%s': the cache of %zu tokens x %zu sequences is too large "
                       "to count in bytes", c->name, context, batch);
    *out = b;
    return 0;
}

size_t memory_cached_positions(const Config *c, size_t context)
{
    if (c->sliding_window && c->sliding_window < context)
        return c->sliding_window;
    return context;
}
