/* checkpoint.c: a Config and a Model's f32 weights from a GGUF or llama2.c
 * checkpoint (ckpt/ckpt.h). */
#include "model/checkpoint.h"

#include <stdio.h>
#include <string.h>

#include "ckpt/ckpt.h"

int config_from_checkpoint(Config *cfg, const char *path, Err *e)
{
    config_defaults(cfg);
    if (strlen(path) >= sizeof cfg->checkpoint)
        return err_set(e, ERR_USAGE, "--weights: a path of %zu bytes is too long (at most %zu)", strlen(path),
                       sizeof cfg->checkpoint - 1);
    Checkpoint ck;
    if (ckpt_open(&ck, path, e) < 0)
        return -1;
    const CkptShape *s = &ck.shape;
    snprintf(cfg->name, sizeof cfg->name, "%s", s->name);
    const char *slash = strrchr(path, '/');
    snprintf(cfg->weights, sizeof cfg->weights, "%s", slash ? slash + 1 : path);
    snprintf(cfg->checkpoint, sizeof cfg->checkpoint, "%s", path);
    cfg->d_model = s->d_model;
    cfg->n_layers = s->n_layers;
    cfg->n_heads = s->n_heads;
    cfg->n_kv_heads = s->n_kv_heads;
    cfg->head_dim = s->head_dim;
    cfg->ffn_dim = s->ffn_dim;
    cfg->vocab = s->vocab;
    cfg->max_seq_len = s->context;
    cfg->rope_theta = s->rope_theta;
    cfg->norm_eps = s->norm_eps;
    cfg->sliding_window = s->sliding_window;
    ckpt_close(&ck);
    return 0;
}

/* Where role r of layer l lives in m. */
static float *destination(Model *m, CkptRole r, size_t l)
{
    LayerWeights *w = &m->layers[l];
    switch (r) {
    case CK_EMBED: return m->embed;
    case CK_ATTN_NORM: return w->attn_norm;
    case CK_WQ: return w->wq;
    case CK_WK: return w->wk;
    case CK_WV: return w->wv;
    case CK_WO: return w->wo;
    case CK_FFN_NORM: return w->ffn_norm;
    case CK_GATE: return w->w_gate;
    case CK_UP: return w->w_up;
    case CK_DOWN: return w->w_down;
    case CK_FINAL_NORM: return m->final_norm;
    case CK_OUTPUT: return m->unembed;
    default: return NULL;
    }
}

/* The config's shape against the file's: --set may change the context,
 * RoPE base, epsilon and window, not the tensors' sizes. */
static int same_shape(const Config *c, const CkptShape *s, Err *e)
{
    const struct { const char *key; size_t cfg, file; } k[] = {
        { "d_model", c->d_model, s->d_model },    { "n_layers", c->n_layers, s->n_layers },
        { "n_heads", c->n_heads, s->n_heads },    { "n_kv_heads", c->n_kv_heads, s->n_kv_heads },
        { "head_dim", c->head_dim, s->head_dim }, { "ffn_dim", c->ffn_dim, s->ffn_dim },
        { "vocab", c->vocab, s->vocab },
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i].cfg != k[i].file)
            return err_set(e, ERR_USAGE, "the config has %s %zu but the checkpoint holds %zu", k[i].key, k[i].cfg,
                           k[i].file);
    if (c->shared_layers || c->attention != ATTN_GQA || c->architecture != ARCH_DECODER)
        return err_set(e, ERR_USAGE, "a checkpoint is a decoder-only GQA model with its own layers (no --shared, "
                       "MLA or encoder-decoder)");
    return 0;
}

int weights_load_checkpoint(Model *m, Err *e)
{
    Checkpoint ck;
    if (ckpt_open(&ck, m->cfg.checkpoint, e) < 0)
        return -1;
    int rc = same_shape(&m->cfg, &ck.shape, e);
    for (int r = 0; rc == 0 && r < CK_ROLE_COUNT; r++) {
        size_t n = ckpt_role_per_layer((CkptRole)r) ? m->cfg.n_layers : 1;
        for (size_t l = 0; rc == 0 && l < n; l++) {
            CkptTensor t;
            if ((rc = ckpt_tensor(&ck, (CkptRole)r, l, &t, e)) < 0)
                break;
            /* [rows][cols] in t.fmt -> [rows][cols] f32, a row at a time */
            float *dst = destination(m, (CkptRole)r, l);
            const FormatOps *op = &m->kern->codec[t.fmt];
            const size_t row_bytes = format_row_bytes(t.fmt, t.cols);
            const unsigned char *src = t.data;
            for (size_t i = 0; i < t.rows; i++)
                op->dequantize(dst + i * t.cols, src + i * row_bytes, t.cols);
        }
    }
    if (rc == 0)
        snprintf(m->source, sizeof m->source, "%s checkpoint %s", ckpt_kind_name(ck.kind), m->cfg.weights);
    ckpt_close(&ck);
    return rc;
}
