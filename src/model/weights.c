#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint.h"
#include "model/mla_shape.h"
#include "model/model.h"

static size_t layer_floats(const Config *c)
{
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim;
    return 2 * d + q * d + 2 * kv * d + d * q + 3 * f * d;
}

/* One decoder layer's cross-attention: its norm and four projections. */
static size_t cross_floats(const Config *c)
{
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c);
    return d + q * d + 2 * kv * d + d * q;
}

/* One layer's MLA tensors (MlaWeights), in their draw order. */
static size_t mla_floats(const Config *c)
{
    size_t d = c->d_model, r = c->kv_lora_rank, p = c->qk_rope_dim, h = c->n_heads;
    return (r + p) * d + r + h * c->qk_nope_dim * r + h * c->v_head_dim * r + d * h * c->v_head_dim;
}

size_t model_param_floats(const Config *c)
{
    size_t stored_layers = c->shared_layers ? 1 : c->n_layers;
    size_t n = 2 * c->vocab * c->d_model + c->d_model + stored_layers * layer_floats(c);
    if (c->architecture == ARCH_ENCDEC)
        n += c->encoder_layers * layer_floats(c) + c->d_model + c->n_layers * cross_floats(c);
    if (c->attention == ATTN_MLA)
        n += stored_layers * mla_floats(c);
    if (c->attn_sink)
        n += stored_layers * c->n_heads;
    return n;
}

KvGeometry config_kv_geometry(const Config *c, size_t n_seqs)
{
    if (c->attention == ATTN_MLA) /* the latent row: c_kv then the shared RoPE key, no V */
        return (KvGeometry){ .n_layers = c->n_layers, .n_seqs = n_seqs, .n_kv_heads = 1,
                             .head_dim = mla_latent_dim(c), .max_seq_len = c->max_seq_len, .k_only = 1 };
    return (KvGeometry){ .n_layers = c->n_layers, .n_seqs = n_seqs, .n_kv_heads = c->n_kv_heads,
                         .head_dim = c->head_dim, .max_seq_len = c->max_seq_len, .rope_theta = c->rope_theta };
}

KvGeometry model_kv_geometry(const Model *m, size_t n_seqs)
{
    KvGeometry g = config_kv_geometry(&m->cfg, n_seqs);
    g.codec = m->kern->codec;
    return g;
}

const LayerWeights *model_layer(const Model *m, size_t l)
{
    return &m->layers[m->cfg.shared_layers ? 0 : l];
}

/* Hand out consecutive tensors of the arena, in a fixed order: the order is
 * part of what makes a seed reproducible. */
static float *take(float **cursor, size_t n)
{
    float *p = *cursor;
    *cursor += n;
    return p;
}

static void carve_layer(const Config *c, LayerWeights *w, float **cur)
{
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim;
    w->attn_norm = take(cur, d);
    w->wq = take(cur, q * d);
    w->wk = take(cur, kv * d);
    w->wv = take(cur, kv * d);
    w->wo = take(cur, d * q);
    w->ffn_norm = take(cur, d);
    w->w_gate = take(cur, f * d);
    w->w_up = take(cur, f * d);
    w->w_down = take(cur, d * f);
}

static void carve(Model *m)
{
    const Config *c = &m->cfg;
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c);
    float *cur = m->arena;
    m->embed = take(&cur, c->vocab * d);
    size_t n = c->shared_layers ? 1 : c->n_layers;
    for (size_t l = 0; l < n; l++)
        carve_layer(c, &m->layers[l], &cur);
    m->final_norm = take(&cur, d);
    m->unembed = take(&cur, c->vocab * d);
    if (c->attention == ATTN_MLA) /* after the decoder-only tensors (no MLA model is encoder-decoder) */
        for (size_t l = 0; l < n; l++) {
            MlaWeights *a = &m->mla[l];
            size_t r = c->kv_lora_rank, h = c->n_heads, dv = c->v_head_dim;
            a->w_dkv = take(&cur, (r + c->qk_rope_dim) * d);
            a->w_kr = a->w_dkv + r * d;
            a->kv_norm = take(&cur, r);
            a->w_uk = take(&cur, h * c->qk_nope_dim * r);
            a->w_uv = take(&cur, h * dv * r);
            a->w_o = take(&cur, d * h * dv);
        }
    if (c->attn_sink) /* last: a model without sinks keeps its layout (config: decoders with GQA only) */
        for (size_t l = 0; l < n; l++)
            m->layers[l].attn_sink = take(&cur, c->n_heads);
    if (c->architecture != ARCH_ENCDEC)
        return;
    for (size_t l = 0; l < c->encoder_layers; l++)
        carve_layer(c, &m->enc_layers[l], &cur);
    m->enc_norm = take(&cur, d);
    for (size_t l = 0; l < c->n_layers; l++) {
        CrossWeights *x = &m->cross[l];
        x->norm = take(&cur, d);
        x->wq = take(&cur, q * d);
        x->wk = take(&cur, kv * d);
        x->wv = take(&cur, kv * d);
        x->wo = take(&cur, d * q);
    }
}

static void fill_gaussian(gsl_rng *rng, float *x, size_t n, size_t fan_in)
{
    double sigma = 1.0 / sqrt((double)fan_in);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)gsl_ran_gaussian_ziggurat(rng, sigma);
}

static void fill_ones(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = 1.0f;
}

static void fill_layer(const Config *c, gsl_rng *rng, LayerWeights *w)
{
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim;
    fill_ones(w->attn_norm, d);
    fill_gaussian(rng, w->wq, q * d, d);
    fill_gaussian(rng, w->wk, kv * d, d);
    fill_gaussian(rng, w->wv, kv * d, d);
    fill_gaussian(rng, w->wo, d * q, q);
    fill_ones(w->ffn_norm, d);
    fill_gaussian(rng, w->w_gate, f * d, d);
    fill_gaussian(rng, w->w_up, f * d, d);
    fill_gaussian(rng, w->w_down, d * f, f);
}

static void fill_synthetic(Model *m)
{
    const Config *c = &m->cfg;
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)c->seed);
    fill_gaussian(rng, m->embed, c->vocab * d, 1); /* embeddings: unit variance */
    size_t n = c->shared_layers ? 1 : c->n_layers;
    for (size_t l = 0; l < n; l++)
        fill_layer(c, rng, &m->layers[l]);
    fill_ones(m->final_norm, d);
    fill_gaussian(rng, m->unembed, c->vocab * d, d);
    if (c->attention == ATTN_MLA) /* after the tensors every model draws: those keep their bits */
        for (size_t l = 0; l < n; l++) {
            MlaWeights *a = &m->mla[l];
            size_t r = c->kv_lora_rank, h = c->n_heads, dv = c->v_head_dim;
            fill_gaussian(rng, a->w_dkv, (r + c->qk_rope_dim) * d, d); /* W_dkv, then W_kr */
            fill_ones(a->kv_norm, r);
            fill_gaussian(rng, a->w_uk, h * c->qk_nope_dim * r, r);
            fill_gaussian(rng, a->w_uv, h * dv * r, r);
            fill_gaussian(rng, a->w_o, d * h * dv, h * dv);
        }
    /* learnt sinks start at 0 from the calloc'd arena, drawing nothing: the other tensors keep their bits */
    if (c->architecture == ARCH_ENCDEC) { /* after the decoder-only tensors: those keep their bits */
        for (size_t l = 0; l < c->encoder_layers; l++)
            fill_layer(c, rng, &m->enc_layers[l]);
        fill_ones(m->enc_norm, d);
        for (size_t l = 0; l < c->n_layers; l++) {
            CrossWeights *x = &m->cross[l];
            fill_ones(x->norm, d);
            fill_gaussian(rng, x->wq, q * d, d);
            fill_gaussian(rng, x->wk, kv * d, d);
            fill_gaussian(rng, x->wv, kv * d, d);
            fill_gaussian(rng, x->wo, d * q, q);
        }
    }
    snprintf(m->source, sizeof m->source, "synthetic: gsl %s, seed %llu", gsl_rng_name(rng),
             (unsigned long long)c->seed);
    gsl_rng_free(rng);
}

int model_alloc(Model *m, const Config *cfg, const Kernels *kern, Err *e)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->kern = kern;
    const int mla = cfg->attention == ATTN_MLA;
    if (mla && mla_check_config(cfg, e) < 0)
        return -1;
    m->mla_path = MLA_ABSORBED;
    m->mla_tiles = MLA_DEFAULT_TILES;
    const int encdec = cfg->architecture == ARCH_ENCDEC;
    if (encdec && strcmp(cfg->weights, "synthetic") != 0)
        return err_set(e, ERR_USAGE, "model '%s': an encoder-decoder takes synthetic weights only", cfg->name);
    m->arena_floats = model_param_floats(cfg);
    m->arena = calloc(m->arena_floats, sizeof(float));
    m->layers = calloc(cfg->shared_layers ? 1 : cfg->n_layers, sizeof *m->layers);
    if (encdec) {
        m->enc_layers = calloc(cfg->encoder_layers, sizeof *m->enc_layers);
        m->cross = calloc(cfg->n_layers, sizeof *m->cross);
    }
    if (mla)
        m->mla = calloc(cfg->shared_layers ? 1 : cfg->n_layers, sizeof *m->mla);
    if (!m->arena || !m->layers || (encdec && (!m->enc_layers || !m->cross)) || (mla && !m->mla)) {
        model_free(m);
        return err_set(e, ERR_RUNTIME, "out of memory for %zu MB of weights",
                       m->arena_floats * sizeof(float) >> 20);
    }
    carve(m);
    snprintf(m->source, sizeof m->source, "zeros");
    return 0;
}

int model_init(Model *m, const Config *cfg, const Kernels *kern, Err *e)
{
    const int kvw = cfg->checkpoint[0] && kvw_probe(cfg->checkpoint);
    if (cfg->checkpoint[0] && !kvw) /* --weights: a GGUF or llama2.c file (model/checkpoint.h) */
        return weights_load_checkpoint(m, cfg, kern, e);
    if (model_alloc(m, cfg, kern, e) < 0)
        return -1;
    if (kvw) { /* --weights FILE.kvw (config_from_kvw) */
        if (weights_load_kvw(m, cfg->checkpoint, e) < 0) {
            model_free(m);
            return -1;
        }
        snprintf(m->source, sizeof m->source, "file %s", cfg->weights);
        return 0;
    }
    if (strcmp(cfg->weights, "synthetic") == 0) {
        fill_synthetic(m);
        return 0;
    }
    char rel[128], path[PATH_MAX];
    snprintf(rel, sizeof rel, "weights/%s", cfg->weights);
    if (strchr(cfg->weights, '/')) /* a path of its own (--set weights=FILE) */
        snprintf(path, sizeof path, "%s", cfg->weights);
    else if (config_data_path(rel, path, sizeof path) < 0) {
        model_free(m);
        return err_set(e, ERR_RUNTIME, "model '%s': weights file '%s' not found in the data directory",
                       cfg->name, cfg->weights);
    }
    size_t wl = strlen(cfg->weights);
    int named_kvw = wl > 4 && strcmp(cfg->weights + wl - 4, ".kvw") == 0;
    if ((named_kvw ? weights_load_kvw(m, path, e) : weights_load_file(m, path, e)) < 0) {
        model_free(m);
        return err_wrap(e, "weights file '%s'", cfg->weights);
    }
    snprintf(m->source, sizeof m->source, strchr(cfg->weights, '/') ? "file %s" : "file data/weights/%s",
             cfg->weights);
    return 0;
}

/* The f32 pointer and the stored form of every matrix that can be stored. */
static size_t stored_pairs(Model *m, float ***f32, QuantMat **q, size_t cap)
{
    size_t n = 0, layers = m->cfg.shared_layers ? 1 : m->cfg.n_layers;
    for (size_t l = 0; l < layers && m->layers; l++) {
        LayerWeights *w = &m->layers[l];
        float **fs[] = { &w->wq, &w->wk, &w->wv, &w->wo, &w->w_gate, &w->w_up, &w->w_down };
        QuantMat *qs[] = { &w->q_wq, &w->q_wk, &w->q_wv, &w->q_wo, &w->q_gate, &w->q_up, &w->q_down };
        for (size_t i = 0; i < 7 && n < cap; i++, n++)
            f32[n] = fs[i], q[n] = qs[i];
    }
    if (n < cap)
        f32[n] = &m->unembed, q[n] = &m->q_unembed, n++;
    return n;
}

int model_has_stored(const Model *m)
{
    size_t layers = m->cfg.shared_layers ? 1 : m->cfg.n_layers;
    if (m->q_unembed.data)
        return 1;
    for (size_t l = 0; l < layers && m->layers; l++) {
        const LayerWeights *w = &m->layers[l];
        if (w->q_wq.data || w->q_wk.data || w->q_wv.data || w->q_wo.data || w->q_gate.data || w->q_up.data ||
            w->q_down.data)
            return 1;
    }
    return 0;
}

static int int_mat(const QuantMat *q)
{
    return q->data && (q->fmt == FMT_Q8_0 || q->fmt == FMT_Q4_0);
}

int model_int_dots(const Model *m)
{
    if (!m->mat_dot)
        return 0;
    if (int_mat(&m->q_unembed))
        return 1;
    size_t layers = m->cfg.shared_layers ? 1 : m->cfg.n_layers;
    for (size_t l = 0; l < layers && m->layers; l++) {
        const LayerWeights *w = &m->layers[l];
        if (int_mat(&w->q_wq) || int_mat(&w->q_wk) || int_mat(&w->q_wv) || int_mat(&w->q_wo) ||
            int_mat(&w->q_gate) || int_mat(&w->q_up) || int_mat(&w->q_down))
            return 1;
    }
    return 0;
}

int model_dequantize(Model *m, Err *e)
{
    if (!model_has_stored(m))
        return 0;
    size_t cap = 7 * (m->cfg.shared_layers ? 1 : m->cfg.n_layers) + 1;
    float ***f32 = malloc(cap * sizeof *f32);
    QuantMat **q = malloc(cap * sizeof *q);
    if (!f32 || !q) {
        free(f32), free(q);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    size_t n = stored_pairs(m, f32, q, cap), floats = 0;
    for (size_t i = 0; i < n; i++)
        floats += q[i]->data ? q[i]->rows * q[i]->cols : 0;
    float *arena = malloc(floats * sizeof(float));
    if (!arena) {
        free(f32), free(q);
        return err_set(e, ERR_RUNTIME, "out of memory for %zu MB of f32 weights", floats * sizeof(float) >> 20);
    }
    float *cur = arena;
    for (size_t i = 0; i < n; i++) {
        if (!q[i]->data)
            continue;
        const size_t rows = q[i]->rows, cols = q[i]->cols;
        const FormatOps *op = &m->kern->codec[q[i]->fmt];
        const size_t row_bytes = format_row_bytes(q[i]->fmt, cols);
        for (size_t r = 0; r < rows; r++)
            op->dequantize(cur + r * cols, (const unsigned char *)q[i]->data + r * row_bytes, cols);
        *f32[i] = cur;
        cur += rows * cols;
        *q[i] = (QuantMat){ 0 };
    }
    free(f32), free(q);
    free(m->deq_arena);
    m->deq_arena = arena;
    return 0;
}

void model_free(Model *m)
{
    model_close_file(m);
    free(m->deq_arena);
    m->deq_arena = NULL;
    free(m->arena);
    free(m->layers);
    free(m->enc_layers);
    free(m->cross);
    free(m->mla);
    m->mla = NULL;
    m->arena = NULL;
    m->layers = NULL;
    m->enc_layers = NULL;
    m->cross = NULL;
    m->enc_norm = NULL;
}
