/* config.h: a model's shape, read from data/models/NAME.ini.
 *
 * Every size is a size_t; config_validate() checks them all together, so a
 * Config that passed it can be trusted by the allocator and the kernels. */
#ifndef KVSCOPE_MODEL_CONFIG_H
#define KVSCOPE_MODEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum {
    ATTN_GQA = 0, /* standard multi-head / grouped-query attention */
    ATTN_MLA,     /* multi-head latent attention (DeepSeek-V2 style) */
} AttnKind;

/* What a query head's softmax may put its mass on besides the keys. */
typedef enum {
    SINK_NONE = 0, /* the weights over the keys sum to 1 */
    SINK_LEARNED,  /* a learnt logit per layer and query head joins the softmax's denominator and adds no
                      value (gpt-oss's sinks): the keys' weights sum to 1 minus the sink's */
} SinkKind;

typedef enum {
    ARCH_DECODER = 0, /* decoder-only: one causal stack over the prompt and what it generates */
    ARCH_ENCDEC,      /* encoder-decoder (the encoder-decoder notes): a bidirectional encoder over a source, a decoder
                         with causal self-attention plus cross-attention to the encoder's output */
} Arch;

typedef struct {
    char name[64];
    char weights[64]; /* "synthetic", or a file in data/weights/ */
    char tokenizer[64]; /* how text becomes its tokens ("bytes"); "" = none: ids only; "checkpoint": the
                           vocabulary the checkpoint carries (model/checkpoint.h) */
    char tokenizer_note[128]; /* "" or why a checkpoint runs on ids only (its tokenizer is not read) */
    char checkpoint[1024]; /* "" or a GGUF / llama2.c file (--weights): the shape and weights come from it
                              (model/checkpoint.h) */
    int allow_nan;      /* --allow-nan: load a checkpoint whose weights or scales hold NaN or infinity
                           (refused by default) */

    size_t d_model;     /* residual stream width */
    size_t n_layers;
    size_t n_heads;     /* query heads */
    size_t n_kv_heads;  /* K/V heads; divides n_heads (GQA), 1 = MQA */
    size_t head_dim;    /* per head; even, for RoPE pairs */
    size_t ffn_dim;     /* SwiGLU hidden width */
    size_t vocab;
    size_t max_seq_len;
    double rope_theta;
    double norm_eps;
    uint64_t seed;      /* for synthetic weights */

    size_t sliding_window; /* 0 = full attention (Mistral-7B: 4096) */
    int shared_layers;     /* 1: one set of layer weights serves every layer */

    AttnKind attention;
    SinkKind attn_sink;   /* none (default), or learned: LayerWeights.attn_sink */
    size_t kv_lora_rank;  /* MLA latent width (512 in the MLA notes) */
    size_t qk_rope_dim;   /* MLA shared RoPE key width (64) */
    size_t qk_nope_dim;   /* MLA per-head non-RoPE key width */
    size_t v_head_dim;    /* MLA per-head value width */

    /* encoder-decoder only (architecture = encdec); max_seq_len is then the
     * decoder's (target) length, src_len the encoder's (source) length */
    Arch architecture;
    size_t encoder_layers; /* encoder depth; the decoder has n_layers */
    size_t src_len;        /* source tokens the encoder reads */
    int bos_token;         /* the token every target starts from (a decoder's first token with add_bos) */
    int eos_token;         /* the token that ends a hypothesis; -1 = none ("none" in an .ini) */
    int add_bos;           /* decoder: every sequence it reads (a training window, an eval segment, a
                            * prompt) starts with bos_token, so attention always has the same first key */
} Config;

/* Defaults for keys an .ini may leave out (weights, theta, eps, window...). */
void config_defaults(Config *c);

/* Set one key from text, as an .ini line or `--set key=value` does.
 * Unknown keys and malformed values fail with ERR_USAGE. */
int config_set(Config *c, const char *key, const char *value, Err *e);

/* Read data/models/NAME.ini (or NAME itself when it names a file: it holds a
 * '/' or ends in ".ini"). Does not validate: apply --set first, then call
 * config_validate. */
int config_load(Config *c, const char *name, Err *e);

/* Check every size and relation (n_kv_heads divides n_heads, ...). */
int config_validate(const Config *c, Err *e);

/* Widths the projections produce. */
size_t config_q_dim(const Config *c);  /* n_heads * head_dim */
size_t config_kv_dim(const Config *c); /* n_kv_heads * head_dim */

/* The names of the models in data/models/, comma-separated, into buf. */
void config_list(char *buf, size_t cap);

/* Resolve a file under the data directory: $KVSCOPE_DATA, else the data/
 * folder beside or above the executable, else ./data. Returns 0 and fills
 * out when the file exists. */
int config_data_path(const char *rel, char *out, size_t cap);

#endif
