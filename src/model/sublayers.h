/* sublayers.h: the pieces a forward pass is made of, shared by the
 * decoder-only model (forward.c) and the encoder-decoder (encdec.c).
 *
 * Each works on the token rows of a ForwardState: s->x [rows][d_model] is
 * the residual stream, the rest is scratch. The rows are n_seqs groups of
 * n_new tokens, group-major (row b * n_new + t is token t of group b). */
#ifndef KVSCOPE_MODEL_SUBLAYERS_H
#define KVSCOPE_MODEL_SUBLAYERS_H

#include <stddef.h>

#include "kv/cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "stats/counters.h"
#include "util/err.h"

/* Where one self-attention sublayer reads and writes its K and V. */
typedef struct {
    KvCache *cache;       /* NULL: attend over the K/V rows just computed (uncached; an encoder) */
    const size_t *slots;  /* cache sequence of each group (beam search); NULL = group b is sequence b */
    size_t n_seqs, n_new; /* groups, tokens per group */
    size_t pos0;          /* absolute position of each group's first token */
    int bidirectional;    /* 1: every token sees every token of its group (an encoder); 0: causal */
} AttnPass;

/* s->x[r] = embed[tokens[r]] for r < rows; adds rows to tokens_projected.
 * Fails (ERR_USAGE) on a token id outside the vocabulary. */
int sublayer_embed(const Model *m, ForwardState *s, const int *tokens, size_t rows, Counters *ctr, Err *e);

/* x += Wo . attn(rope(Wq xn), rope(Wk xn), Wv xn), xn = rmsnorm(x): the new
 * K/V rows go into p->cache (layer `layer`) when there is one. The model's
 * pitfalls (m->bugs) act here, on the cached path only. */
int sublayer_self_attention(const Model *m, ForwardState *s, const LayerWeights *w, size_t layer,
                            const AttnPass *p, Counters *ctr, Err *e);

/* x += W_down . (silu(W_gate xn) * W_up xn), xn = rmsnorm(x), over rows. */
void sublayer_ffn(const Model *m, ForwardState *s, const LayerWeights *w, size_t rows, Counters *ctr);

/* logits[b] = unembed . rmsnorm(x of group b's last token), b < n_seqs:
 * [n_seqs][vocab]. */
void sublayer_logits(const Model *m, ForwardState *s, size_t n_seqs, size_t n_new, float *logits, Counters *ctr);

/* Make room for n blocks in s->blocks and s->view_blocks. */
int forward_blocks_reserve(ForwardState *s, size_t n, Err *e);

#endif
