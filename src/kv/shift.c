/* shift.c: llama.cpp's context shift, the ring's sibling for a full context.
 *
 * Per (layer, sequence, KV head): `ctx` f32 rows, held in position order
 * as one block. When a pass would not fit (rows held + new > ctx), the
 * cache keeps the first `keep` rows, discards half of the rest, the oldest
 * (d = (held - keep) / 2 rows), and moves the survivors down by d. Their
 * keys carry RoPE for their old positions; rotating each pair back by
 * d * freq puts them at their new ones (RoPE is a rotation, so R(-d) R(p) =
 * R(p - d) up to float rounding). V carries no position: it only moves.
 *
 * Positions are the cache's own: pos_shift says how many the sequence has
 * discarded, and the model runs its next tokens at text position minus that
 * (model/forward.c), so RoPE positions stay below ctx however long the text
 * runs past the model's context. llama.cpp shifts the same way (n_keep,
 * n_discard = (n_past - n_keep) / 2); it shifts one token early, this cache
 * fills all ctx rows first.
 *
 * Lossy: the discarded rows are gone. A pass of at most (ctx - keep) / 2
 * tokens always fits after one shift (max_pass), so a long prompt is
 * prefilled in pieces of that size. */
#include "kv/layouts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    KvCache base;
    size_t ctx, keep;
    size_t hd;               /* floats per row of one head */
    float *k, *v;            /* [layer][seq][kv_head][ctx][hd], rows 0 .. held-1 valid */
    size_t *held;            /* [layer][seq] rows held */
    size_t *shift;           /* [seq] positions discarded so far */
    double *cos_d, *sin_d;   /* [hd / 2] the rotation by -d of the shift under way */
    size_t shifts, shifted_out; /* all sequences, for the stats */
} Shift;

static size_t at(const Shift *s, size_t layer, size_t seq)
{
    return layer * s->base.geo.n_seqs + seq;
}

/* The first float of (layer, seq, head h)'s rows. */
static size_t rows_of(const Shift *s, size_t layer, size_t seq, size_t h)
{
    return (at(s, layer, seq) * s->base.geo.n_kv_heads + h) * s->ctx * s->hd;
}

static size_t shift_max_pass(const KvCache *base)
{
    const Shift *s = (const Shift *)base;
    return (s->ctx - s->keep) / 2;
}

/* Rotate rows [n][hd] by the angles of cos_d / sin_d: pairs (2i, 2i+1) as
 * rope_ref does, in double so the back-rotation adds one rounding. */
static void rotate_rows(float *rows, size_t n, size_t hd, const double *cs, const double *sn)
{
    for (size_t r = 0; r < n; r++) {
        float *x = rows + r * hd;
        for (size_t i = 0; i < hd; i += 2) {
            double a = x[i], b = x[i + 1], c = cs[i / 2], si = sn[i / 2];
            x[i] = (float)(a * c - b * si);
            x[i + 1] = (float)(a * si + b * c);
        }
    }
}

/* Discard rows keep .. keep+d-1 of every layer of seq, move the rest down
 * and rotate their keys by -d positions. */
static void discard(Shift *s, size_t seq, size_t d, Counters *ctr)
{
    const KvGeometry *g = &s->base.geo;
    for (size_t i = 0; i < s->hd; i += 2) {
        double angle = -(double)d * pow(g->rope_theta, -(double)i / (double)s->hd);
        s->cos_d[i / 2] = cos(angle);
        s->sin_d[i / 2] = sin(angle);
    }
    for (size_t l = 0; l < g->n_layers; l++) {
        size_t *held = &s->held[at(s, l, seq)];
        const size_t moved = *held - s->keep - d;
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            float *k = s->k + rows_of(s, l, seq, h) + s->keep * s->hd;
            float *v = s->v + rows_of(s, l, seq, h) + s->keep * s->hd;
            memmove(k, k + d * s->hd, moved * s->hd * sizeof(float));
            memmove(v, v + d * s->hd, moved * s->hd * sizeof(float));
            rotate_rows(k, moved, s->hd, s->cos_d, s->sin_d);
        }
        *held -= d;
        if (ctr) {
            ctr->bytes_copied += 2 * g->n_kv_heads * moved * s->hd * sizeof(float);
            ctr->flops_other += 3 * (uint64_t)g->n_kv_heads * moved * s->hd; /* 6 per pair, as RoPE */
        }
    }
    s->shift[seq] += d;
    s->shifts++;
    s->shifted_out += d;
}

/* Before a pass of n tokens at text position pos: shift when they would
 * not fit. */
static int shift_reserve(KvCache *base, size_t seq, size_t pos, const int *tokens, size_t n, Counters *ctr, Err *e)
{
    (void)tokens;
    Shift *s = (Shift *)base;
    const size_t held = s->held[at(s, 0, seq)];
    if (pos != held + s->shift[seq])
        return err_set(e, ERR_RUNTIME, "shift cache: a pass at position %zu, expected %zu", pos,
                       held + s->shift[seq]);
    if (held + n <= s->ctx)
        return 0;
    const size_t d = (held - s->keep) / 2;
    if (held - d + n > s->ctx)
        return err_set(e, ERR_RUNTIME, "shift cache: a pass of %zu tokens does not fit in ctx=%zu after a shift "
                       "(%zu rows held; passes of at most %zu always fit)", n, s->ctx, held - d, shift_max_pass(base));
    discard(s, seq, d, ctr);
    return 0;
}

static int shift_append(KvCache *base, size_t layer, size_t seq, size_t pos, size_t n, const float *k,
                        const float *v, Counters *ctr, Err *e)
{
    Shift *s = (Shift *)base;
    const KvGeometry *g = &base->geo;
    size_t *held = &s->held[at(s, layer, seq)];
    if (pos != *held) /* the cache's position: text position minus pos_shift */
        return err_set(e, ERR_RUNTIME, "shift cache: append at position %zu, expected %zu", pos, *held);
    if (n > s->ctx - pos)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > ctx %zu (kv_reserve shifts "
                       "before a pass)", pos, n, s->ctx);
    for (size_t t = 0; t < n; t++)
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            size_t to = rows_of(s, layer, seq, h) + (pos + t) * s->hd, from = (t * g->n_kv_heads + h) * s->hd;
            memcpy(s->k + to, k + from, s->hd * sizeof(float));
            memcpy(s->v + to, v + from, s->hd * sizeof(float));
        }
    *held += n;
    if (ctr)
        ctr->kv_bytes_written += 2 * n * g->n_kv_heads * s->hd * sizeof(float);
    return 0;
}

static size_t shift_length(const KvCache *base, size_t layer, size_t seq)
{
    const Shift *s = (const Shift *)base;
    return s->held[at(s, layer, seq)];
}

static size_t shift_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    return shift_length(base, layer, seq) ? 1 : 0;
}

static void shift_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    (void)i;
    const Shift *s = (const Shift *)base;
    size_t first = rows_of(s, layer, seq, h);
    *out = (KvBlock){
        .pos = 0, .n = s->held[at(s, layer, seq)],
        .k = s->k + first, .v = s->v + first,
        .k_stride = s->hd * sizeof(float), .v_stride = s->hd * sizeof(float),
        .k_fmt = FMT_F32, .v_fmt = FMT_F32,
    };
}

static size_t shift_pos_shift(const KvCache *base, size_t seq)
{
    const Shift *s = (const Shift *)base;
    return s->shift[seq];
}

static size_t shift_bytes_used(const KvCache *base)
{
    const Shift *s = (const Shift *)base;
    size_t rows = 0;
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        rows += s->held[i];
    return rows * base->geo.n_kv_heads * 2 * s->hd * sizeof(float);
}

static size_t shift_bytes_reserved(const KvCache *base)
{
    const Shift *s = (const Shift *)base;
    const KvGeometry *g = &base->geo;
    return g->n_layers * g->n_seqs * g->n_kv_heads * s->ctx * 2 * s->hd * sizeof(float);
}

/* Text positions: the first keep held, the next shift discarded, the rest
 * (the most recent) held. */
static void shift_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    const Shift *s = (const Shift *)base;
    size_t held = s->held[at(s, layer, seq)], gone = s->shift[seq];
    kv_cells_prefix(base, held + gone, out, n);
    for (size_t i = s->keep; i < s->keep + gone && i < n; i++)
        out[i].state = CELL_EVICTED;
}

static void shift_stats(const KvCache *base, KvStats *out)
{
    const Shift *s = (const Shift *)base;
    out->shifts = s->shifts;
    out->shifted_out = s->shifted_out;
}

static void shift_drop(KvCache *base, size_t seq)
{
    Shift *s = (Shift *)base;
    for (size_t l = 0; l < base->geo.n_layers; l++)
        s->held[at(s, l, seq)] = 0;
    s->shift[seq] = 0;
}

static void shift_reset(KvCache *base)
{
    for (size_t q = 0; q < base->geo.n_seqs; q++)
        shift_drop(base, q);
}

static int shift_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    Shift *s = (Shift *)base;
    const KvGeometry *g = &base->geo;
    if (s->held[at(s, 0, dst)] != 0 || s->shift[dst] != 0)
        return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < g->n_layers; l++) {
        size_t held = s->held[at(s, l, src)];
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            memcpy(s->k + rows_of(s, l, dst, h), s->k + rows_of(s, l, src, h), held * s->hd * sizeof(float));
            memcpy(s->v + rows_of(s, l, dst, h), s->v + rows_of(s, l, src, h), held * s->hd * sizeof(float));
        }
        s->held[at(s, l, dst)] = held;
        if (ctr)
            ctr->bytes_copied += 2 * g->n_kv_heads * held * s->hd * sizeof(float);
    }
    s->shift[dst] = s->shift[src];
    return 0;
}

static void shift_destroy(KvCache *base)
{
    Shift *s = (Shift *)base;
    free(s->k);
    free(s->v);
    free(s->held);
    free(s->shift);
    free(s->cos_d);
    free(s->sin_d);
    free(s);
}

static const KvCacheOps shift_ops = {
    .name = "shift",
    .rollback = "a context shift discards positions and moves the kept keys: a shift made for a rejected row cannot be undone",
    .reserve = shift_reserve,
    .append = shift_append,
    .n_blocks = shift_n_blocks,
    .block = shift_block,
    .length = shift_length,
    .bytes_used = shift_bytes_used,
    .bytes_reserved = shift_bytes_reserved,
    .reset = shift_reset,
    .cells = shift_cells,
    .fork = shift_fork,
    .drop = shift_drop,
    .max_pass = shift_max_pass,
    .pos_shift = shift_pos_shift,
    .stats = shift_stats,
    .destroy = shift_destroy,
};

KvCache *shift_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    size_t ctx = geo->max_seq_len, keep = 0;
    if (spec_take_size(opts, "ctx", &ctx, e) < 0 || spec_take_size0(opts, "keep", &keep, e) < 0 ||
        spec_check_all_taken(opts, "ctx=C (default: max_seq_len), keep=N", e) < 0)
        return NULL;
    if (ctx > geo->max_seq_len) {
        err_set(e, ERR_USAGE, "cache 'shift': ctx=%zu is beyond the model's %zu positions (max_seq_len)", ctx,
                geo->max_seq_len);
        return NULL;
    }
    if (keep + 2 > ctx) {
        err_set(e, ERR_USAGE, "cache 'shift': keep=%zu leaves nothing to discard in ctx=%zu (keep at most %zu)",
                keep, ctx, ctx >= 2 ? ctx - 2 : 0);
        return NULL;
    }
    if (st->k_fmt != FMT_F32 || st->v_fmt != FMT_F32) {
        err_set(e, ERR_USAGE, "cache 'shift' stores f32 rows (it rotates kept keys in place); it takes no "
                "'+quant' other than f32");
        return NULL;
    }
    if (geo->k_only || geo->rope_theta <= 0 || geo->head_dim % 2) {
        err_set(e, ERR_USAGE, "cache 'shift' re-rotates RoPE keys: it needs a model with RoPE on K rows (not an "
                "MLA latent cache)");
        return NULL;
    }
    if (kv_check_fit(geo, "shift", ctx, "rows per layer, sequence and KV head",
                     kv_head_row_bytes(geo, geo->head_dim * sizeof(float), geo->head_dim * sizeof(float)), e) < 0)
        return NULL;
    Shift *s = calloc(1, sizeof *s);
    if (!s) {
        err_set(e, ERR_RUNTIME, "shift cache: out of memory");
        return NULL;
    }
    s->base.ops = &shift_ops;
    s->base.geo = *geo;
    s->base.lossy = 1; /* it forgets */
    s->ctx = ctx, s->keep = keep, s->hd = geo->head_dim;
    size_t floats = geo->n_layers * geo->n_seqs * geo->n_kv_heads * ctx * s->hd;
    s->k = calloc(floats, sizeof(float));
    s->v = calloc(floats, sizeof(float));
    s->held = calloc(geo->n_layers * geo->n_seqs, sizeof *s->held);
    s->shift = calloc(geo->n_seqs, sizeof *s->shift);
    s->cos_d = calloc(s->hd / 2, sizeof *s->cos_d);
    s->sin_d = calloc(s->hd / 2, sizeof *s->sin_d);
    if (!s->k || !s->v || !s->held || !s->shift || !s->cos_d || !s->sin_d) {
        shift_destroy(&s->base);
        err_set(e, ERR_RUNTIME, "shift cache: out of memory for %zu rows", ctx);
        return NULL;
    }
    return &s->base;
}
