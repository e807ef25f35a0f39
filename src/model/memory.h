/* memory.h: how many bytes a model's KV cache takes, from its config alone.
 *
 * Every figure is computed from the Config and a Format, never typed in.
 * The unit is what one token stores in one layer (a KvShape): k_rows rows of
 * k_len values plus v_rows rows of v_len values, each row encoded in the
 * format (see kernels/format.h for the bytes of a row). From it:
 *
 *   token_layer = k_rows * row_bytes(k_len) + v_rows * row_bytes(v_len)
 *   token       = token_layer * n_layers
 *   layer       = token_layer * context * batch
 *   total       = token       * context * batch
 *
 * The shapes:
 *   GQA / MHA cache    K and V: n_kv_heads rows of head_dim each
 *   MHA equivalent     the same with n_kv_heads = n_heads (what GQA saves)
 *   MLA latent         one row of kv_lora_rank + qk_rope_dim (the compressed
 *                      c_kv plus the shared RoPE key), no separate V
 *   MLA decompressed   per head: K of qk_nope_dim + qk_rope_dim, V of
 *                      v_head_dim; what a standard cache would hold */
#ifndef KVSCOPE_MODEL_MEMORY_H
#define KVSCOPE_MODEL_MEMORY_H

#include <stddef.h>

#include "kernels/format.h"
#include "model/config.h"
#include "util/err.h"

typedef enum {
    KV_SHAPE_GQA = 0,         /* K,V per KV head (MHA when n_kv_heads = n_heads) */
    KV_SHAPE_MHA,             /* the MHA equivalent of a GQA config */
    KV_SHAPE_MLA_LATENT,      /* the compressed latent an MLA model caches */
    KV_SHAPE_MLA_DECOMPRESSED /* the per-head K,V an MLA latent stands for */
} KvShapeKind;

/* What one token stores in one layer. */
typedef struct {
    KvShapeKind kind;
    size_t k_rows, k_len; /* rows of K (or of the latent), values per row */
    size_t v_rows, v_len; /* rows of V, values per row (0 rows for a latent) */
} KvShape;

/* The shape the config's own cache stores: GQA K,V, or the MLA latent. */
KvShape memory_shape(const Config *c);

/* The shape to compare with: the MHA equivalent of a GQA model, the
 * decompressed per-head K,V of an MLA model. Returns 0 and fills *out, or -1
 * when there is nothing to compare (an MHA model: n_kv_heads = n_heads). */
int memory_shape_reference(const Config *c, KvShape *out);

/* Values one token stores in one layer. */
size_t memory_shape_values(const KvShape *s);

/* Bytes one token stores in one layer in format f. */
size_t memory_token_layer_bytes(const KvShape *s, Format f);

/* The four figures of a cache of `context` tokens for `batch` sequences. */
typedef struct {
    size_t token_layer; /* per token per layer */
    size_t token;       /* per token, all layers */
    size_t layer;       /* per layer, context x batch */
    size_t total;       /* all layers, context x batch */
} KvBytes;

/* Fill *out for shape s of config c. Fails (ERR_USAGE) when a figure does
 * not fit in a size_t; context and batch of 0 give zeros. */
int memory_bytes(const Config *c, const KvShape *s, Format f, size_t context, size_t batch,
                 KvBytes *out, Err *e);

/* Positions a cache must hold at `context`: the whole context, or the
 * sliding window when the model has one and it is shorter. */
size_t memory_cached_positions(const Config *c, size_t context);

#endif
