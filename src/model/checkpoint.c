/* checkpoint.c: a Config and a Model's f32 weights from a GGUF or llama2.c
 * checkpoint (ckpt/ckpt.h). */
#include "model/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "ckpt/gguf.h"
#include "ckpt/kvw.h"
#include "model/gguf_vocab.h"
#include "text/byte_alphabet.h"

/* The pre-tokenizer a "gpt2" vocabulary names (tokenizer.ggml.pre):
 * GPT-2's, also where none is named, or Llama 3's (whose whole-word tokens
 * skip the merges); 0 with why for another. */
static int pre_tokenizer(const Checkpoint *ck, VocabBpeSpec *s, char *why, size_t cap)
{
    GgufStr pre;
    Err ignore = { 0 };
    s->pre = PRETOK_GPT2, s->ignore_merges = 0;
    if (ck->kind != CKPT_GGUF || gguf_get_str(&ck->gguf, "tokenizer.ggml.pre", &pre, &ignore) <= 0 ||
        gguf_str_eq(pre, "gpt-2") || gguf_str_eq(pre, "gpt2"))
        return 1;
    if (gguf_str_eq(pre, "llama-bpe") || gguf_str_eq(pre, "llama3") || gguf_str_eq(pre, "llama-v3")) {
        s->pre = PRETOK_LLAMA3, s->ignore_merges = 1;
        return 1;
    }
    char name[64];
    snprintf(why, cap, "its pre-tokenizer '%s' is not one kvscope follows (gpt-2, llama-bpe)",
             gguf_str_print(pre, name, sizeof name));
    return 0;
}

/* 1 when kvscope reads the vocabulary v: a SentencePiece-style one, or a
 * "gpt2" one (in kvscope's layout its merges then in *merges, malloc'd;
 * another layout leaves *merges NULL: vocab_bpe.h reads it); 0 with v->why
 * saying why not; -1 (e set) when memory runs out. */
static int vocab_readable(const Checkpoint *ck, CkptVocab *v, int (**merges)[2], Err *e)
{
    *merges = NULL;
    if (v->kind != CKPT_VOCAB_BPE)
        return v->kind == CKPT_VOCAB_SPM;
    VocabBpeSpec spec;
    if (!pre_tokenizer(ck, &spec, v->why, sizeof v->why))
        return 0;
    char why[72];
    int rc = gguf_vocab_merges(v, merges, why, sizeof why, e);
    if (rc != 0)
        return rc;
    /* another layout (vocab_bpe.h): every byte must have a token */
    unsigned char seen[256] = { 0 }, one[8];
    size_t len;
    for (size_t i = 0; i < v->n; i++)
        if ((!v->type || v->type[i] != 3) && v->len[i] <= 2 &&
            byte_alphabet_read((const char *)v->piece[i], v->len[i], one, sizeof one, &len) == 0 && len == 1)
            seen[one[0]] = 1;
    for (size_t b = 0; b < 256; b++)
        if (!seen[b]) {
            snprintf(v->why, sizeof v->why, "its 'gpt2' vocabulary has no token for the byte 0x%02zx", b);
            return 0;
        }
    return 1;
}

int config_from_checkpoint(Config *cfg, const char *path, Err *e)
{
    if (kvw_probe(path))
        return config_from_kvw(cfg, path, e);
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
    CkptVocab v;
    int (*merges)[2] = NULL;
    int rc = ckpt_vocab(&ck, path, &v, e), readable = rc == 0 ? vocab_readable(&ck, &v, &merges, e) : -1;
    if (readable > 0 && v.eos >= 0 && (size_t)v.eos < cfg->vocab && v.type && v.type[v.eos] == 3)
        cfg->eos_token = v.eos; /* an end-of-text control token (an export's, Llama's </s>): generation and a
                                   hypothesis end there */
    if (readable > 0 && merges && v.add_bos && v.bos >= 0 && (size_t)v.bos < cfg->vocab && v.type &&
        v.type[v.bos] == 3) { /* an export of a model whose sequences start with a fixed first token (add_bos):
                                 kvscope's own BPE layout, whose tokenizer puts it first as the model's did */
        cfg->add_bos = 1;
        cfg->bos_token = v.bos;
    }
    if (readable > 0)
        snprintf(cfg->tokenizer, sizeof cfg->tokenizer, "%s", CHECKPOINT_TOKENIZER);
    else if (readable == 0)
        snprintf(cfg->tokenizer_note, sizeof cfg->tokenizer_note, "%s", v.why);
    else if (rc == 0)
        rc = err_wrap(e, "%s", path);
    free(merges);
    ckpt_vocab_free(&v);
    ckpt_close(&ck);
    return rc;
}

/* The tokenizer of a vocabulary vocab_readable took: a byte-level BPE of
 * its merges, a "gpt2" vocabulary in another layout, or a
 * SentencePiece-style one. */
static int vocab_tokenizer(const Checkpoint *ck, const CkptVocab *v, const int (*merges)[2], Tokenizer **out,
                           Err *e)
{
    if (v->kind == CKPT_VOCAB_BPE && !merges) {
        VocabBpeSpec s = { .n = v->n, .piece = v->piece, .len = v->len, .type = v->type, .merge = v->merge,
                           .merge_len = v->merge_len, .n_merges = v->n_merges };
        char why[8];
        pre_tokenizer(ck, &s, why, sizeof why);
        return tokenizer_from_vocab_bpe(out, CHECKPOINT_TOKENIZER, &s, e);
    }
    if (v->kind == CKPT_VOCAB_BPE) {
        Bpe b;
        if (bpe_init(&b, merges, v->n_merges, e) < 0)
            return -1;
        if (tokenizer_from_bpe(out, CHECKPOINT_TOKENIZER, &b, e) < 0) {
            bpe_free(&b);
            return -1;
        }
        return 0;
    }
    const SpmVocab sv = gguf_vocab_spm(v);
    return tokenizer_from_vocab(out, CHECKPOINT_TOKENIZER, &sv, e);
}

int checkpoint_tokenizer(const Config *cfg, Tokenizer **out, Err *e)
{
    *out = NULL;
    if (!cfg->checkpoint[0])
        return err_set(e, ERR_USAGE, "tokenizer '%s' is the one a --weights file carries", CHECKPOINT_TOKENIZER);
    Checkpoint ck;
    CkptVocab v;
    if (ckpt_open(&ck, cfg->checkpoint, e) < 0)
        return -1;
    int (*merges)[2] = NULL;
    int rc = ckpt_vocab(&ck, cfg->checkpoint, &v, e), readable = rc == 0 ? vocab_readable(&ck, &v, &merges, e) : -1;
    if (readable == 0)
        rc = err_set(e, ERR_USAGE, "%s: the checkpoint carries no tokenizer kvscope reads: %s", cfg->checkpoint,
                     v.why);
    else if (readable > 0 && vocab_tokenizer(&ck, &v, (const int (*)[2])merges, out, e) < 0)
        rc = err_wrap(e, "%s: its tokenizer", cfg->checkpoint);
    else if (readable < 0 && rc == 0)
        rc = -1;
    free(merges);
    ckpt_vocab_free(&v);
    ckpt_close(&ck);
    return rc;
}

int checkpoint_vocab_tokenizer(const char *path, Tokenizer **out, Err *e)
{
    *out = NULL;
    Checkpoint ck;
    CkptVocab v;
    if (ckpt_open_vocab(&ck, path, e) < 0)
        return -1;
    int (*merges)[2] = NULL;
    int rc = ckpt_vocab(&ck, path, &v, e), readable = rc == 0 ? vocab_readable(&ck, &v, &merges, e) : -1;
    if (readable == 0)
        rc = err_set(e, ERR_USAGE, "%s: it carries no tokenizer kvscope reads: %s", path, v.why);
    else if (readable > 0 && vocab_tokenizer(&ck, &v, (const int (*)[2])merges, out, e) < 0)
        rc = err_wrap(e, "%s: its tokenizer", path);
    else if (readable < 0 && rc == 0)
        rc = -1;
    free(merges);
    ckpt_vocab_free(&v);
    ckpt_close(&ck);
    return rc;
}

/* The open checkpoint a model's stored matrices point into. */
struct ModelFile {
    Checkpoint ck;
};

/* Where role r of layer l lives in m as f32, and as stored (NULL: never
 * stored: the embedding, read a row at a time, and the norm gains). */
static float **f32_slot(Model *m, CkptRole r, size_t l)
{
    LayerWeights *w = &m->layers[l];
    switch (r) {
    case CK_EMBED: return &m->embed;
    case CK_ATTN_NORM: return &w->attn_norm;
    case CK_WQ: return &w->wq;
    case CK_WK: return &w->wk;
    case CK_WV: return &w->wv;
    case CK_WO: return &w->wo;
    case CK_FFN_NORM: return &w->ffn_norm;
    case CK_GATE: return &w->w_gate;
    case CK_UP: return &w->w_up;
    case CK_DOWN: return &w->w_down;
    case CK_FINAL_NORM: return &m->final_norm;
    case CK_OUTPUT: return &m->unembed;
    default: return NULL;
    }
}

static QuantMat *stored_slot(Model *m, CkptRole r, size_t l)
{
    LayerWeights *w = &m->layers[l];
    switch (r) {
    case CK_WQ: return &w->q_wq;
    case CK_WK: return &w->q_wk;
    case CK_WV: return &w->q_wv;
    case CK_WO: return &w->q_wo;
    case CK_GATE: return &w->q_gate;
    case CK_UP: return &w->q_up;
    case CK_DOWN: return &w->q_down;
    case CK_OUTPUT: return &m->q_unembed;
    default: return NULL;
    }
}

/* A matrix in a block format stays as the file stores it: the matvec reads
 * those bytes, which is what decoding from a quantized model costs. */
static int stays_stored(Model *m, CkptRole r, Format fmt)
{
    return stored_slot(m, r, 0) && fmt != FMT_F32;
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

typedef int (*TensorFn)(Model *m, CkptRole r, size_t layer, const CkptTensor *t, void *user);

static int visit(Model *m, const Checkpoint *ck, CkptRole r, size_t l, TensorFn f, void *user, Err *e)
{
    CkptTensor t;
    return ckpt_tensor(ck, r, l, &t, e) < 0 || f(m, r, l, &t, user) < 0 ? -1 : 0;
}

/* Each tensor of ck to f, in the arena's order (model_alloc's): the
 * embedding, layer by layer, the final norm, the classifier. */
static int each_tensor(Model *m, const Checkpoint *ck, TensorFn f, void *user, Err *e)
{
    if (visit(m, ck, CK_EMBED, 0, f, user, e) < 0)
        return -1;
    for (size_t l = 0; l < m->cfg.n_layers; l++)
        for (int r = CK_ATTN_NORM; r <= CK_DOWN; r++)
            if (visit(m, ck, (CkptRole)r, l, f, user, e) < 0)
                return -1;
    return visit(m, ck, CK_FINAL_NORM, 0, f, user, e) < 0 ? -1 : visit(m, ck, CK_OUTPUT, 0, f, user, e);
}

static int count_f32(Model *m, CkptRole r, size_t l, const CkptTensor *t, void *user)
{
    (void)l;
    if (!stays_stored(m, r, t->fmt))
        *(size_t *)user += t->rows * t->cols;
    return 0;
}

/* Whether the 16-bit half at p is a NaN or an infinity (all exponent bits set). */
static int half_not_finite(const unsigned char *p)
{
    return (p[1] & 0x7c) == 0x7c; /* little-endian: the exponent's five bits in the high byte */
}

/* Refuse a tensor holding a NaN or an infinity, read from the file's bytes
 * before anything is decoded: a weight, or a q8_0 / q4_0 block's scale (which
 * turns its whole block into NaN). Such a model computes NaN logits, and
 * greedy decoding then picks token 0 at every step. user: the Err. */
static int check_finite(Model *m, CkptRole r, size_t l, const CkptTensor *t, void *user)
{
    (void)m, (void)r, (void)l;
    const unsigned char *p = t->data;
    const size_t rows = t->rows, row_bytes = format_row_bytes(t->fmt, t->cols);
    const size_t step = t->fmt == FMT_F32 ? 4 : t->fmt == FMT_F16 ? 2 : format_block_bytes(t->fmt);
    const char *what = t->fmt == FMT_F32 || t->fmt == FMT_F16 ? "a weight" : "a block's scale";
    for (size_t i = 0; i < rows; i++)
        for (size_t at = 0; at < row_bytes; at += step) {
            const unsigned char *v = p + i * row_bytes + at + (t->fmt == FMT_F32 ? 2 : 0); /* f32: its top half */
            int bad = t->fmt == FMT_F32 ? (v[1] & 0x7f) == 0x7f && (v[0] & 0x80) : half_not_finite(v);
            if (bad)
                return err_set(user, ERR_USAGE, "tensor '%s' (%s): %s in row %zu is NaN or infinite; the "
                               "checkpoint is damaged (--allow-nan runs it anyway)", t->name, format_name(t->fmt),
                               what, i);
        }
    return 0;
}

/* A stored matrix points into the file; any other tensor is decoded into
 * the arena at *cursor, a row at a time. */
static int place(Model *m, CkptRole r, size_t l, const CkptTensor *t, void *user)
{
    if (stays_stored(m, r, t->fmt)) {
        *stored_slot(m, r, l) = (QuantMat){ .data = t->data, .fmt = t->fmt, .rows = t->rows, .cols = t->cols };
        return 0;
    }
    float **cursor = user, *dst = *cursor;
    *cursor += t->rows * t->cols;
    *f32_slot(m, r, l) = dst;
    const FormatOps *op = &m->kern->codec[t->fmt];
    const size_t row_bytes = format_row_bytes(t->fmt, t->cols);
    const unsigned char *src = t->data;
    for (size_t i = 0; i < t->rows; i++)
        op->dequantize(dst + i * t->cols, src + i * row_bytes, t->cols);
    return 0;
}

int weights_load_checkpoint(Model *m, const Config *cfg, const Kernels *kern, Err *e)
{
    memset(m, 0, sizeof *m);
    if (cfg->attn_sink) /* --set attn_sink=learned: nothing to read them from */
        return err_set(e, ERR_USAGE, "'%s': GGUF and llama2.c checkpoints hold no attention sink logits "
                       "(attn_sink = learned needs a kvscope weights file)", cfg->checkpoint);
    m->cfg = *cfg;
    m->kern = kern;
    m->mat_dot = INT_DOT_EVEN; /* as llama.cpp multiplies q8_0/q4_0 weights; --int-dot=off: exact */
    m->file = calloc(1, sizeof *m->file);
    m->layers = calloc(cfg->n_layers ? cfg->n_layers : 1, sizeof *m->layers);
    if (!m->file || !m->layers) {
        model_free(m);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    Checkpoint *ck = &m->file->ck;
    if (ckpt_open(ck, cfg->checkpoint, e) < 0) {
        free(m->file);
        m->file = NULL;
        model_free(m);
        return -1;
    }
    size_t floats = 0;
    if (same_shape(cfg, &ck->shape, e) < 0 || each_tensor(m, ck, count_f32, &floats, e) < 0) {
        model_free(m);
        return -1;
    }
    if (!cfg->allow_nan && each_tensor(m, ck, check_finite, e, e) < 0) {
        model_free(m);
        return err_wrap(e, "%s", cfg->checkpoint);
    }
    m->arena_floats = floats;
    m->arena = calloc(floats ? floats : 1, sizeof(float));
    if (!m->arena) {
        model_free(m);
        return err_set(e, ERR_RUNTIME, "out of memory for %zu MB of weights", floats * sizeof(float) >> 20);
    }
    float *cursor = m->arena;
    if (each_tensor(m, ck, place, &cursor, e) < 0) {
        model_free(m);
        return -1;
    }
    snprintf(m->source, sizeof m->source, "%s checkpoint %s%s", ckpt_kind_name(ck->kind), cfg->weights,
             model_has_stored(m) ? " (matrices as stored)" : "");
    return 0;
}

void model_close_file(Model *m)
{
    if (!m->file)
        return;
    ckpt_close(&m->file->ck);
    free(m->file);
    m->file = NULL;
}
