/* encdec.c: the encoder-decoder's passes (see encdec.h). The sublayers are
 * the decoder-only model's (sublayers.h); only cross-attention is new. */
#include "model/encdec.h"

#include <stdlib.h>
#include <string.h>

#include "model/memory.h"
#include "model/sample.h"
#include "model/sublayers.h"

int encdec_init(EncDec *ed, const Model *m, size_t max_rows, Err *e)
{
    const Config *c = &m->cfg;
    memset(ed, 0, sizeof *ed);
    if (c->architecture != ARCH_ENCDEC)
        return err_set(e, ERR_USAGE, "model '%s' is decoder-only; beam search over a source needs an "
                       "encoder-decoder (architecture = encdec, e.g. --model encdec)", c->name);
    ed->m = m;
    ed->src_len = c->src_len;
    /* the scratch serves the encoder (src_len rows, each seeing src_len) and
     * cross-attention (target rows seeing src_len): size its attention
     * buffers for the longer of the two sequences */
    Config scratch = *c;
    if (scratch.max_seq_len < c->src_len)
        scratch.max_seq_len = c->src_len;
    size_t rows = max_rows > c->src_len ? max_rows : c->src_len;
    size_t kv_dim = config_kv_dim(c);
    ed->src = malloc(c->src_len * sizeof *ed->src);
    ed->memory = malloc(c->src_len * c->d_model * sizeof(float));
    ed->ck = malloc(c->src_len * kv_dim * sizeof(float));
    ed->cv = malloc(c->src_len * kv_dim * sizeof(float));
    if (!ed->src || !ed->memory || !ed->ck || !ed->cv) {
        encdec_free(ed);
        return err_set(e, ERR_RUNTIME, "out of memory for an encoder output of %zu tokens", c->src_len);
    }
    if (forward_state_init(&ed->fs, &scratch, rows, 0, e) < 0) {
        encdec_free(ed);
        return -1;
    }
    ed->max_rows = max_rows;
    return 0;
}

void encdec_free(EncDec *ed)
{
    free(ed->src);
    free(ed->memory);
    free(ed->ck);
    free(ed->cv);
    forward_state_free(&ed->fs);
    memset(ed, 0, sizeof *ed);
}

int encdec_encode(EncDec *ed, const int *src, Counters *ctr, Err *e)
{
    const Model *m = ed->m;
    const Config *c = &m->cfg;
    ForwardState *s = &ed->fs;
    const size_t S = ed->src_len;
    memcpy(ed->src, src, S * sizeof *src);
    if (sublayer_embed(m, s, src, S, ctr, e) < 0)
        return err_wrap(e, "source");
    /* one group of S tokens, no cache, every token seeing every other */
    const AttnPass pass = { .n_seqs = 1, .n_new = S, .pos0 = 0, .bidirectional = 1 };
    for (size_t l = 0; l < c->encoder_layers; l++) {
        const LayerWeights *w = &m->enc_layers[l];
        if (sublayer_self_attention(m, s, w, l, &pass, ctr, e) < 0)
            return err_wrap(e, "encoder layer %zu", l);
        sublayer_ffn(m, s, w, S, ctr);
    }
    m->kern->rmsnorm(ed->memory, s->x, m->enc_norm, S, c->d_model, (float)c->norm_eps, ctr);
    ed->encoded = 1;
    return 0;
}

/* ck, cv [S][kv_dim] = Wk . memory, Wv . memory for decoder layer l. */
static void cross_project(EncDec *ed, size_t l, Counters *ctr)
{
    const Model *m = ed->m;
    const Config *c = &m->cfg;
    const CrossWeights *x = &m->cross[l];
    m->kern->matmul(ed->ck, ed->memory, x->wk, ed->src_len, c->d_model, config_kv_dim(c), &ctr->flops_k, ctr);
    m->kern->matmul(ed->cv, ed->memory, x->wv, ed->src_len, c->d_model, config_kv_dim(c), &ctr->flops_v, ctr);
    ed->cross_kv_rows += ed->src_len;
}

int cross_cache_build(CrossCache *cc, EncDec *ed, Counters *ctr, Err *e)
{
    const Model *m = ed->m;
    const Config *c = &m->cfg;
    memset(cc, 0, sizeof *cc);
    if (!ed->encoded)
        return err_set(e, ERR_RUNTIME, "cross cache: run the encoder first");
    KvGeometry geo = { .n_layers = c->n_layers, .n_seqs = 1, .n_kv_heads = c->n_kv_heads,
                       .head_dim = c->head_dim, .max_seq_len = ed->src_len, .codec = m->kern->codec };
    cc->kv = kv_open("contiguous", &geo, e);
    if (!cc->kv)
        return err_wrap(e, "cross cache");
    for (size_t l = 0; l < c->n_layers; l++) {
        cross_project(ed, l, ctr);
        if (kv_append(cc->kv, l, 0, 0, ed->src_len, ed->ck, ed->cv, ctr, e) < 0) {
            cross_cache_free(cc);
            return err_wrap(e, "cross cache layer %zu", l);
        }
    }
    cc->fills = 1;
    return 0;
}

void cross_cache_free(CrossCache *cc)
{
    kv_free(cc->kv);
    memset(cc, 0, sizeof *cc);
}

/* x += Wo . attn(Wq xn, K_cross, V_cross) for the n groups of n_new rows;
 * K/V from cross (shared) or, when cross is NULL, recomputed per group. */
static int cross_attention(EncDec *ed, size_t l, size_t n, size_t n_new, const CrossCache *cross, Counters *ctr,
                           Err *e)
{
    const Model *m = ed->m;
    const Config *c = &m->cfg;
    const Kernels *K = m->kern;
    const CrossWeights *x = &m->cross[l];
    ForwardState *s = &ed->fs;
    const size_t d = c->d_model, hd = c->head_dim, q_dim = config_q_dim(c), kv_dim = config_kv_dim(c);
    const size_t group = c->n_heads / c->n_kv_heads, rows = n * n_new;

    K->rmsnorm(s->xb, s->x, x->norm, rows, d, (float)c->norm_eps, ctr);
    K->matmul(s->q, s->xb, x->wq, rows, d, q_dim, &ctr->flops_q, ctr);
    for (size_t b = 0; b < n; b++) {
        if (!cross) /* what a decoder without a cache does: K and V again from the memory */
            cross_project(ed, l, ctr);
        for (size_t h = 0; h < c->n_kv_heads; h++) {
            size_t nb = 1;
            if (cross) {
                nb = kv_n_blocks(cross->kv, l, 0);
                if (forward_blocks_reserve(s, nb, e) < 0)
                    return -1;
                for (size_t i = 0; i < nb; i++)
                    kv_block(cross->kv, l, 0, h, i, &s->blocks[i]);
            } else {
                s->blocks[0] = (KvBlock){
                    .pos = 0, .n = ed->src_len, .k = ed->ck + h * hd, .v = ed->cv + h * hd,
                    .k_stride = kv_dim * sizeof(float), .v_stride = kv_dim * sizeof(float),
                    .k_fmt = FMT_F32, .v_fmt = FMT_F32,
                };
            }
            const size_t first = b * n_new;
            AttnArgs a = {
                .q = s->q + first * q_dim + h * group * hd, .q_stride = q_dim,
                .out = s->att + first * q_dim + h * group * hd, .out_stride = q_dim,
                .n_q = n_new, .group = group, .head_dim = hd, .bidirectional = 1,
                .blocks = s->blocks, .n_blocks = nb,
                .scores = s->scores, .view = s->view, .view_blocks = s->view_blocks,
            };
            attend(K, m->attend, &a, ctr);
        }
    }
    K->matmul(s->xb, s->att, x->wo, rows, q_dim, d, &ctr->flops_o, ctr);
    for (size_t i = 0; i < rows * d; i++)
        s->x[i] += s->xb[i];
    ctr->flops_other += (uint64_t)rows * d; /* the residual add */
    return 0;
}

/* The decoder's layers over the rows in ed->fs.x, then the logits. */
static int decoder(EncDec *ed, const AttnPass *pass, const CrossCache *cross, float *logits, Counters *ctr, Err *e)
{
    const Model *m = ed->m;
    for (size_t l = 0; l < m->cfg.n_layers; l++) {
        const LayerWeights *w = &m->layers[l];
        if (sublayer_self_attention(m, &ed->fs, w, l, pass, ctr, e) < 0 ||
            cross_attention(ed, l, pass->n_seqs, pass->n_new, cross, ctr, e) < 0)
            return err_wrap(e, "decoder layer %zu", l);
        sublayer_ffn(m, &ed->fs, w, pass->n_seqs * pass->n_new, ctr);
    }
    sublayer_logits(m, &ed->fs, pass->n_seqs, pass->n_new, logits, ctr);
    return 0;
}

int encdec_decode(EncDec *ed, KvCache *self, const CrossCache *cross, const size_t *slots, const int *tokens,
                  size_t n, size_t pos, float *logits, Counters *ctr, Err *e)
{
    const Config *c = &ed->m->cfg;
    if (!ed->encoded || !cross || !cross->kv)
        return err_set(e, ERR_RUNTIME, "decode: run the encoder and build the cross cache first");
    if (n == 0 || n > ed->max_rows)
        return err_set(e, ERR_RUNTIME, "decode: %zu beams, scratch holds %zu", n, ed->max_rows);
    if (pos >= c->max_seq_len || pos >= self->geo.max_seq_len)
        return err_set(e, ERR_USAGE, "target position %zu is beyond max_seq_len %zu", pos, c->max_seq_len);
    if (sublayer_embed(ed->m, &ed->fs, tokens, n, ctr, e) < 0)
        return -1;
    for (size_t b = 0; b < n; b++) /* a paged cache maps (or copies) the page of the new row */
        if (kv_reserve(self, slots[b], pos, tokens + b, 1, ctr, e) < 0)
            return -1;
    const AttnPass pass = { .cache = self, .slots = slots, .n_seqs = n, .n_new = 1, .pos0 = pos };
    return decoder(ed, &pass, cross, logits, ctr, e);
}

int encdec_decode_uncached(EncDec *ed, const int *tokens, size_t n, size_t len, float *logits, Counters *ctr,
                           Err *e)
{
    const Config *c = &ed->m->cfg;
    if (!ed->encoded)
        return err_set(e, ERR_RUNTIME, "decode: run the encoder first");
    if (n == 0 || len == 0 || n * len > ed->max_rows)
        return err_set(e, ERR_RUNTIME, "decode: %zu x %zu target rows, scratch holds %zu", n, len,
                       ed->max_rows);
    if (len > c->max_seq_len)
        return err_set(e, ERR_USAGE, "target position %zu is beyond max_seq_len %zu", len - 1, c->max_seq_len);
    if (sublayer_embed(ed->m, &ed->fs, tokens, n * len, ctr, e) < 0)
        return -1;
    const AttnPass pass = { .n_seqs = n, .n_new = len, .pos0 = 0 };
    return decoder(ed, &pass, NULL, logits, ctr, e);
}

KvGeometry encdec_self_geometry(const Model *m, size_t n_beams)
{
    return model_kv_geometry(m, n_beams);
}

int encdec_greedy(const Model *m, const int *src, KvCache *self, size_t max_len, int *out, size_t *n_out, Err *e)
{
    const Config *c = &m->cfg;
    EncDec ed;
    CrossCache cross = { 0 };
    Counters ctr = { 0 };
    int *seq = NULL;
    float *logits = NULL;
    int rc = -1;
    *n_out = 0;
    if (max_len == 0 || max_len > c->max_seq_len)
        return err_set(e, ERR_USAGE, "greedy: %zu target tokens; model '%s' has max_seq_len %zu", max_len,
                       c->name, c->max_seq_len);
    if (encdec_init(&ed, m, self ? 1 : max_len, e) < 0)
        return -1;
    seq = malloc((max_len + 1) * sizeof *seq);
    logits = malloc(c->vocab * sizeof *logits);
    if (!seq || !logits) {
        err_set(e, ERR_RUNTIME, "out of memory");
        goto done;
    }
    if (encdec_encode(&ed, src, &ctr, e) < 0 || (self && cross_cache_build(&cross, &ed, &ctr, e) < 0))
        goto done;
    seq[0] = c->bos_token;
    const size_t slot = 0;
    for (size_t k = 0; k < max_len; k++) {
        int r = self ? encdec_decode(&ed, self, &cross, &slot, seq + k, 1, k, logits, &ctr, e)
                     : encdec_decode_uncached(&ed, seq, 1, k + 1, logits, &ctr, e);
        if (r < 0)
            goto done;
        int t = sample_greedy(logits, c->vocab);
        seq[k + 1] = out[k] = t;
        *n_out = k + 1;
        if (t == c->eos_token)
            break;
    }
    rc = 0;
done:
    if (self)
        kv_drop(self, 0);
    cross_cache_free(&cross);
    encdec_free(&ed);
    free(seq);
    free(logits);
    return rc;
}

int encdec_memory(const Config *c, size_t tgt_len, size_t width, EncDecMemory *out, Err *e)
{
    KvShape shape = memory_shape(c);
    KvBytes self, cross;
    memset(out, 0, sizeof *out);
    if (memory_bytes(c, &shape, FMT_F32, tgt_len, 1, &self, e) < 0 ||
        memory_bytes(c, &shape, FMT_F32, c->src_len, 1, &cross, e) < 0)
        return -1;
    out->self_per_beam = self.total;
    out->cross_per_beam = cross.total;
    out->seed_per_beam = self.total + cross.total;
    out->seed_total = width * out->seed_per_beam;
    out->shared_total = width * self.total + cross.total;
    return 0;
}
