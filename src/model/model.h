/* model.h: a LLaMA-style decoder and its weights.
 *
 * Matrices are row-major [out][in], so a projection is one dot product per
 * output (llama2.c's convention). With shared_layers one LayerWeights serves
 * every layer: the model then reads as many weight bytes per step as the
 * real one while holding one layer's worth of memory. */
#ifndef KVSCOPE_MODEL_MODEL_H
#define KVSCOPE_MODEL_MODEL_H

#include <stddef.h>

#include "ckpt/kvw.h"
#include "kernels/kernels.h"
#include "kv/cache.h"
#include "model/config.h"
#include "util/err.h"

/* Model.int_dot and Model.mat_dot: off, or how the activation is rounded
 * to q8_0 */
enum { INT_DOT_OFF = 0, INT_DOT_EVEN = 1, INT_DOT_REF = 2 };

/* A weight matrix kept as a checkpoint stores it: rows of block-format
 * values (f16, q8_0, q4_0; kernels/format.h), read by the matvec through
 * the codecs (model_matmul). data NULL: the matrix is f32, in the arena. */
typedef struct {
    const void *data;
    Format fmt;
    size_t rows, cols;
} QuantMat;

typedef struct {
    float *attn_norm; /* [d_model] */
    float *wq;        /* [n_heads * head_dim][d_model] */
    float *wk;        /* [n_kv_heads * head_dim][d_model] */
    float *wv;        /* [n_kv_heads * head_dim][d_model] */
    float *wo;        /* [d_model][n_heads * head_dim] */
    float *ffn_norm;  /* [d_model] */
    float *w_gate;    /* [ffn_dim][d_model] */
    float *w_up;      /* [ffn_dim][d_model] */
    float *w_down;    /* [d_model][ffn_dim] */
    float *attn_sink; /* [n_heads] learnt sink logits on the scaled scores (attn_sink = learned); else NULL */
    /* A checkpoint's matrices as stored: where q_X.data is set, X is NULL */
    QuantMat q_wq, q_wk, q_wv, q_wo, q_gate, q_up, q_down;
} LayerWeights;

/* The cross-attention sublayer of one decoder layer of an encoder-decoder:
 * queries from the decoder's stream, keys and values from the encoder's
 * output (no RoPE: the two sequences' positions are not comparable). */
typedef struct {
    float *norm; /* [d_model] */
    float *wq;   /* [n_heads * head_dim][d_model] */
    float *wk;   /* [n_kv_heads * head_dim][d_model], applied to the encoder output */
    float *wv;   /* [n_kv_heads * head_dim][d_model], applied to the encoder output */
    float *wo;   /* [d_model][n_heads * head_dim] */
} CrossWeights;

/* The multi-head latent attention of one layer (DeepSeek-V2, the MLA notes; no
 * query compression), beside its LayerWeights: the layer's wq is MLA's
 * query projection ([n_heads * (qk_nope_dim + qk_rope_dim)][d_model], with
 * head_dim = qk_nope_dim + qk_rope_dim), its wk, wv and wo are not used.
 * H = n_heads, r = kv_lora_rank, p = qk_rope_dim, dn = qk_nope_dim,
 * dv = v_head_dim. model/mla.h runs it. */
typedef struct {
    float *w_dkv;   /* [r + p][d_model]: rows 0..r the down-projection to the latent c_kv, rows r..r+p
                       W_kr, the RoPE key shared by every head (DeepSeek's kv_a_proj_with_mqa) */
    float *w_kr;    /* = w_dkv + r * d_model: W_kr's rows, not a tensor of its own */
    float *kv_norm; /* [r]: RMSNorm gain of c_kv (the cache holds the normed latent) */
    float *w_uk;    /* [H * dn][r]: up-projection of c_kv to each head's non-RoPE key */
    float *w_uv;    /* [H * dv][r]: up-projection of c_kv to each head's value */
    float *w_o;     /* [d_model][H * dv]: output projection */
} MlaWeights;

/* How MLA attention reads its latent cache (model/mla.h). */
typedef enum {
    MLA_ABSORBED = 0, /* W_uk folded into the query, W_uv applied after attention: K, V never built */
    MLA_DECOMPRESS,   /* every cached row up-projected to per-head K and V (the MLA notes' way) */
} MlaPath;

/* The source document's four pitfalls, committed on purpose so a learner
 * can see what each one breaks. They act on the cached path only: the
 * uncached run stays the correct reference. Off unless Model.bugs sets them. */
typedef enum {
    BUG_NONE = 0,
    BUG_ROPE_POSITION = 1u << 0,  /* 1: decode tokens rotated as if at position 0 */
    BUG_MASK_IN_DECODE = 1u << 1, /* 2: the decode query masked as if it were row 0: it sees position 0 only */
    BUG_ROPE_ON_V = 1u << 2,      /* 3: V rotated by RoPE before it is cached */
    BUG_IGNORE_APPEND = 1u << 3,  /* 4: attention over the new tokens only, the cached history ignored */
} Bug;

/* Parse a bug name (rope-position, mask-in-decode, rope-on-v, ignore-append). */
int bug_parse(const char *name, Bug *out);
const char *bug_name(Bug b);
extern const char bug_names[];

typedef struct {
    Config cfg;
    const Kernels *kern;
    unsigned bugs;        /* Bug flags */
    AttendAlgo attend;    /* attention form: naive (default), materialize or flash */
    const AttnBias *bias; /* attention structure of causal self-attention (model/structure.h); NULL = none */
    float *embed;         /* [vocab][d_model] */
    LayerWeights *layers; /* [n_layers], or [1] with shared_layers */
    float *final_norm;    /* [d_model] */
    float *unembed;       /* [vocab][d_model] */
    /* encoder-decoder only (NULL otherwise): the decoder is `layers` plus `cross` */
    LayerWeights *enc_layers; /* [encoder_layers]: bidirectional self-attention and FFN */
    float *enc_norm;          /* [d_model], applied to the encoder's output */
    CrossWeights *cross;      /* [n_layers] */
    /* MLA only (attention = mla; NULL otherwise) */
    MlaWeights *mla;      /* [n_layers], or [1] with shared_layers */
    MlaPath mla_path;     /* absorbed (default) or decompress */
    size_t mla_tiles;     /* decompress: tiles the LRU of decompressed tiles holds (the MLA notes: 4); 0 = off */
    QuantMat q_unembed;   /* the classifier as a checkpoint stores it (unembed NULL then) */
    int mat_dot;          /* stored q8_0/q4_0 matrices multiply the activation rounded to q8_0 by
                             integer dots (llama.cpp's way): faster, that rounding added.
                             INT_DOT_EVEN (a checkpoint's default) rounds as llama.cpp's x86 CPU
                             path (ties to even), INT_DOT_REF as ggml's reference (ties away);
                             INT_DOT_OFF: against the f32 activation, exact */
    int int_dot;          /* the cache's q8_0/q4_0 keys are scored against the query rounded to
                             q8_0, and flash adds 4-bit values with integer weights (opt-in:
                             off by default, so the cache's figures are the exact path's) */
    float *arena;         /* every f32 tensor above lives here */
    size_t arena_floats;
    float *deq_arena;     /* model_dequantize's f32 copies of the stored matrices */
    struct ModelFile *file; /* the mapped checkpoint the stored matrices point into */
    char source[160];     /* "mt19937 seed 42" or "file worked-example.txt" */
    /* Called after each layer of a forward pass when set: how far a long pass
     * has got, for a front end to show; nonzero stops the pass, which then
     * fails (ERR_RUNTIME) with the cache holding part of it. */
    int (*on_layer)(void *ctx, size_t layers_done, size_t n_layers);
    void *on_layer_ctx;
} Model;

/* Build a model from a validated config: synthetic weights from GSL's
 * mt19937 seeded with cfg->seed (Gaussian, sigma 1/sqrt(fan_in); norms 1),
 * or the tensors of data/weights/<cfg->weights>. Same seed, same bits. An
 * encoder-decoder draws the decoder-only tensors first, in the same order
 * (so they equal a decoder-only model's of the same config), then the
 * encoder's layers, its norm and the cross-attention weights; it takes
 * synthetic weights only. An MLA model (attention = mla) likewise draws the
 * decoder-only tensors first, then per stored layer w_dkv (with W_kr),
 * kv_norm, w_uk, w_uv, w_o (MlaWeights); synthetic weights only.
 * Fails with ERR_RUNTIME when memory runs out or the file is bad. */
int model_init(Model *m, const Config *cfg, const Kernels *kern, Err *e);
/* The same shape as model_init's, every weight 0 and nothing read or drawn:
 * a twin that holds a gradient or an optimizer's moments. */
int model_alloc(Model *m, const Config *cfg, const Kernels *kern, Err *e);
void model_free(Model *m);

/* y[n][out] = x[n][in] . W^T with W the f32 w, or q when q->data is set
 * (then w is not read): the kernels' matmul, or the stored rows through
 * the codecs (model/qmatmul.c), with m->mat_dot by integer dots against x
 * rounded to q8_0. Adds 2*n*in*out to *flops and the bytes of W as stored
 * to ctr->weight_bytes_read. */
void model_matmul(const Model *m, float *y, const float *x, const float *w, const QuantMat *q, size_t n, size_t in,
                  size_t out, uint64_t *flops, Counters *ctr);

/* One of several matrices that multiply the same x (model_matmul_each). */
typedef struct {
    float *y;          /* [n][out] */
    const float *w;    /* [out][in], or NULL with q */
    const QuantMat *q; /* as model_matmul's */
    size_t out;
    uint64_t *flops;   /* its counter */
} MatmulTo;

/* model_matmul of each of k matrices with the same x (Q, K and V; the
 * FFN's gate and up): the same bytes and counts, but a decode step's
 * parts of all k go to the threads in one hand-over, and x is rounded to
 * q8_0 once where integer dots take it. */
void model_matmul_each(const Model *m, const float *x, size_t n, size_t in, const MatmulTo *to, size_t k,
                       Counters *ctr);

/* Give every matrix a checkpoint left stored an f32 copy (and clear its
 * QuantMat), for the code that needs f32 weights: training, export, dump.
 * Nothing to do for a model without stored matrices. ERR_RUNTIME when
 * memory runs out. */
int model_dequantize(Model *m, Err *e);
/* 1 when some matrix is kept as a checkpoint stores it. */
int model_has_stored(const Model *m);
/* 1 when some stored q8_0/q4_0 matrix multiplies by integer dots (mat_dot):
 * its activation is rounded to q8_0 on the way in. */
int model_int_dots(const Model *m);

/* Floats of parameters a config holds in memory (shared layers counted once). */
size_t model_param_floats(const Config *cfg);

/* The cache geometry this model needs for n_seqs sequences, with its
 * kernels' codecs. An MLA model caches one latent row per token and layer:
 * one "KV head" of kv_lora_rank + qk_rope_dim values, K only (k_only). */
KvGeometry model_kv_geometry(const Model *m, size_t n_seqs);
/* The same from a config alone (codec NULL): what a cache of it holds. */
KvGeometry config_kv_geometry(const Config *c, size_t n_seqs);

/* The layer weights layer l uses. */
const LayerWeights *model_layer(const Model *m, size_t l);

/* The shape a weights file of config c records. */
KvwShape model_kvw_shape(const Config *c);
/* A decoder's tensors in the arena's order, named ("embed",
 * "layer0.wq", ..., "unembed"), stored as dtype (norm gains as f32), into
 * t (at most cap); returns how many there are. */
size_t model_tensors(const Model *m, KvwTensor *t, size_t cap, uint32_t dtype);
/* Read a kvscope weights file into m's arena (weights_kvw.c). */
int weights_load_kvw(Model *m, const char *path, Err *e);

/* Load tensors from a text weights file into m's arena (weights_file.c). */
int weights_load_file(Model *m, const char *path, Err *e);

#endif
