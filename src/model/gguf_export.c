/* gguf_export.c: a kvscope model as a GGUF `llama` file (ckpt/gguf.h
 * writes the bytes; this decides what goes in). Tensor names and shapes are
 * the ones ckpt/ckpt.h reads back, so export then load is the identity for
 * f32 and the engine's own rounding for the quantized formats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "ckpt/gguf.h"
#include "model/checkpoint.h"
#include "model/gguf_vocab.h"

/* llama.cpp's general.file_type for a file whose matrices are all fmt */
static uint32_t file_type(Format fmt)
{
    return fmt == FMT_F16 ? 1 : fmt == FMT_Q4_0 ? 2 : fmt == FMT_Q8_0 ? 7 : 0;
}

static const float *source(const Model *m, CkptRole r, size_t l)
{
    const LayerWeights *w = model_layer(m, l);
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

/* The format role r is stored in: norms f32, matrices fmt when their rows
 * are whole blocks of it. */
static Format stored_format(const CkptShape *s, CkptRole r, Format fmt)
{
    size_t rows, cols;
    ckpt_role_dims(s, r, &rows, &cols);
    if (r == CK_ATTN_NORM || r == CK_FFN_NORM || r == CK_FINAL_NORM)
        return FMT_F32;
    return cols % format_block_values(fmt) == 0 ? fmt : FMT_F32;
}

/* The tensors in file order, llama.cpp's: the embedding, each layer's nine
 * (CK_ATTN_NORM .. CK_DOWN), the final norm, the classifier; entry(c, i,
 * &layer) is the role of the i-th, its layer in *layer. */
static size_t n_entries(const Config *c)
{
    return 3 + 9 * c->n_layers;
}

static CkptRole entry(const Config *c, size_t i, size_t *layer)
{
    *layer = 0;
    if (i == 0)
        return CK_EMBED;
    if (i <= 9 * c->n_layers) {
        *layer = (i - 1) / 9;
        return (CkptRole)(CK_ATTN_NORM + (i - 1) % 9);
    }
    return i == 9 * c->n_layers + 1 ? CK_FINAL_NORM : CK_OUTPUT;
}

static void write_metadata(GgufWriter *w, const Config *c, size_t vocab, Format fmt)
{
    gguf_writer_str(w, "general.architecture", "llama");
    gguf_writer_str(w, "general.name", c->name);
    gguf_writer_u32(w, "general.file_type", file_type(fmt));
    if (format_is_quantized(fmt))
        gguf_writer_u32(w, "general.quantization_version", 2);
    gguf_writer_u32(w, "llama.context_length", (uint32_t)c->max_seq_len);
    gguf_writer_u32(w, "llama.embedding_length", (uint32_t)c->d_model);
    gguf_writer_u32(w, "llama.block_count", (uint32_t)c->n_layers);
    gguf_writer_u32(w, "llama.feed_forward_length", (uint32_t)c->ffn_dim);
    gguf_writer_u32(w, "llama.attention.head_count", (uint32_t)c->n_heads);
    gguf_writer_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_kv_heads);
    if (c->head_dim * c->n_heads != c->d_model) { /* llama.cpp assumes d_model / n_heads otherwise */
        gguf_writer_u32(w, "llama.attention.key_length", (uint32_t)c->head_dim);
        gguf_writer_u32(w, "llama.attention.value_length", (uint32_t)c->head_dim);
    }
    gguf_writer_u32(w, "llama.rope.dimension_count", (uint32_t)c->head_dim);
    gguf_writer_f32(w, "llama.rope.freq_base", (float)c->rope_theta);
    gguf_writer_f32(w, "llama.attention.layer_norm_rms_epsilon", (float)c->norm_eps);
    gguf_writer_u32(w, "llama.vocab_size", (uint32_t)vocab);
    if (c->sliding_window)
        gguf_writer_u32(w, "llama.attention.sliding_window", (uint32_t)c->sliding_window);
}

/* tok into w's metadata: a byte-level one as "gpt2"; the one a checkpoint
 * carries read again from it (the Tokenizer keeps no scores or types) and
 * written as it came, "llama". */
static int write_vocab(GgufWriter *w, const Config *c, const Tokenizer *tok, size_t vocab, int eos, Err *e)
{
    const int (*merges)[2];
    size_t n_merges;
    if (tokenizer_byte_level(tok, &merges, &n_merges))
        return gguf_vocab_write(w, tok, vocab, eos, e);
    if (!c->checkpoint[0])
        return err_set(e, ERR_USAGE, "tokenizer '%s' is not one export writes", tokenizer_name(tok));
    Checkpoint ck;
    CkptVocab v;
    if (ckpt_open(&ck, c->checkpoint, e) < 0)
        return -1;
    int rc = ckpt_vocab(&ck, c->checkpoint, &v, e);
    if (rc == 0 && (v.kind != CKPT_VOCAB_SPM || v.n != c->vocab))
        rc = err_set(e, ERR_USAGE, "%s: its vocabulary is not the model's %zu SentencePiece tokens", c->checkpoint,
                     c->vocab);
    if (rc == 0)
        rc = gguf_vocab_write_spm(w, &v, e);
    ckpt_vocab_free(&v);
    ckpt_close(&ck);
    return rc;
}

static int check_exportable(const Config *c, Format fmt, Err *e)
{
    if (c->architecture != ARCH_DECODER || c->attention != ATTN_GQA)
        return err_set(e, ERR_USAGE, "model '%s': export writes decoder-only GQA models (llama), not %s", c->name,
                       c->architecture != ARCH_DECODER ? "an encoder-decoder" : "MLA");
    if (c->attn_sink)
        return err_set(e, ERR_USAGE, "model '%s' has learnt attention sinks; GGUF's llama architecture has no "
                       "tensor for them, so export refuses it", c->name);
    if (fmt != FMT_F32 && fmt != FMT_F16 && fmt != FMT_Q8_0 && fmt != FMT_Q4_0)
        return err_set(e, ERR_USAGE, "export: type %s; GGUF tensors are f32, f16, q8_0 or q4_0", format_name(fmt));
    const size_t sizes[] = { c->max_seq_len, c->d_model, c->n_layers, c->ffn_dim, c->n_heads, c->vocab, c->head_dim };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i] > UINT32_MAX)
            return err_set(e, ERR_USAGE, "model '%s': a size beyond 2^32 does not fit GGUF's u32 metadata", c->name);
    return 0;
}

int model_export_gguf(const Model *m, const Tokenizer *tok, const char *path, Format fmt, ExportInfo *info,
                      ExportProgressFn progress, void *user, Err *e)
{
    const Config *c = &m->cfg;
    if (check_exportable(c, fmt, e) < 0)
        return -1;
    /* A byte-level tokenizer is written with an end-of-text control token
     * (llama.cpp's EOS and end of generation): the first id past its own,
     * or one more id, whose embedding and classifier rows are zeros (its
     * logit 0 at every position). */
    const int (*merges)[2];
    size_t n_merges, extra = 0;
    int eos = -1;
    if (tok && tokenizer_byte_level(tok, &merges, &n_merges)) {
        if (tokenizer_bos(tok) >= 0) { /* a fixed first token (add_bos) is already that id, one past the text's */
            eos = tokenizer_bos(tok);
        } else if (tokenizer_vocab(tok) <= c->vocab) {
            eos = (int)tokenizer_vocab(tok);
            extra = tokenizer_vocab(tok) == c->vocab;
        }
    }
    CkptShape s = { .d_model = c->d_model, .n_layers = c->n_layers, .n_heads = c->n_heads,
                    .n_kv_heads = c->n_kv_heads, .head_dim = c->head_dim, .ffn_dim = c->ffn_dim,
                    .vocab = c->vocab + extra };
    GgufWriter *w = gguf_writer_new(path, 0);
    if (!w)
        return err_set(e, ERR_RUNTIME, "out of memory");
    ExportInfo got = { 0 };
    write_metadata(w, c, s.vocab, fmt);
    if (tok && write_vocab(w, c, tok, s.vocab, eos, e) < 0) {
        gguf_writer_free(w);
        return -1;
    }
    size_t scratch_bytes = 0, n = n_entries(c);
    for (size_t i = 0; i < n; i++) {
        size_t l, rows, cols;
        CkptRole r = entry(c, i, &l);
        ckpt_role_dims(&s, r, &rows, &cols);
        Format f = stored_format(&s, r, fmt);
        char name[GGUF_MAX_NAME];
        ckpt_gguf_name(r, l, name, sizeof name);
        const uint64_t ne[2] = { cols, rows };
        gguf_writer_tensor(w, name, f, rows == 1 ? 1 : 2, ne);
        got.n_tensors++;
        got.n_as_f32 += f != fmt && rows > 1;
        size_t bytes = rows * format_row_bytes(f, cols);
        if (f != FMT_F32 && bytes > scratch_bytes)
            scratch_bytes = bytes;
    }
    unsigned char *scratch = malloc(scratch_bytes ? scratch_bytes : 1); /* [rows][row_bytes] of one tensor */
    float *zeros = calloc(c->d_model, sizeof *zeros); /* the end-of-text row */
    int rc = scratch && zeros ? gguf_writer_begin_data(w, e) : err_set(e, ERR_RUNTIME, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t l, rows, cols;
        CkptRole r = entry(c, i, &l);
        ckpt_role_dims(&s, r, &rows, &cols);
        Format f = stored_format(&s, r, fmt);
        const size_t row_bytes = format_row_bytes(f, cols);
        const float *x = source(m, r, l); /* [rows][cols], the last zeros when it is the added id's */
        const size_t own = rows - ((r == CK_EMBED || r == CK_OUTPUT) ? extra : 0);
        if (f == FMT_F32 && own == rows) {
            rc = gguf_writer_data(w, x, rows * cols * sizeof(float), e);
        } else if (f == FMT_F32) { /* one call a tensor: copied with the zero row after it */
            float *all = malloc(rows * cols * sizeof *all);
            if (all) {
                memcpy(all, x, own * cols * sizeof *all);
                memset(all + own * cols, 0, (rows - own) * cols * sizeof *all);
            }
            rc = all ? gguf_writer_data(w, all, rows * cols * sizeof *all, e) : err_set(e, ERR_RUNTIME, "out of memory");
            free(all);
        } else {
            for (size_t j = 0; j < rows; j++)
                m->kern->codec[f].quantize(scratch + j * row_bytes, j < own ? x + j * cols : zeros, cols);
            rc = gguf_writer_data(w, scratch, rows * row_bytes, e);
        }
        if (progress)
            progress(user, i + 1, n);
    }
    if (rc == 0)
        rc = gguf_writer_finish(w, e);
    free(scratch);
    free(zeros);
    gguf_writer_free(w);
    if (rc == 0 && info) {
        FILE *f = fopen(path, "rb");
        if (f && fseek(f, 0, SEEK_END) == 0)
            got.file_bytes = (size_t)ftell(f);
        if (f)
            fclose(f);
        *info = got;
    }
    return rc;
}
