/* weights_kvw.c: a decoder's weights as named tensors, and reading them
 * from a kvscope weights file (ckpt/kvw.h); trained models ship so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

KvwShape model_kvw_shape(const Config *c)
{
    return (KvwShape){ (uint32_t)c->d_model, (uint32_t)c->n_layers, (uint32_t)c->n_heads, (uint32_t)c->n_kv_heads,
                       (uint32_t)c->head_dim, (uint32_t)c->ffn_dim, (uint32_t)c->vocab, (uint32_t)c->max_seq_len,
                       c->rope_theta, c->norm_eps };
}

static size_t add(KvwTensor *t, size_t n, size_t cap, const char *name, float *data, size_t rows, size_t cols,
                  uint32_t dtype)
{
    if (n < cap) {
        t[n] = (KvwTensor){ .dtype = dtype, .rows = (uint32_t)rows, .cols = (uint32_t)cols, .data = data };
        snprintf(t[n].name, sizeof t[n].name, "%s", name);
    }
    return n + 1;
}

size_t model_tensors(const Model *m, KvwTensor *t, size_t cap, uint32_t dtype)
{
    const Config *c = &m->cfg;
    const size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim;
    size_t n = add(t, 0, cap, "embed", m->embed, c->vocab, d, dtype);
    for (size_t l = 0; l < (c->shared_layers ? 1 : c->n_layers); l++) {
        const LayerWeights *w = &m->layers[l];
        char name[48];
#define TENSOR(field, rows, cols, type)                                       \
    snprintf(name, sizeof name, "layer%zu.%s", l, #field);                   \
    n = add(t, n, cap, name, w->field, rows, cols, type)
        TENSOR(attn_norm, 1, d, KVW_F32); /* gains stay f32: they scale every value */
        TENSOR(wq, q, d, dtype);
        TENSOR(wk, kv, d, dtype);
        TENSOR(wv, kv, d, dtype);
        TENSOR(wo, d, q, dtype);
        TENSOR(ffn_norm, 1, d, KVW_F32);
        TENSOR(w_gate, f, d, dtype);
        TENSOR(w_up, f, d, dtype);
        TENSOR(w_down, d, f, dtype);
#undef TENSOR
    }
    n = add(t, n, cap, "final_norm", m->final_norm, 1, d, KVW_F32);
    n = add(t, n, cap, "unembed", m->unembed, c->vocab, d, dtype);
    for (size_t l = 0; c->attn_sink && l < (c->shared_layers ? 1 : c->n_layers); l++) { /* after, as in the arena */
        char name[48];
        snprintf(name, sizeof name, "layer%zu.attn_sink", l);
        n = add(t, n, cap, name, m->layers[l].attn_sink, 1, c->n_heads, KVW_F32); /* logits: f32 as the gains */
    }
    return n;
}

int weights_load_kvw(Model *m, const char *path, Err *e)
{
    const Config *c = &m->cfg;
    if (c->architecture != ARCH_DECODER || c->attention != ATTN_GQA)
        return err_set(e, ERR_USAGE, "model '%s': a weights file holds decoder-only GQA models", c->name);
    KvwTensor t[4 + 10 * 256];
    size_t n = model_tensors(m, t, sizeof t / sizeof t[0], KVW_F32);
    if (n > sizeof t / sizeof t[0])
        return err_set(e, ERR_USAGE, "model '%s': too many layers for a weights file", c->name);
    KvwShape shape = model_kvw_shape(c);
    if (kvw_read(path, &shape, t, n, 0, e) < 0)
        return -1;
    if (c->attn_sink)
        return 0;
    float *probe_data = malloc(c->n_heads * sizeof *probe_data); /* sinks the file holds would go unread */
    if (!probe_data)
        return err_set(e, ERR_RUNTIME, "out of memory");
    KvwTensor probe = { "layer0.attn_sink", KVW_F32, 1, (uint32_t)c->n_heads, probe_data };
    Err pe = { 0 };
    const int rc = kvw_read(path, &shape, &probe, 1, 1, &pe);
    free(probe_data);
    if (rc < 0 || probe.rows) /* there, of this shape or another */
        return err_set(e, ERR_USAGE, "'%s' holds learnt attention sinks; model '%s' says attn_sink = none (set "
                       "attn_sink = learned)", path, c->name);
    return 0;
}
