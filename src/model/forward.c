#include "model/forward.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/attend_split.h"
#include "model/mla.h"
#include "model/sublayers.h"
#include "util/lines.h"
#include "util/pool.h"

int forward_state_init(ForwardState *s, const Config *c, size_t max_rows, int keep_probs, Err *e)
{
    memset(s, 0, sizeof *s);
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim;
    size_t group = c->n_heads / c->n_kv_heads;
    s->max_rows = max_rows;
    s->x = lines_alloc(max_rows * d * sizeof(float));
    s->xb = lines_alloc(max_rows * d * sizeof(float));
    s->q = lines_alloc(max_rows * q * sizeof(float));
    s->k = lines_alloc(max_rows * kv * sizeof(float));
    s->v = lines_alloc(max_rows * kv * sizeof(float));
    s->att = lines_alloc(max_rows * q * sizeof(float));
    s->hb = lines_alloc(max_rows * f * sizeof(float));
    s->hb2 = lines_alloc(max_rows * f * sizeof(float));
    s->scores = lines_alloc(group * c->max_seq_len * sizeof(float)); /* flash's tiles are never longer */
    s->view = lines_alloc(2 * c->max_seq_len * c->head_dim * sizeof(float));
    s->observed = lines_alloc(group * c->max_seq_len * sizeof(float));
    s->observed_q = 1;
    s->chan_q = lines_alloc(group * c->head_dim * sizeof(float));
    s->q8 = lines_alloc(group * format_row_bytes(FMT_Q8_0, c->head_dim));
    s->iv = lines_alloc(attend_iv_bytes(group, c->head_dim) + 1); /* + 1: never 0 bytes */
    s->blocks_cap = 4;
    s->blocks = malloc(s->blocks_cap * sizeof *s->blocks);
    s->view_blocks = malloc(s->blocks_cap * sizeof *s->view_blocks);
    if (keep_probs) {
        s->max_q = max_rows;
        s->probs = calloc(c->n_layers * c->n_heads * max_rows * c->max_seq_len, sizeof(float));
        s->att_layers = calloc(c->n_layers * max_rows * config_q_dim(c), sizeof(float));
    }
    if (!s->x || !s->xb || !s->q || !s->k || !s->v || !s->att || !s->hb || !s->hb2 || !s->scores || !s->view || !s->observed || !s->chan_q || !s->q8 || !s->iv ||
        !s->blocks || !s->view_blocks || (keep_probs && (!s->probs || !s->att_layers))) {
        forward_state_free(s);
        return err_set(e, ERR_RUNTIME, "out of memory for activations of %zu tokens", max_rows);
    }
    if (c->attention == ATTN_MLA && mla_state_init(&s->mla, c, max_rows, e) < 0) { /* model/mla.c */
        forward_state_free(s);
        return -1;
    }
    return 0;
}

void forward_state_free(ForwardState *s)
{
    free(s->x);
    free(s->xb);
    free(s->q);
    free(s->k);
    free(s->v);
    free(s->att);
    free(s->hb);
    free(s->hb2);
    free(s->scores);
    free(s->view);
    free(s->observed);
    free(s->chan_q);
    free(s->q8);
    free(s->iv);
    free(s->blocks);
    free(s->view_blocks);
    free(s->probs);
    free(s->att_layers);
    mla_state_free(s->mla);
    memset(s, 0, sizeof *s);
}

int forward_blocks_reserve(ForwardState *s, size_t n, Err *e)
{
    if (n <= s->blocks_cap)
        return 0;
    KvBlock *grown = realloc(s->blocks, n * sizeof *grown);
    if (grown)
        s->blocks = grown;
    KvBlock *grown_view = grown ? realloc(s->view_blocks, n * sizeof *grown_view) : NULL;
    if (!grown_view)
        return err_set(e, ERR_RUNTIME, "out of memory for %zu cache blocks", n);
    s->view_blocks = grown_view;
    s->blocks_cap = n;
    return 0;
}

/* The blocks attention reads for (layer, cache sequence seq, kv head h) of
 * row group b: the cache's, or, uncached, one block over the K/V rows just
 * computed (rows of a group are token-major [n_new][kv_dim], so a head's
 * rows are kv_dim floats apart). */
static int gather_blocks(const Model *m, ForwardState *s, const KvCache *cache, size_t layer, size_t seq, size_t b,
                         size_t h, size_t n_new, size_t pos0, Err *e)
{
    const size_t hd = m->cfg.head_dim, kv_dim = config_kv_dim(&m->cfg);
    if (!cache || (m->bugs & BUG_IGNORE_APPEND)) {
        size_t first = b * n_new;
        s->blocks[0] = (KvBlock){
            .pos = pos0, .n = n_new,
            .k = s->k + first * kv_dim + h * hd, .v = s->v + first * kv_dim + h * hd,
            .k_stride = kv_dim * sizeof(float), .v_stride = kv_dim * sizeof(float),
            .k_fmt = FMT_F32, .v_fmt = FMT_F32,
        };
        return 1;
    }
    size_t n = kv_n_blocks(cache, layer, seq);
    if (forward_blocks_reserve(s, n, e) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        kv_block(cache, layer, seq, h, i, &s->blocks[i]);
    return (int)n;
}

/* Rows a query at qpos saw: every position it may see, block by block (a
 * block is a run of positions, so this is a count per block, not a scan). */
static size_t rows_seen(const AttnArgs *a, size_t qpos)
{
    size_t n = 0;
    for (size_t b = 0; b < a->n_blocks; b++) {
        size_t lo = a->blocks[b].pos, hi = lo + a->blocks[b].n; /* positions [lo, hi) */
        if (!a->bidirectional) {
            size_t first = (a->window && qpos + 1 > a->window) ? qpos + 1 - a->window : 0;
            lo = lo > first ? lo : first;
            hi = hi < qpos + 1 ? hi : qpos + 1;
        }
        n += hi > lo ? hi - lo : 0;
    }
    return n;
}

/* How many of the pass's last queries the cache observes (cache.h's
 * observe_queries); 0 when it observes none. */
static size_t observed_queries(const KvCache *cache, const Config *c, size_t n_new)
{
    if (!cache || !cache->ops->observe)
        return 0;
    size_t nq = cache->ops->observe_queries ? cache->ops->observe_queries(cache, n_new) : 1;
    if (nq > 1 && c->sliding_window) /* its earlier queries' rows start elsewhere */
        nq = 1;
    return nq < n_new ? nq : n_new;
}

/* Room in s->observed for the weights of nq queries. */
static int observed_reserve(ForwardState *s, const Config *c, size_t nq, Err *e)
{
    if (nq <= s->observed_q)
        return 0;
    const size_t group = c->n_heads / c->n_kv_heads;
    float *grown = realloc(s->observed, nq * group * c->max_seq_len * sizeof(float));
    if (!grown)
        return err_set(e, ERR_RUNTIME, "out of memory for the attention weights of %zu queries", nq);
    s->observed = grown;
    s->observed_q = nq;
    return 0;
}

/* Self-attention of one layer for every group: append, then attend. */
static int attention(const Model *m, ForwardState *s, size_t layer, const AttnPass *p, Counters *ctr, Err *e)
{
    const Config *c = &m->cfg;
    const size_t hd = c->head_dim, q_dim = config_q_dim(c), kv_dim = config_kv_dim(c);
    const size_t group = c->n_heads / c->n_kv_heads, n_new = p->n_new, pos0 = p->pos0;
    KvCache *cache = p->cache;
    /* a cache that learns from attention (heavy hitters, SnapKV's window) gets the last nq queries' weights */
    const size_t nq = observed_queries(cache, c, n_new);
    const float *sink = model_layer(m, layer)->attn_sink; /* [n_heads] or NULL */
    if (observed_reserve(s, c, nq, e) < 0)
        return -1;
    for (size_t b = 0; b < p->n_seqs; b++) {
        const size_t first = b * n_new, seq = p->slots ? p->slots[b] : b;
        if (cache && kv_append(cache, layer, seq, pos0, n_new, s->k + first * kv_dim, s->v + first * kv_dim,
                               ctr, e) < 0)
            return -1;
        for (size_t h = 0; h < c->n_kv_heads; h++) {
            int nb = gather_blocks(m, s, cache, layer, seq, b, h, n_new, pos0, e);
            if (nb < 0)
                return -1;
            float *probs = (s->probs && b == 0)
                               ? s->probs + (layer * c->n_heads + h * group) * s->max_q * c->max_seq_len
                               : NULL;
            const int observe = nq > 0;
            size_t probs_q_stride = c->max_seq_len, probs_g_stride = s->max_q * c->max_seq_len, probs_first = 0;
            if (observe && !probs) /* only the last nq queries write, query-major */
                probs = s->observed, probs_q_stride = group * c->max_seq_len, probs_g_stride = c->max_seq_len,
                probs_first = n_new - nq;
            AttnArgs a = {
                .q = s->q + first * q_dim + h * group * hd, .q_stride = q_dim,
                .out = s->att + first * q_dim + h * group * hd, .out_stride = q_dim,
                .n_q = n_new, .group = group, .head_dim = hd, .window = c->sliding_window,
                .pos0 = (cache && (m->bugs & BUG_MASK_IN_DECODE) && n_new == 1) ? 0 : pos0,
                .bidirectional = p->bidirectional,
                .blocks = s->blocks, .n_blocks = (size_t)nb,
                .scores = s->scores, .view = s->view, .view_blocks = s->view_blocks,
                .probs = probs, .probs_q_stride = probs_q_stride, .probs_g_stride = probs_g_stride,
                .probs_first = probs_first,
                .bias = p->bidirectional ? NULL : m->bias, .chan_q = s->chan_q,
                .sink = sink ? sink + h * group : NULL,
                .q8 = m->int_dot ? s->q8 : NULL,
                .iv = m->int_dot ? s->iv : NULL,
            };
            /* flash never holds every weight: a cache that observes them gets the naive form */
            if (m->attend == ATTEND_FLASH && !observe && n_new == 1 && pool_threads() > 1)
                attend_split(m->kern, &a, pool_threads(), ctr); /* split-K: the query's rows across the threads */
            else
                attend(m->kern, observe && m->attend == ATTEND_FLASH ? ATTEND_NAIVE : m->attend, &a, ctr);
            const size_t seen = rows_seen(&a, a.pos0 + n_new - 1);
            if (b == 0 && h == 0) {
                s->seen_min = (layer == 0 || seen < s->seen_min) ? seen : s->seen_min;
                s->seen_max = (layer == 0 || seen > s->seen_max) ? seen : s->seen_max;
            }
            if (observe) /* the first of the nq queries is query n_new - nq of the pass */
                cache->ops->observe(cache, layer, seq, h, probs + (n_new - nq - probs_first) * probs_q_stride,
                                    probs_q_stride, probs_g_stride, group, nq, seen);
        }
    }
    return 0;
}

int sublayer_embed(const Model *m, ForwardState *s, const int *tokens, size_t rows, Counters *ctr, Err *e)
{
    const Config *c = &m->cfg;
    const size_t d = c->d_model;
    for (size_t r = 0; r < rows; r++) {
        if (tokens[r] < 0 || (size_t)tokens[r] >= c->vocab)
            return err_set(e, ERR_USAGE, "token id %d is outside the vocabulary 0..%zu", tokens[r],
                           c->vocab - 1);
        memcpy(s->x + r * d, m->embed + (size_t)tokens[r] * d, d * sizeof(float));
    }
    ctr->tokens_projected += rows;
    return 0;
}

int sublayer_self_attention(const Model *m, ForwardState *s, const LayerWeights *w, size_t layer,
                            const AttnPass *p, Counters *ctr, Err *e)
{
    const Config *c = &m->cfg;
    const Kernels *K = m->kern;
    const size_t d = c->d_model, q_dim = config_q_dim(c), kv_dim = config_kv_dim(c);
    const size_t rows = p->n_seqs * p->n_new, n_new = p->n_new, pos0 = p->pos0;
    KvCache *cache = p->cache;

    K->rmsnorm(s->xb, s->x, w->attn_norm, rows, d, (float)c->norm_eps, ctr);
    const MatmulTo qkv[] = { { s->q, w->wq, &w->q_wq, q_dim, &ctr->flops_q },
                             { s->k, w->wk, &w->q_wk, kv_dim, &ctr->flops_k },
                             { s->v, w->wv, &w->q_wv, kv_dim, &ctr->flops_v } };
    model_matmul_each(m, s->xb, rows, d, qkv, 3, ctr);
    const int wrong_pos = (m->bugs & BUG_ROPE_POSITION) && cache && pos0 > 0;
    const int rotate_v = (m->bugs & BUG_ROPE_ON_V) && cache;
    for (size_t r = 0; r < rows; r++) {
        size_t pos = wrong_pos ? r % n_new : pos0 + r % n_new;
        K->rope(s->q + r * q_dim, c->n_heads, c->head_dim, pos, c->rope_theta, ctr);
        K->rope(s->k + r * kv_dim, c->n_kv_heads, c->head_dim, pos, c->rope_theta, ctr);
        if (rotate_v) /* correct code never rotates V */
            K->rope(s->v + r * kv_dim, c->n_kv_heads, c->head_dim, pos, c->rope_theta, ctr);
    }
    if (attention(m, s, layer, p, ctr, e) < 0)
        return -1;
    if (s->att_layers) /* sequence 0's rows come first */
        memcpy(s->att_layers + layer * s->max_q * q_dim, s->att, n_new * q_dim * sizeof(float));
    model_matmul(m, s->xb, s->att, w->wo, &w->q_wo, rows, q_dim, d, &ctr->flops_o, ctr);
    for (size_t i = 0; i < rows * d; i++)
        s->x[i] += s->xb[i];
    ctr->flops_other += (uint64_t)rows * d; /* the residual add */
    return 0;
}

void sublayer_ffn(const Model *m, ForwardState *s, const LayerWeights *w, size_t rows, Counters *ctr)
{
    const Config *c = &m->cfg;
    const Kernels *K = m->kern;
    const size_t d = c->d_model, f = c->ffn_dim;
    K->rmsnorm(s->xb, s->x, w->ffn_norm, rows, d, (float)c->norm_eps, ctr);
    const MatmulTo gate_up[] = { { s->hb, w->w_gate, &w->q_gate, f, &ctr->flops_ffn },
                                 { s->hb2, w->w_up, &w->q_up, f, &ctr->flops_ffn } };
    model_matmul_each(m, s->xb, rows, d, gate_up, 2, ctr);
    K->swiglu(s->hb, s->hb, s->hb2, rows * f, ctr);
    model_matmul(m, s->xb, s->hb, w->w_down, &w->q_down, rows, f, d, &ctr->flops_ffn, ctr);
    for (size_t i = 0; i < rows * d; i++)
        s->x[i] += s->xb[i];
    ctr->flops_other += (uint64_t)rows * d; /* the residual add */
}

void sublayer_logits(const Model *m, ForwardState *s, size_t n_seqs, size_t n_new, float *logits, Counters *ctr)
{
    const Config *c = &m->cfg;
    const size_t d = c->d_model;
    for (size_t b = 0; b < n_seqs; b++) {
        const float *last = s->x + (b * n_new + n_new - 1) * d;
        m->kern->rmsnorm(s->xb, last, m->final_norm, 1, d, (float)c->norm_eps, ctr);
        model_matmul(m, logits + b * c->vocab, s->xb, m->unembed, &m->q_unembed, 1, d, c->vocab, &ctr->flops_other, ctr);
    }
}

/* The position a shifting cache runs a pass at: the text's minus what it
 * discarded (cache.h's pos_shift), the same for every sequence of a pass
 * (they share one pos0). */
static int cache_position(const KvCache *cache, const size_t *slots, size_t n_seqs, size_t pos0, size_t *at, Err *e)
{
    const size_t d = kv_pos_shift(cache, slots ? slots[0] : 0);
    for (size_t b = 1; b < n_seqs; b++)
        if (kv_pos_shift(cache, slots ? slots[b] : b) != d)
            return err_set(e, ERR_RUNTIME, "forward: the sequences of one pass sit at different cache positions "
                           "(shifted by %zu and %zu)", d, kv_pos_shift(cache, slots ? slots[b] : b));
    *at = pos0 - d;
    return 0;
}

int model_forward(const Model *m, ForwardState *s, KvCache *cache, const int *tokens, size_t n_seqs,
                  size_t n_new, size_t pos0, float *logits, Counters *ctr, Err *e)
{
    return model_forward_slots(m, s, cache, NULL, tokens, n_seqs, n_new, pos0, logits, ctr, e);
}

int model_forward_slots(const Model *m, ForwardState *s, KvCache *cache, const size_t *slots, const int *tokens,
                        size_t n_seqs, size_t n_new, size_t pos0, float *logits, Counters *ctr, Err *e)
{
    const Config *c = &m->cfg;
    const size_t rows = n_seqs * n_new;

    if (c->architecture != ARCH_DECODER)
        return err_set(e, ERR_USAGE, "model '%s' is an encoder-decoder; `kvscope run --model %s --beams W` "
                       "runs it", c->name, c->name);
    if (rows == 0 || rows > s->max_rows)
        return err_set(e, ERR_RUNTIME, "forward: %zu token rows, scratch holds %zu", rows, s->max_rows);
    if (!cache && pos0 != 0)
        return err_set(e, ERR_RUNTIME, "forward without a cache must start at position 0");
    const int shifts = cache && kv_shifts(cache); /* its positions are checked once it has made room */
    if (!shifts && pos0 + n_new > c->max_seq_len)
        return err_set(e, ERR_USAGE, "position %zu is beyond max_seq_len %zu", pos0 + n_new - 1,
                       c->max_seq_len);

    s->seen_min = s->seen_max = 0;
    if (sublayer_embed(m, s, tokens, rows, ctr, e) < 0)
        return -1;
    for (size_t b = 0; cache && b < n_seqs; b++) /* let a paged cache map pages before the layers write */
        if (kv_reserve(cache, slots ? slots[b] : b, pos0, tokens + b * n_new, n_new, ctr, e) < 0)
            return -1;
    size_t at = pos0; /* the cache's position of the pass's first token: RoPE, append and attention use it */
    if (shifts && cache_position(cache, slots, n_seqs, pos0, &at, e) < 0)
        return -1;
    if (at + n_new > c->max_seq_len)
        return err_set(e, ERR_USAGE, "position %zu (text position %zu) is beyond max_seq_len %zu", at + n_new - 1,
                       pos0 + n_new - 1, c->max_seq_len);

    const AttnPass pass = { .cache = cache, .slots = slots, .n_seqs = n_seqs, .n_new = n_new, .pos0 = at };
    for (size_t l = 0; l < c->n_layers; l++) {
        const LayerWeights *w = model_layer(m, l);
        int rc = c->attention == ATTN_MLA ? sublayer_mla_attention(m, s, l, &pass, ctr, e) /* model/mla.c */
                                          : sublayer_self_attention(m, s, w, l, &pass, ctr, e);
        if (rc < 0)
            return err_wrap(e, "layer %zu", l);
        sublayer_ffn(m, s, w, rows, ctr);
        if (m->on_layer && m->on_layer(m->on_layer_ctx, l + 1, c->n_layers))
            return err_set(e, ERR_RUNTIME, "the pass was stopped after layer %zu of %zu", l + 1, c->n_layers);
    }

    /* logits of each sequence's last token only: the others are not needed */
    if (logits)
        sublayer_logits(m, s, n_seqs, n_new, logits, ctr);
    return 0;
}
