/* encdec.h: the encoder-decoder of the encoder-decoder notes, and its two caches.
 *
 * The encoder reads the source once: embeddings, then encoder_layers of
 * bidirectional self-attention (every source token sees every other; RoPE
 * on the source positions) and FFN, then a final norm. Its output is the
 * decoder's "memory", [src_len][d_model].
 *
 * Each decoder layer runs causal self-attention over the target so far,
 * cross-attention from the target to the memory, then FFN. Two caches:
 *   - the self-attention cache grows by one row per step and belongs to one
 *     hypothesis (a sequence of a KvCache: one per beam);
 *   - the cross-attention cache holds Wk . memory and Wv . memory of every
 *     layer. They depend on the source only, so they are computed once and
 *     every beam reads the same rows (CrossCache: one KvCache sequence,
 *     reference counted by the beams that read it, never copied).
 * Without a cache (the encoder-decoder notes' "WITHOUT KV CACHE") every step re-runs the
 * whole target of every beam and recomputes the cross K and V from the
 * memory, per beam and per layer, as a decoder called with (memory, tokens)
 * must; the encoder's output itself is computed once either way (it is the
 * input of the decoder in the encoder-decoder notes, not part of its cache). */
#ifndef KVSCOPE_MODEL_ENCDEC_H
#define KVSCOPE_MODEL_ENCDEC_H

#include <stddef.h>
#include <stdint.h>

#include "kv/cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "stats/counters.h"
#include "util/err.h"

/* The shared cross-attention cache: [n_layers] x 1 sequence x src_len rows,
 * contiguous f32 (exact, so cached and uncached decoding agree). */
typedef struct {
    KvCache *kv;
    size_t refs;      /* beams reading it now */
    size_t peak_refs; /* most beams that read it at once */
    size_t fills;     /* times its K and V were computed: 1 */
} CrossCache;

/* An encoder-decoder run: the encoder's output and the scratch of passes. */
typedef struct {
    const Model *m;
    size_t src_len;
    size_t max_rows;        /* target rows a decoder pass may hold */
    int *src;               /* [src_len] the source token ids */
    float *memory;          /* [src_len][d_model] the encoder's output */
    float *ck, *cv;         /* [src_len][kv_dim] cross K/V of one layer, recomputed (uncached path) */
    ForwardState fs;        /* activations of up to max(src_len, max_rows) token rows */
    uint64_t cross_kv_rows; /* memory rows projected to cross K and V, summed over layers (counted) */
    int encoded;
} EncDec;

/* Prepare a run of model m (architecture encdec) over a source of
 * m->cfg.src_len tokens whose decoder passes hold up to max_rows target
 * rows (cached: beams; uncached: beams x target length). ERR_USAGE when m is
 * not an encoder-decoder, ERR_RUNTIME when memory runs out. */
int encdec_init(EncDec *ed, const Model *m, size_t max_rows, Err *e);
void encdec_free(EncDec *ed);

/* Run the encoder over src [src_len] once; counts its work into ctr. */
int encdec_encode(EncDec *ed, const int *src, Counters *ctr, Err *e);

/* Compute the cross K and V of every layer from the encoder's output into a
 * new CrossCache (refs 0). Call after encdec_encode. */
int cross_cache_build(CrossCache *cc, EncDec *ed, Counters *ctr, Err *e);
void cross_cache_free(CrossCache *cc);
static inline void cross_cache_acquire(CrossCache *cc)
{
    if (++cc->refs > cc->peak_refs)
        cc->peak_refs = cc->refs;
}
static inline void cross_cache_release(CrossCache *cc) { cc->refs--; }

/* Cached decoder pass: beam b feeds tokens[b] at position pos, its
 * self-attention rows living in sequence slots[b] of self (which holds
 * positions 0 .. pos-1 there); cross-attention reads cross.
 *   logits: [n][vocab]
 * The geometry of self: n_layers, n_kv_heads and head_dim of the model,
 * max_seq_len >= pos + 1 (encdec_self_geometry). */
int encdec_decode(EncDec *ed, KvCache *self, const CrossCache *cross, const size_t *slots, const int *tokens,
                  size_t n, size_t pos, float *logits, Counters *ctr, Err *e);

/* Uncached decoder pass over n whole targets of len tokens each
 * (tokens [n][len], from position 0), recomputing every self-attention row
 * and every cross K/V row; logits [n][vocab] of each target's last token. */
int encdec_decode_uncached(EncDec *ed, const int *tokens, size_t n, size_t len, float *logits, Counters *ctr,
                           Err *e);

/* The self-attention cache for n_beams sequences of up to max_seq_len
 * target positions, with the model's codecs. */
KvGeometry encdec_self_geometry(const Model *m, size_t n_beams);

/* Greedy decoding, the plain way: from BOS, feed the argmax (lowest id on a
 * tie) until EOS or max_len tokens. self: a cache of at least 1 sequence
 * (uses sequence 0; dropped at the end), or NULL to recompute everything.
 * out [max_len] receives the tokens (EOS included), *n_out their number. */
int encdec_greedy(const Model *m, const int *src, KvCache *self, size_t max_len, int *out, size_t *n_out, Err *e);

/* The memory of the decoder's caches, computed from the config (f32):
 *   self per beam  = n_layers x n_kv_heads x tgt_len x head_dim x 4 B x 2 (K and V)
 *   cross per beam = the same with src_len (what the notes count, one per beam) */
typedef struct {
    size_t self_per_beam;
    size_t cross_per_beam;
    size_t seed_per_beam; /* self + cross: the encoder-decoder notes' "total per beam" */
    size_t seed_total;    /* width x (self + cross): a cross cache per beam */
    size_t shared_total;  /* width x self + one cross cache: kvscope's sharing */
} EncDecMemory;

int encdec_memory(const Config *c, size_t tgt_len, size_t width, EncDecMemory *out, Err *e);

#endif
