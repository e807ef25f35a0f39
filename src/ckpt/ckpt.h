/* ckpt.h: a LLaMA-style checkpoint on disk, whatever its file format.
 *
 * Two formats, told apart by the file's first bytes, never its name:
 *   GGUF      "GGUF" magic (gguf.h); architecture `llama` (Llama, Mistral-
 *             style GQA and the like), tensors F32, F16, Q8_0, Q4_0.
 *   llama2.c  Karpathy's legacy export: no magic, seven int32 (dim,
 *             hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
 *             seq_len; vocab_size < 0: the classifier is not the
 *             embedding), then f32 tensors in a fixed order (llama2c.c).
 *             Recognised by the file's size matching what the header
 *             implies exactly.
 *
 * Opening maps the file and checks all of it: the shape from the header or
 * metadata, then every tensor the shape implies (present, of that shape, in
 * a readable format) and, for GGUF, no tensor kvscope does not know (a
 * rope_freqs or bias tensor would change the model; refusing is honest).
 * After ckpt_open succeeds, every ckpt_tensor call for a role and a layer
 * below n_layers succeeds, and the shape's sizes are bounded by the file.
 *
 * RoPE: the engine rotates adjacent pairs (2i, 2i+1) of each head by
 * pos * theta^(-2i/head_dim) (kernels/rope_ref.c). llama2.c does the same
 * (run.c). GGUF `llama` files do too: llama.cpp's LLAMA architecture uses
 * ggml's "normal" (adjacent-pair) RoPE, and its converter permutes the rows
 * of Q and K of a Hugging Face checkpoint, which rotates halves (i,
 * i + head_dim/2), into pair order (rope_order.h). So both formats load
 * with no conversion; tests/unit/test_gguf.c proves the permutation
 * identity the converter relies on, and the round trips. */
#ifndef KVSCOPE_CKPT_CKPT_H
#define KVSCOPE_CKPT_CKPT_H

#include <stddef.h>

#include "ckpt/gguf.h"
#include "ckpt/mapfile.h"
#include "kernels/format.h"
#include "util/err.h"

typedef enum { CKPT_GGUF = 1, CKPT_LLAMA2C } CkptKind;

/* What the header or metadata says about the model. */
typedef struct {
    char name[64];     /* general.name, else the file's base name */
    size_t d_model, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab;
    size_t context;    /* the trained context length (max_seq_len) */
    double rope_theta, norm_eps;
    size_t sliding_window; /* 0 = full attention (GGUF: llama.attention.sliding_window, as kvscope writes it) */
    int tied;          /* 1: no classifier of its own, the embedding serves */
} CkptShape;

/* The tensors of a LLaMA decoder, by role. The per-layer roles
 * (CK_ATTN_NORM .. CK_DOWN) take a layer index. */
typedef enum {
    CK_EMBED = 0,  /* [vocab][d_model]           token_embd.weight */
    CK_ATTN_NORM,  /* [d_model]                  blk.L.attn_norm.weight */
    CK_WQ,         /* [n_heads*head_dim][d_model]      blk.L.attn_q.weight */
    CK_WK,         /* [n_kv_heads*head_dim][d_model]   blk.L.attn_k.weight */
    CK_WV,         /* [n_kv_heads*head_dim][d_model]   blk.L.attn_v.weight */
    CK_WO,         /* [d_model][n_heads*head_dim]      blk.L.attn_output.weight */
    CK_FFN_NORM,   /* [d_model]                  blk.L.ffn_norm.weight */
    CK_GATE,       /* [ffn_dim][d_model]         blk.L.ffn_gate.weight (llama2.c w1) */
    CK_UP,         /* [ffn_dim][d_model]         blk.L.ffn_up.weight   (llama2.c w3) */
    CK_DOWN,       /* [d_model][ffn_dim]         blk.L.ffn_down.weight (llama2.c w2) */
    CK_FINAL_NORM, /* [d_model]                  output_norm.weight */
    CK_OUTPUT,     /* [vocab][d_model]           output.weight (the embedding when tied) */
    CK_ROLE_COUNT
} CkptRole;

/* One tensor as stored: rows of cols values in fmt, row-major. */
typedef struct {
    const void *data; /* inside the mapped file */
    Format fmt;
    size_t rows, cols;
    char name[GGUF_MAX_NAME];
} CkptTensor;

typedef struct {
    CkptKind kind;
    CkptShape shape;
    GgufFile gguf;   /* CKPT_GGUF */
    MappedFile map;  /* CKPT_LLAMA2C */
    size_t l2c_at[CK_ROLE_COUNT]; /* llama2.c: float index where each role's stack of layers starts */
} Checkpoint;

/* Map path, find its format from its first bytes, check it (above). Fails
 * with ERR_USAGE and a one-line message starting with the path for a
 * malformed or unsupported file, ERR_RUNTIME when it cannot be read. */
int ckpt_open(Checkpoint *ck, const char *path, Err *e);

/* The same over bytes in memory (GGUF only; for tests and the fuzzer). */
int ckpt_open_gguf_memory(Checkpoint *ck, const void *data, size_t size, const char *name, Err *e);

/* A GGUF file for its vocabulary alone (the shape's vocab the number of
 * tokenizer.ggml.tokens; no tensors read or checked): ckpt_vocab then. */
int ckpt_open_vocab(Checkpoint *ck, const char *path, Err *e);

void ckpt_close(Checkpoint *ck);

/* Role r of layer `layer` (ignored for the other roles). Fails (ERR_USAGE)
 * when it is missing, of another shape than the metadata implies, or layer
 * is out of range; never after ckpt_open succeeded, for a valid layer. */
int ckpt_tensor(const Checkpoint *ck, CkptRole r, size_t layer, CkptTensor *t, Err *e);

/* The [rows][cols] the shape implies for role r. */
void ckpt_role_dims(const CkptShape *s, CkptRole r, size_t *rows, size_t *cols);

/* 1 for the roles with one tensor per layer. */
int ckpt_role_per_layer(CkptRole r);

/* GGUF's name of role r in layer `layer` ("blk.3.attn_q.weight"). */
void ckpt_gguf_name(CkptRole r, size_t layer, char *buf, size_t cap);

const char *ckpt_kind_name(CkptKind k);

/* --- the tokenizer a checkpoint carries (ckpt_vocab.c) ------------------ */

/* What a checkpoint says about its tokenizer. GGUF: the tokenizer.ggml.*
 * keys, read when tokenizer.ggml.model is "llama" (the SentencePiece-style
 * vocabulary llama-architecture files carry) or "gpt2" (a byte-level BPE:
 * its tokens, types and merges as written, which model/gguf_vocab.h reads
 * on); another model is named, not read. llama2.c: tokenizer.bin in the checkpoint's folder
 * (int32 max_token_length, then per token: f32 score, int32 length, the
 * bytes), with run.c's ids (unknown 0, BOS 1, EOS 2) and spaces written as
 * spaces. */
typedef enum {
    CKPT_VOCAB_NONE = 0, /* none: the model runs on ids (why says why) */
    CKPT_VOCAB_SPM,      /* read: the fields below */
    CKPT_VOCAB_BPE,      /* read: a "gpt2" vocabulary (piece, len, type; merge, merge_len) */
    CKPT_VOCAB_OTHER,    /* a tokenizer model kvscope does not read (model names it, why says why) */
} CkptVocabKind;

typedef struct {
    CkptVocabKind kind;
    char model[32];              /* tokenizer.ggml.model as printable text, "" for llama2.c */
    char why[128];               /* NONE: what is missing; OTHER: what is not read */
    size_t n;                    /* tokens: the shape's vocab */
    const unsigned char **piece; /* [n] into the checkpoint or tokenizer.bin (valid while both are open) */
    size_t *len;                 /* [n] */
    float *score;                /* [n] */
    int *type;                   /* [n] GGUF's token types (1 normal .. 6 byte), NULL: not given (llama2.c) */
    int bos, eos, unk;           /* -1: none */
    int add_bos, add_space_prefix, raw_spaces;
    MappedFile bin;              /* llama2.c's tokenizer.bin */
    const unsigned char **merge; /* BPE: [n_merges] "A B" as written, in rank order, into the checkpoint */
    size_t *merge_len;           /* [n_merges] */
    size_t n_merges;
} CkptVocab;

/* The tokenizer of ck, opened from path (llama2.c: its folder holds
 * tokenizer.bin). Fails (ERR_USAGE, one line naming the key or file) when
 * what is there is malformed: arrays of another element type or length
 * than the tokens, an id past the vocabulary, a token type out of range,
 * a truncated tokenizer.bin. Free with ckpt_vocab_free, before ck closes. */
int ckpt_vocab(const Checkpoint *ck, const char *path, CkptVocab *v, Err *e);
void ckpt_vocab_free(CkptVocab *v);

/* --- per format (gguf_llama.c, llama2c.c) ------------------------------- */

/* Fill ck->shape from the GGUF metadata of ck->gguf (architecture llama). */
int gguf_llama_shape(Checkpoint *ck, const char *fallback_name, Err *e);
int gguf_llama_tensor(const Checkpoint *ck, CkptRole r, size_t layer, CkptTensor *t, Err *e);
/* Fail when a tensor of the file is not one of a llama model's. */
int gguf_llama_known_tensors(const Checkpoint *ck, Err *e);

/* Parse ck->map as a llama2.c checkpoint: header, size, layout. */
int llama2c_parse(Checkpoint *ck, const char *fallback_name, Err *e);
int llama2c_tensor(const Checkpoint *ck, CkptRole r, size_t layer, CkptTensor *t, Err *e);

/* llama2.c's header: seven int32. */
#define LLAMA2C_HEADER_BYTES 28

#endif
