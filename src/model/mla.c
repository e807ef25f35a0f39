/* mla.c: multi-head latent attention, its two read paths (mla.h). */
#include "model/mla.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/mla_state.h"

double mla_tile_hit_rate(const MlaTileStats *t)
{
    return t->lookups ? (double)t->hits / (double)t->lookups : 0.0;
}

/* --- state ---------------------------------------------------------------- */

int mla_state_init(MlaState **out, const Config *c, size_t max_rows, Err *e)
{
    *out = NULL;
    MlaState *st = calloc(1, sizeof *st);
    if (!st)
        return err_set(e, ERR_RUNTIME, "MLA: out of memory");
    st->H = c->n_heads, st->r = c->kv_lora_rank, st->p = c->qk_rope_dim;
    st->dn = c->qk_nope_dim, st->dv = c->v_head_dim, st->lat = st->r + st->p, st->max_rows = max_rows;
    const size_t H = st->H, qw = st->lat > st->dn + st->p ? st->lat : st->dn + st->p;
    const size_t aw = st->r > st->dv ? st->r : st->dv, dw = H > max_rows ? H : max_rows;
    st->lat_rows = malloc(max_rows * st->lat * sizeof(float));
    st->qx = malloc(max_rows * H * qw * sizeof(float));
    st->tmp = malloc(H * max_rows * st->r * sizeof(float));
    st->acc = malloc(max_rows * H * aw * sizeof(float));
    st->m = malloc(max_rows * H * sizeof(float));
    st->l = malloc(max_rows * H * sizeof(float));
    st->sc = malloc(H * MLA_TILE_ROWS * sizeof(float));
    st->dots = malloc(dw * sizeof(float));
    st->row = malloc(st->lat * sizeof(float));
    st->cbuf = malloc(MLA_TILE_ROWS * st->r * sizeof(float));
    st->att = malloc(max_rows * H * st->dv * sizeof(float));
    st->seen = malloc(max_rows * sizeof(size_t));
    st->chunks_cap = 4;
    st->chunks = malloc(st->chunks_cap * sizeof *st->chunks);
    if (!st->lat_rows || !st->qx || !st->tmp || !st->acc || !st->m || !st->l || !st->sc || !st->dots || !st->row ||
        !st->cbuf || !st->att || !st->seen || !st->chunks) {
        mla_state_free(st);
        return err_set(e, ERR_RUNTIME, "MLA: out of memory for the scratch of %zu token rows", max_rows);
    }
    *out = st;
    return 0;
}

void mla_state_free(MlaState *st)
{
    if (!st)
        return;
    free(st->lat_rows);
    free(st->qx);
    free(st->tmp);
    free(st->acc);
    free(st->m);
    free(st->l);
    free(st->sc);
    free(st->dots);
    free(st->row);
    free(st->cbuf);
    free(st->att);
    free(st->seen);
    free(st->chunks);
    free(st->tiles);
    free(st->tile_mem);
    free(st);
}

const MlaStats *mla_state_stats(const MlaState *st)
{
    return st ? &st->stats : NULL;
}

/* --- one pass ------------------------------------------------------------- */

/* What one group (sequence) of a pass attends with. */
typedef struct {
    const Model *m;
    const MlaWeights *a;
    const KvCache *cache; /* for the next layer's prefetch; NULL uncached */
    size_t layer, seq;
    int use_lru;
    const float *q;   /* [n_q][H * (dn + p)] the group's queries, RoPE applied */
    size_t n_q, pos0;
    float *out;       /* [n_q][H * dv] */
    float *probs;     /* sequence 0's attention weights (ForwardState.probs layout), or NULL */
    size_t probs_q_stride, probs_h_stride;
    size_t n_chunks;
} Group;

static int chunks_reserve(MlaState *st, size_t n, Err *e)
{
    if (n <= st->chunks_cap)
        return 0;
    size_t cap = st->chunks_cap;
    while (cap < n)
        cap *= 2;
    MlaChunk *grown = realloc(st->chunks, cap * sizeof *grown);
    if (!grown)
        return err_set(e, ERR_RUNTIME, "MLA: out of memory for %zu chunks", n);
    st->chunks = grown;
    st->chunks_cap = cap;
    return 0;
}

/* Cut a block into chunks that each stay inside one tile window. */
static int add_block(MlaState *st, size_t *n, const KvBlock *blk, Err *e)
{
    for (size_t pos = blk->pos, end = blk->pos + blk->n; pos < end;) {
        size_t stop = (pos / MLA_TILE_ROWS + 1) * MLA_TILE_ROWS;
        if (stop > end)
            stop = end;
        if (chunks_reserve(st, *n + 1, e) < 0)
            return -1;
        st->chunks[(*n)++] = (MlaChunk){ .pos = pos, .n = stop - pos,
                                         .k = (const unsigned char *)blk->k + (pos - blk->pos) * blk->k_stride,
                                         .stride = blk->k_stride, .fmt = blk->k_fmt };
        pos = stop;
    }
    return 0;
}

/* The chunks of (layer, seq): the cache's blocks, or, uncached, the rows
 * this pass computed. */
static int gather_chunks(MlaState *st, const KvCache *cache, size_t layer, size_t seq, const float *lat, size_t n_new,
                         size_t pos0, size_t *n_out, Err *e)
{
    size_t n = 0;
    if (!cache) {
        KvBlock blk = { .pos = pos0, .n = n_new, .k = lat, .v = lat, .k_stride = st->lat * sizeof(float),
                        .v_stride = st->lat * sizeof(float), .k_fmt = FMT_F32, .v_fmt = FMT_F32 };
        if (add_block(st, &n, &blk, e) < 0)
            return -1;
    } else {
        for (size_t i = 0; i < kv_n_blocks(cache, layer, seq); i++) {
            KvBlock blk;
            kv_block(cache, layer, seq, 0, i, &blk);
            if (add_block(st, &n, &blk, e) < 0)
                return -1;
        }
    }
    *n_out = n;
    return 0;
}

/* Rows [*lo, *hi) of a chunk a query at qpos sees: causal, and within the
 * model's sliding window W when it has one. */
static void visible(const MlaChunk *ch, size_t qpos, size_t window, size_t *lo, size_t *hi)
{
    size_t first = (window && qpos + 1 > window) ? qpos + 1 - window : 0;
    size_t l = first > ch->pos ? first - ch->pos : 0;
    size_t h = qpos + 1 > ch->pos ? qpos + 1 - ch->pos : 0;
    if (h > ch->n)
        h = ch->n;
    if (l > h)
        l = h;
    *lo = l, *hi = h;
}

/* Prefetch bookkeeping for chunk i: it arrives; the next one (or the next
 * layer's first, from the cache) is requested. */
static void prefetch_step(MlaState *st, const Group *g, size_t i, int decompress)
{
    const MlaChunk *ch = &st->chunks[i];
    mla_prefetch_arrive(st, ch->k);
    MlaChunk next;
    size_t layer = g->layer;
    if (i + 1 < g->n_chunks) {
        next = st->chunks[i + 1];
    } else if (g->cache && layer + 1 < g->m->cfg.n_layers && kv_n_blocks(g->cache, layer + 1, g->seq) > 0) {
        KvBlock blk;
        kv_block(g->cache, layer + 1, g->seq, 0, 0, &blk);
        size_t stop = (blk.pos / MLA_TILE_ROWS + 1) * MLA_TILE_ROWS;
        next = (MlaChunk){ .pos = blk.pos, .n = (blk.pos + blk.n < stop ? blk.pos + blk.n : stop) - blk.pos,
                           .k = blk.k, .stride = blk.k_stride, .fmt = blk.k_fmt };
        layer++;
    } else {
        return;
    }
    int skip = decompress && g->use_lru && mla_tiles_holds(st, layer, g->seq, next.pos, next.fmt, next.n);
    mla_prefetch_request(st, next.k, next.n * next.stride, skip);
}

/* Fold n new scores s of one head into its running max m, sum l and
 * accumulator acc[len]: s becomes the unnormalized weights exp(s - m). */
static void fold(const Kernels *K, float *s, size_t n, float *m, float *l, float *acc, size_t len)
{
    float mx = -INFINITY;
    for (size_t i = 0; i < n; i++)
        mx = s[i] > mx ? s[i] : mx;
    float m_new = mx > *m ? mx : *m;
    float corr = expf(*m - m_new); /* 0 on the first rows: m = -inf */
    if (corr != 1.0f)
        for (size_t i = 0; i < len; i++)
            acc[i] *= corr;
    *l = *l * corr + K->exp_sum(s, n, m_new);
    *m = m_new;
}

static void start_queries(MlaState *st, size_t n_q, size_t acc_len)
{
    memset(st->acc, 0, n_q * st->H * acc_len * sizeof(float));
    for (size_t i = 0; i < n_q * st->H; i++)
        st->m[i] = -INFINITY, st->l[i] = 0.0f;
    memset(st->seen, 0, n_q * sizeof(size_t));
}

/* Keep the raw scores of query t over rows [lo, hi) of a chunk, for probs. */
static void keep_scores(const MlaState *st, const Group *g, size_t t, size_t nv)
{
    for (size_t h = 0; h < st->H; h++)
        memcpy(g->probs + t * g->probs_q_stride + h * g->probs_h_stride + st->seen[t], st->sc + h * MLA_TILE_ROWS,
               nv * sizeof(float));
}

/* Turn the kept raw scores into softmax weights with the final m and l. */
static void finish_probs(const MlaState *st, const Group *g)
{
    for (size_t t = 0; t < g->n_q; t++)
        for (size_t h = 0; h < st->H; h++) {
            float *pr = g->probs + t * g->probs_q_stride + h * g->probs_h_stride;
            float m = st->m[t * st->H + h], inv = 1.0f / st->l[t * st->H + h];
            for (size_t j = 0; j < st->seen[t]; j++)
                pr[j] = expf(pr[j] - m) * inv;
        }
}

/* Up-project rows [from, ch->n) of a chunk into tile t: decode each latent
 * row, split c_kv from k_rope, then K_nope = c W_uk^T, V = c W_uv^T. */
static void decompress_rows(MlaState *st, const Group *g, const MlaChunk *ch, MlaTile *t, size_t from, Counters *ctr)
{
    const Kernels *K = g->m->kern;
    const size_t H = st->H, r = st->r, p = st->p, n = ch->n - from;
    const size_t row_bytes = format_row_bytes(ch->fmt, st->lat);
    for (size_t j = 0; j < n; j++) {
        K->codec[ch->fmt].dequantize(st->row, ch->k + (from + j) * ch->stride, st->lat);
        memcpy(st->cbuf + j * r, st->row, r * sizeof(float));
        memcpy(t->k_rope + (from + j) * p, st->row + r, p * sizeof(float));
    }
    K->matmul(t->k_nope + from * H * st->dn, st->cbuf, g->a->w_uk, n, r, H * st->dn, &ctr->flops_k, ctr);
    K->matmul(t->v + from * H * st->dv, st->cbuf, g->a->w_uv, n, r, H * st->dv, &ctr->flops_v, ctr);
    t->rows = ch->n;
    ctr->kv_bytes_read += n * row_bytes;
    ctr->view_bytes += n * (H * (st->dn + st->dv) + p) * sizeof(float); /* the tile written */
    st->stats.tiles.rows_decompressed += n;
}

/* The MLA notes' way: decompress each chunk to per-head K and V (through the
 * tile LRU), then attend as usual. */
static void attend_decompress(MlaState *st, const Group *g, Counters *ctr)
{
    const Kernels *K = g->m->kern;
    const FormatOps *f32 = &K->codec[FMT_F32];
    const size_t H = st->H, dn = st->dn, p = st->p, dv = st->dv, qd = dn + p, T = MLA_TILE_ROWS;
    const float scale = 1.0f / sqrtf((float)qd);
    float *qn = st->qx, *qr = st->qx + g->n_q * H * dn; /* [n_q][H][dn], [n_q][H][p], scaled */
    for (size_t t = 0; t < g->n_q; t++)
        for (size_t h = 0; h < H; h++) {
            const float *src = g->q + t * H * qd + h * qd;
            for (size_t i = 0; i < dn; i++)
                qn[(t * H + h) * dn + i] = src[i] * scale;
            for (size_t i = 0; i < p; i++)
                qr[(t * H + h) * p + i] = src[dn + i] * scale;
        }
    ctr->flops_other += g->n_q * H * qd;
    start_queries(st, g->n_q, dv);

    for (size_t c = 0; c < g->n_chunks; c++) {
        const MlaChunk *ch = &st->chunks[c];
        prefetch_step(st, g, c, 1);
        MlaTile *tile = mla_tiles_get(st, g->use_lru, g->layer, g->seq, ch->pos, ch->fmt);
        size_t reuse = tile->rows < ch->n ? tile->rows : ch->n;
        st->stats.tiles.rows_reused += reuse;
        if (reuse < ch->n)
            decompress_rows(st, g, ch, tile, reuse, ctr);
        for (size_t t = 0; t < g->n_q; t++) {
            size_t lo, hi;
            visible(ch, g->pos0 + t, g->m->cfg.sliding_window, &lo, &hi);
            if (lo == hi)
                continue;
            const size_t nv = hi - lo;
            for (size_t j = lo; j < hi; j++) { /* the shared RoPE key: one row serves every head */
                f32->dot(st->dots, qr + t * H * p, H, tile->k_rope + j * p, p);
                for (size_t h = 0; h < H; h++)
                    st->sc[h * T + j - lo] = st->dots[h];
            }
            for (size_t h = 0; h < H; h++)
                for (size_t j = lo; j < hi; j++) {
                    float d;
                    f32->dot(&d, qn + (t * H + h) * dn, 1, tile->k_nope + (j * H + h) * dn, dn);
                    st->sc[h * T + j - lo] += d;
                }
            if (g->probs)
                keep_scores(st, g, t, nv);
            for (size_t h = 0; h < H; h++) {
                float *acc = st->acc + (t * H + h) * dv;
                fold(K, st->sc + h * T, nv, &st->m[t * H + h], &st->l[t * H + h], acc, dv);
                for (size_t j = lo; j < hi; j++)
                    f32->axpy(acc, &st->sc[h * T + j - lo], 1, tile->v + (j * H + h) * dv, dv);
            }
            st->seen[t] += nv;
            ctr->flops_qk += 2 * (uint64_t)nv * H * qd;
            ctr->flops_av += 2 * (uint64_t)nv * H * dv;
            ctr->flops_softmax += 5 * (uint64_t)nv * H;
            ctr->view_bytes += nv * (H * (dn + dv) + p) * sizeof(float); /* the tile read back */
        }
    }
    for (size_t t = 0; t < g->n_q; t++)
        for (size_t h = 0; h < H; h++) {
            const float *acc = st->acc + (t * H + h) * dv;
            float inv = 1.0f / st->l[t * H + h];
            for (size_t i = 0; i < dv; i++)
                g->out[t * H * dv + h * dv + i] = acc[i] * inv;
        }
    if (g->probs)
        finish_probs(st, g);
}

/* The absorbed path: scores against the stored latent rows themselves. */
/* The absorbed queries into st->qx [n_q][H][L]: [W_uk_h^T q_nope_h | q_rope_h],
 * scaled. q_lat_h is built a row of W_uk_h at a time, scaled by q_nope_h[i]
 * of every query and added in, so each W_uk row is read once for all. */
static void absorb_queries(MlaState *st, const Group *g, float scale, Counters *ctr)
{
    const FormatOps *f32 = &g->m->kern->codec[FMT_F32];
    const size_t H = st->H, r = st->r, p = st->p, dn = st->dn, L = st->lat, qd = dn + p, n_q = g->n_q;
    float *qlat = st->tmp; /* [H][n_q][r] */
    memset(qlat, 0, H * n_q * r * sizeof(float));
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < dn; i++) {
            for (size_t t = 0; t < n_q; t++)
                st->dots[t] = g->q[t * H * qd + h * qd + i];
            f32->axpy(qlat + h * n_q * r, st->dots, n_q, g->a->w_uk + (h * dn + i) * r, r);
        }
    ctr->flops_q += 2 * (uint64_t)n_q * H * dn * r;
    ctr->weight_bytes_read += (uint64_t)H * dn * r * sizeof(float);
    float *qa = st->qx;
    for (size_t t = 0; t < n_q; t++)
        for (size_t h = 0; h < H; h++) {
            float *dst = qa + (t * H + h) * L;
            for (size_t i = 0; i < r; i++)
                dst[i] = qlat[(h * n_q + t) * r + i] * scale;
            for (size_t i = 0; i < p; i++)
                dst[r + i] = g->q[t * H * qd + h * qd + dn + i] * scale;
        }
    ctr->flops_other += n_q * H * L;
}

/* Query t over the rows it sees in chunk ch: scores straight on the stored
 * latent rows, folded into the online softmax, and the weighted sum of the
 * rows' c_kv into st->acc [n_q][H][r]. */
static void attend_latent_chunk(MlaState *st, const Group *g, const MlaChunk *ch, size_t t, Counters *ctr)
{
    const Kernels *K = g->m->kern;
    const FormatOps *ops = &K->codec[ch->fmt], *f32 = &K->codec[FMT_F32];
    const size_t H = st->H, r = st->r, L = st->lat, T = MLA_TILE_ROWS;
    /* the weighted sum needs c_kv, the row's first r values: read in place
     * when the format keeps them as a prefix, else decoded first */
    const int prefix = format_row_extra(ch->fmt) == 0 && r % format_block_values(ch->fmt) == 0;
    size_t lo, hi;
    visible(ch, g->pos0 + t, g->m->cfg.sliding_window, &lo, &hi);
    if (lo == hi)
        return;
    const size_t nv = hi - lo;
    float *acc = st->acc + t * H * r; /* [H][r] */
    for (size_t j = lo; j < hi; j++) { /* one dot of r + p values per head, on the stored row */
        ops->dot(st->dots, st->qx + t * H * L, H, ch->k + j * ch->stride, L);
        for (size_t h = 0; h < H; h++)
            st->sc[h * T + j - lo] = st->dots[h];
    }
    if (g->probs)
        keep_scores(st, g, t, nv);
    for (size_t h = 0; h < H; h++)
        fold(K, st->sc + h * T, nv, &st->m[t * H + h], &st->l[t * H + h], acc + h * r, r);
    for (size_t j = lo; j < hi; j++) {
        for (size_t h = 0; h < H; h++)
            st->dots[h] = st->sc[h * T + j - lo];
        const unsigned char *row = ch->k + j * ch->stride;
        if (prefix) {
            ops->axpy(acc, st->dots, H, row, r);
        } else {
            ops->dequantize(st->row, row, L);
            f32->axpy(acc, st->dots, H, st->row, r);
        }
    }
    st->seen[t] += nv;
    ctr->kv_bytes_read += nv * format_row_bytes(ch->fmt, L);
    ctr->flops_qk += 2 * (uint64_t)nv * H * L;
    ctr->flops_av += 2 * (uint64_t)nv * H * r;
    ctr->flops_softmax += 5 * (uint64_t)nv * H;
}

/* out_h = W_uv_h o_h into g->out [n_q][H][dv], o_h the attended latent
 * (st->acc over the softmax sum): each W_uv row read once for all queries. */
static void project_out(MlaState *st, const Group *g, Counters *ctr)
{
    const FormatOps *f32 = &g->m->kern->codec[FMT_F32];
    const size_t H = st->H, r = st->r, dv = st->dv, n_q = g->n_q;
    float *olat = st->tmp; /* [H][n_q][r] */
    for (size_t t = 0; t < n_q; t++)
        for (size_t h = 0; h < H; h++) {
            const float *acc = st->acc + (t * H + h) * r;
            float inv = 1.0f / st->l[t * H + h];
            for (size_t i = 0; i < r; i++)
                olat[(h * n_q + t) * r + i] = acc[i] * inv;
        }
    for (size_t h = 0; h < H; h++)
        for (size_t k = 0; k < dv; k++) {
            f32->dot(st->dots, olat + h * n_q * r, n_q, g->a->w_uv + (h * dv + k) * r, r);
            for (size_t t = 0; t < n_q; t++)
                g->out[t * H * dv + h * dv + k] = st->dots[t];
        }
    ctr->flops_o += 2 * (uint64_t)n_q * H * dv * r;
    ctr->weight_bytes_read += (uint64_t)H * dv * r * sizeof(float);
}

static void attend_absorbed(MlaState *st, const Group *g, Counters *ctr)
{
    absorb_queries(st, g, 1.0f / sqrtf((float)(st->dn + st->p)), ctr);
    start_queries(st, g->n_q, st->r);
    for (size_t c = 0; c < g->n_chunks; c++) {
        prefetch_step(st, g, c, 0);
        for (size_t t = 0; t < g->n_q; t++)
            attend_latent_chunk(st, g, &st->chunks[c], t, ctr);
    }
    project_out(st, g, ctr);
    if (g->probs)
        finish_probs(st, g);
}

/* What a pass must be for MLA: the scratch made, no pitfalls, causal, rows
 * within the scratch, a cache opened with the latent geometry. */
static int check_pass(const Model *m, const MlaState *st, const AttnPass *p, Err *e)
{
    const Config *c = &m->cfg;
    if (!st)
        return err_set(e, ERR_RUNTIME, "MLA: the forward state holds no MLA scratch");
    if (m->bugs)
        return err_set(e, ERR_USAGE, "the pitfalls (--bug) act on GQA attention; model '%s' uses MLA", c->name);
    if (p->bidirectional)
        return err_set(e, ERR_USAGE, "model '%s': MLA attention is causal only", c->name);
    if (p->n_seqs * p->n_new > st->max_rows)
        return err_set(e, ERR_RUNTIME, "MLA: %zu token rows, scratch holds %zu", p->n_seqs * p->n_new,
                       st->max_rows);
    if (p->cache && (p->cache->geo.n_kv_heads != 1 || p->cache->geo.head_dim != st->lat))
        return err_set(e, ERR_RUNTIME, "model '%s' caches one latent row of %zu values per token and layer; cache "
                       "'%s' holds %zu heads of %zu (open it with model_kv_geometry)", c->name, st->lat,
                       p->cache->spec, p->cache->geo.n_kv_heads, p->cache->geo.head_dim);
    return 0;
}

/* The queries into s->q [rows][H][qd] and each token's latent row
 * [c_kv | k_rope] into st->lat_rows [rows][L], RoPE at absolute positions. */
static void project_latent(const Model *m, ForwardState *s, const LayerWeights *w, const MlaWeights *a,
                           const AttnPass *p, Counters *ctr)
{
    const Config *c = &m->cfg;
    const Kernels *K = m->kern;
    MlaState *st = s->mla;
    const size_t d = c->d_model, H = st->H, r = st->r, L = st->lat, qd = c->qk_nope_dim + c->qk_rope_dim;
    const size_t rows = p->n_seqs * p->n_new;
    K->rmsnorm(s->xb, s->x, w->attn_norm, rows, d, (float)c->norm_eps, ctr);
    K->matmul(s->q, s->xb, w->wq, rows, d, H * qd, &ctr->flops_q, ctr);
    K->matmul(st->lat_rows, s->xb, a->w_dkv, rows, d, L, &ctr->flops_k, ctr);
    for (size_t i = 0; i < rows; i++) {
        size_t pos = p->pos0 + i % p->n_new;
        float *lat = st->lat_rows + i * L;
        K->rmsnorm(lat, lat, a->kv_norm, 1, r, (float)c->norm_eps, ctr);
        K->rope(lat + r, 1, c->qk_rope_dim, pos, c->rope_theta, ctr);
        for (size_t h = 0; h < H; h++)
            K->rope(s->q + i * H * qd + h * qd + c->qk_nope_dim, 1, c->qk_rope_dim, pos, c->rope_theta, ctr);
    }
}

/* Sequence b of the pass: its latent rows appended to the cache, then its
 * queries attend by the model's read path into st->att [n_new][H][dv]. */
static int attend_sequence(const Model *m, ForwardState *s, size_t layer, const MlaWeights *a, const AttnPass *p,
                           size_t b, Counters *ctr, Err *e)
{
    const Config *c = &m->cfg;
    MlaState *st = s->mla;
    const size_t H = st->H, L = st->lat, dv = st->dv, qd = c->qk_nope_dim + c->qk_rope_dim, n_new = p->n_new;
    const size_t first = b * n_new, seq = p->slots ? p->slots[b] : b;
    const float *lat = st->lat_rows + first * L;
    if (layer == 0 && p->pos0 == 0 && st->reserved) /* the sequence restarts: its tiles are stale */
        mla_tiles_forget_seq(st, seq);
    /* the cache stores the latent as a K row; V (k_only) is not stored */
    if (p->cache && kv_append(p->cache, layer, seq, p->pos0, n_new, lat, lat, ctr, e) < 0)
        return -1;
    Group g = { .m = m, .a = a, .cache = p->cache, .layer = layer, .seq = seq, .use_lru = p->slots == NULL,
                .q = s->q + first * H * qd, .n_q = n_new, .pos0 = p->pos0, .out = st->att + first * H * dv };
    if (s->probs && b == 0) {
        g.probs = s->probs + layer * H * s->max_q * c->max_seq_len;
        g.probs_q_stride = c->max_seq_len;
        g.probs_h_stride = s->max_q * c->max_seq_len;
    }
    if (gather_chunks(st, p->cache, layer, seq, lat, n_new, p->pos0, &g.n_chunks, e) < 0)
        return -1;
    if (m->mla_path == MLA_DECOMPRESS)
        attend_decompress(st, &g, ctr);
    else
        attend_absorbed(st, &g, ctr);
    return 0;
}

int sublayer_mla_attention(const Model *m, ForwardState *s, size_t layer, const AttnPass *p, Counters *ctr, Err *e)
{
    const Config *c = &m->cfg;
    MlaState *st = s->mla;
    if (check_pass(m, st, p, e) < 0)
        return -1;
    if (m->mla_path == MLA_DECOMPRESS && mla_tiles_reserve(st, m->mla_tiles, e) < 0)
        return -1;
    const size_t d = c->d_model, H = st->H, dv = st->dv, rows = p->n_seqs * p->n_new;
    const MlaWeights *a = &m->mla[c->shared_layers ? 0 : layer];
    project_latent(m, s, model_layer(m, layer), a, p, ctr);
    for (size_t b = 0; b < p->n_seqs; b++)
        if (attend_sequence(m, s, layer, a, p, b, ctr, e) < 0)
            return -1;

    if (s->att_layers) { /* sequence 0's outputs, in the [q_dim] rows the views read */
        float *dst = s->att_layers + layer * s->max_q * config_q_dim(c);
        for (size_t t = 0; t < p->n_new; t++) {
            memset(dst + t * config_q_dim(c), 0, config_q_dim(c) * sizeof(float));
            memcpy(dst + t * config_q_dim(c), st->att + t * H * dv, H * dv * sizeof(float));
        }
    }
    m->kern->matmul(s->xb, st->att, a->w_o, rows, H * dv, d, &ctr->flops_o, ctr);
    for (size_t i = 0; i < rows * d; i++)
        s->x[i] += s->xb[i];
    ctr->flops_other += (uint64_t)rows * d; /* the residual add */
    st->stats.passes++;
    st->stats.path = m->mla_path;
    return 0;
}
