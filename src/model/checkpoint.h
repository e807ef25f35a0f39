/* checkpoint.h: models from checkpoint files and back (ckpt/ reads and
 * writes the files; this is where their tensors meet the Model).
 *
 * `--weights PATH` (sim/setup.h) takes the config from the file
 * (config_from_checkpoint) and model_init then loads the weights from it
 * (weights_load_checkpoint): the matrices in F16, Q8_0 and Q4_0 stay as
 * the file stores them, read through the engine's codecs by the matvec. RoPE needs no conversion for either format
 * (ckpt/ckpt.h says why). */
#ifndef KVSCOPE_MODEL_CHECKPOINT_H
#define KVSCOPE_MODEL_CHECKPOINT_H

#include <stddef.h>

#include "kernels/format.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "util/err.h"

/* The config of the checkpoint at path (GGUF, llama2.c or kvscope's own
 * .kvw, found by its magic), with cfg->checkpoint set to path so model_init loads it. Opens
 * and checks the whole file (ckpt_open) and its tokenizer (ckpt_vocab);
 * does not read tensor data. A tokenizer kvscope reads makes
 * cfg->tokenizer CHECKPOINT_TOKENIZER; otherwise cfg->tokenizer_note says
 * why the model runs on ids. Fails with the reader's one-line message. */
int config_from_checkpoint(Config *cfg, const char *path, Err *e);

/* config_from_checkpoint for one of kvscope's own weights files (found by
 * its magic, ckpt/kvw.h; checkpoint_kvw.c): the shape from its header (its
 * max_seq_len the context it was trained at); the name and the tokenizer
 * from the sidecar PATH.json (`kvscope train` writes it), else the file's
 * base name and no tokenizer, cfg->tokenizer_note saying why. model_init
 * then reads the weights (weights_load_kvw). */
int config_from_kvw(Config *cfg, const char *path, Err *e);

/* The tokenizer name that means "the one cfg->checkpoint carries". */
#define CHECKPOINT_TOKENIZER "checkpoint"

/* The tokenizer cfg->checkpoint carries (ERR_USAGE when there is none). */
int checkpoint_tokenizer(const Config *cfg, Tokenizer **out, Err *e);

/* model_init for cfg->checkpoint: the matrices stored in f16, q8_0 or
 * q4_0 stay as stored, in the mapped file (QuantMat, kept open in m->file
 * until model_free); every other tensor (the embedding, norms, f32
 * matrices) is decoded into the arena. The config's shape (d_model, layers,
 * heads, KV heads, head_dim, ffn_dim, vocab) must still be the file's: a
 * --set that changed one fails here with ERR_USAGE. */
int weights_load_checkpoint(Model *m, const Config *cfg, const Kernels *kern, Err *e);
/* The tokenizer a GGUF file carries, read even from a file of its
 * vocabulary alone (no tensors, as llama.cpp's ggml-vocab-*.gguf):
 * `kvscope tokenize --weights`. */
int checkpoint_vocab_tokenizer(const char *path, Tokenizer **out, Err *e);

/* Unmap the checkpoint of m (model_free calls it). */
void model_close_file(Model *m);

/* What an export wrote. */
typedef struct {
    size_t n_tensors;
    size_t n_as_f32;   /* 2-D tensors kept in f32: rows not whole blocks of the chosen format */
    size_t file_bytes;
} ExportInfo;

/* Told after each tensor's data is written: done of total tensors. */
typedef void (*ExportProgressFn)(void *user, size_t done, size_t total);

/* Write m as a GGUF v3 file of architecture `llama` at path (via a
 * temporary file and a rename): metadata from m->cfg, norms in F32, every
 * matrix in fmt (f32, f16, q8_0 or q4_0) encoded with m->kern's codecs, so
 * its bytes are the engine's own quantizer's; a matrix whose rows are not
 * whole blocks of fmt is written in F32 (counted in info->n_as_f32). A
 * model with shared layers is written with every layer (the file is the
 * real model's size). tok, when not NULL, is written with it
 * (model/gguf_vocab.h): a byte-level one as llama.cpp's "gpt2" vocabulary,
 * the SentencePiece-style one a checkpoint carries as its "llama" one.
 * Decoder-only GQA models only: an encoder-decoder or MLA model fails with
 * ERR_USAGE. info and progress may be NULL. */
int model_export_gguf(const Model *m, const Tokenizer *tok, const char *path, Format fmt, ExportInfo *info,
                      ExportProgressFn progress, void *user, Err *e);

#endif
