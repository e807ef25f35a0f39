/* kivi.c: keys quantized per channel, values per token (KIVI, Liu et al.
 * 2024), in groups of G tokens.
 *
 * Keys have outlier channels: a few of the head_dim channels are large for
 * every token, so a scale per token (per row) is set by those channels and
 * crushes the rest. KIVI gives each channel its own scale and minimum over
 * a group of G tokens instead, and quantizes values per token as usual.
 *
 * Per (layer, sequence, KV head) the most recent rows sit in an f16
 * residual. When it holds G rows, the group is quantized: for each channel
 * i over the G keys, scale = (max - min) / (2^bits - 1) and the minimum are
 * stored in fp16, and code = round((x - min) / scale) in u4 or u2
 * (format.h); the group's values are re-encoded per token in the v format.
 * The residual then starts empty. Attention reads each group as one block
 * whose k_chan holds its scales and minimums (block.h), then the residual.
 *
 * A group's storage is allocated when the group is made, so memory grows
 * with the sequence a group at a time; the residual (G rows) is allocated
 * at a sequence's first append. */
#include "kv/layouts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t len;              /* positions appended */
    size_t n_groups;         /* full groups held quantized */
    size_t n_alloc;          /* group buffers allocated (>= n_groups; reset keeps them) */
    size_t cap;              /* room in groups[] */
    unsigned char **groups;  /* [n_alloc] buffers of group_bytes */
    unsigned char *resid;    /* [n_kv_heads][G] f16 K rows, then as many V rows; NULL until used */
} Seq;

typedef struct {
    KvCache base;
    KvStorage st;
    unsigned bits;
    size_t group;            /* G */
    Format k_code, v_fmt;    /* u4 or u2; the per-token V format */
    size_t chan_bytes;       /* a head's scales and minimums: 2 * head_dim fp16 */
    size_t k_row, v_row;     /* bytes of one code row, one V row */
    size_t f16_row;          /* bytes of one residual row */
    size_t head_bytes;       /* one head of one group: chan, G code rows, G V rows */
    Seq *seqs;               /* [n_layers][n_seqs] */
    float *keys, *codes;     /* scratch: a group's keys [G][head_dim], one row in code space */
} Kivi;

static Seq *seq_of(const Kivi *q, size_t layer, size_t seq)
{
    return &q->seqs[layer * q->base.geo.n_seqs + seq];
}

static size_t group_bytes(const Kivi *q)
{
    return q->base.geo.n_kv_heads * q->head_bytes;
}

static size_t resid_bytes(const Kivi *q)
{
    return q->base.geo.n_kv_heads * q->group * 2 * q->f16_row;
}

/* Head h's parts of a group buffer: scales and minimums, codes, V rows.
 * Every row format's rows are an even number of bytes, so each head's fp16
 * scales stay 2-byte aligned. */
static unsigned char *group_chan(const Kivi *q, unsigned char *grp, size_t h)
{
    return grp + h * q->head_bytes;
}
static unsigned char *group_codes(const Kivi *q, unsigned char *grp, size_t h)
{
    return group_chan(q, grp, h) + q->chan_bytes;
}
static unsigned char *group_v(const Kivi *q, unsigned char *grp, size_t h)
{
    return group_codes(q, grp, h) + q->group * q->k_row;
}

/* Row r of head h's residual K (kv = 0) or V (kv = 1). */
static unsigned char *resid_row(const Kivi *q, const Seq *s, int kv, size_t h, size_t r)
{
    return s->resid + ((size_t)kv * q->base.geo.n_kv_heads * q->group + h * q->group + r) * q->f16_row;
}

/* Channel i of n keys (stride hd): the fp16 scale and minimum. A channel
 * holding NaN or Inf gets NaN for both, so its keys decode to NaN. */
static void channel_range(const Kivi *q, const float *x, size_t n, size_t hd, unsigned short *scale,
                          unsigned short *min)
{
    float lo = x[0], hi = x[0];
    int bad = 0;
    for (size_t r = 0; r < n; r++) {
        const float v = x[r * hd];
        bad |= !isfinite(v);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    const float top = (float)((1u << q->bits) - 1);
    *scale = fp16_from_f32(bad ? NAN : (hi - lo) / top);
    *min = fp16_from_f32(bad ? NAN : lo); /* lo came through the f16 residual: exact */
}

/* Quantize the full residual of s into a new group: keys per channel,
 * values per token. */
static int quantize_group(Kivi *q, Seq *s, Counters *ctr, Err *e)
{
    const KvGeometry *g = &q->base.geo;
    const size_t hd = g->head_dim, G = q->group;
    if (s->n_groups == s->n_alloc) { /* reset keeps buffers; otherwise the group gets one now */
        if (s->n_alloc == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 8;
            unsigned char **grown = realloc(s->groups, cap * sizeof *grown);
            if (!grown)
                return err_set(e, ERR_RUNTIME, "kivi cache: out of memory for %zu groups", cap);
            s->groups = grown;
            s->cap = cap;
        }
        if (!(s->groups[s->n_alloc] = malloc(group_bytes(q))))
            return err_set(e, ERR_RUNTIME, "kivi cache: out of memory for group %zu", s->n_groups);
        s->n_alloc++;
        if (ctr)
            ctr->allocations++;
    }
    unsigned char *grp = s->groups[s->n_groups];
    const FormatOps *f16 = &q->st.codec[FMT_F16];
    for (size_t h = 0; h < g->n_kv_heads; h++) {
        unsigned short *chan = (unsigned short *)group_chan(q, grp, h); /* 2-byte aligned: head_bytes is even */
        for (size_t r = 0; r < G; r++)
            f16->dequantize(q->keys + r * hd, resid_row(q, s, 0, h, r), hd);
        for (size_t i = 0; i < hd; i++)
            channel_range(q, q->keys + i, G, hd, &chan[i], &chan[hd + i]);
        for (size_t r = 0; r < G; r++) {
            for (size_t i = 0; i < hd; i++) { /* codes against the stored fp16 scale and minimum */
                const float sc = fp16_to_f32(chan[i]), mn = fp16_to_f32(chan[hd + i]);
                q->codes[i] = sc > 0.0f ? (q->keys[r * hd + i] - mn) / sc : 0.0f; /* NaN and 0 scales: code 0 */
            }
            q->st.codec[q->k_code].quantize(group_codes(q, grp, h) + r * q->k_row, q->codes, hd);
            f16->dequantize(q->codes, resid_row(q, s, 1, h, r), hd);
            q->st.codec[q->v_fmt].quantize(group_v(q, grp, h) + r * q->v_row, q->codes, hd);
        }
    }
    s->n_groups++;
    if (ctr)
        ctr->kv_bytes_written += group_bytes(q);
    return 0;
}

static int kivi_append(KvCache *base, size_t layer, size_t seq, size_t pos, size_t n, const float *k,
                       const float *v, Counters *ctr, Err *e)
{
    Kivi *q = (Kivi *)base;
    const KvGeometry *g = &base->geo;
    Seq *s = seq_of(q, layer, seq);
    if (pos != s->len)
        return err_set(e, ERR_RUNTIME, "kivi cache: append at position %zu, expected %zu", pos, s->len);
    if (n > g->max_seq_len - pos)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > max_seq_len %zu", pos, n,
                       g->max_seq_len);
    if (!s->resid && n) {
        if (!(s->resid = malloc(resid_bytes(q))))
            return err_set(e, ERR_RUNTIME, "kivi cache: out of memory for the residual");
        if (ctr)
            ctr->allocations++;
    }
    const FormatOps *f16 = &q->st.codec[FMT_F16];
    for (size_t t = 0; t < n; t++) {
        const size_t r = s->len - s->n_groups * q->group; /* the residual's next row */
        const size_t off = t * g->n_kv_heads * g->head_dim;
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            kv_encode_rows(resid_row(q, s, 0, h, r), 0, k + off, 1, h, g, f16);
            kv_encode_rows(resid_row(q, s, 1, h, r), 0, v + off, 1, h, g, f16);
        }
        if (ctr)
            ctr->kv_bytes_written += 2 * g->n_kv_heads * q->f16_row;
        /* one row at a time, so a long prefill groups exactly as decode does;
         * a failed group leaves the row out, the residual full but valid */
        if (r + 1 == q->group && quantize_group(q, s, ctr, e) < 0)
            return -1;
        s->len++;
    }
    return 0;
}

static size_t resid_rows(const Kivi *q, const Seq *s)
{
    return s->len - s->n_groups * q->group;
}

static size_t kivi_length(const KvCache *base, size_t layer, size_t seq)
{
    return seq_of((const Kivi *)base, layer, seq)->len;
}

static size_t kivi_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    const Kivi *q = (const Kivi *)base;
    const Seq *s = seq_of(q, layer, seq);
    return s->n_groups + (resid_rows(q, s) > 0);
}

static void kivi_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const Kivi *q = (const Kivi *)base;
    const Seq *s = seq_of(q, layer, seq);
    if (i < s->n_groups) {
        unsigned char *grp = s->groups[i];
        *out = (KvBlock){
            .pos = i * q->group, .n = q->group,
            .k = group_codes(q, grp, h), .v = group_v(q, grp, h),
            .k_stride = q->k_row, .v_stride = q->v_row,
            .k_fmt = q->k_code, .v_fmt = q->v_fmt,
            .k_chan = (const unsigned short *)group_chan(q, grp, h),
        };
        return;
    }
    *out = (KvBlock){
        .pos = s->n_groups * q->group, .n = resid_rows(q, s),
        .k = resid_row(q, s, 0, h, 0), .v = resid_row(q, s, 1, h, 0),
        .k_stride = q->f16_row, .v_stride = q->f16_row,
        .k_fmt = FMT_F16, .v_fmt = FMT_F16,
    };
}

static size_t kivi_bytes_used(const KvCache *base)
{
    const Kivi *q = (const Kivi *)base;
    size_t bytes = 0;
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        bytes += q->seqs[i].n_groups * group_bytes(q) +
                 resid_rows(q, &q->seqs[i]) * base->geo.n_kv_heads * 2 * q->f16_row;
    return bytes;
}

static size_t kivi_bytes_reserved(const KvCache *base)
{
    const Kivi *q = (const Kivi *)base;
    size_t bytes = 0;
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        bytes += q->seqs[i].n_alloc * group_bytes(q) + (q->seqs[i].resid ? resid_bytes(q) : 0);
    return bytes;
}

static void kivi_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    const Kivi *q = (const Kivi *)base;
    const Seq *s = seq_of(q, layer, seq);
    const size_t quantized = s->n_groups * q->group;
    for (size_t i = 0; i < n; i++) {
        if (i >= s->len) {
            out[i] = (KvCell){ .state = CELL_EMPTY };
            continue;
        }
        const int coded = i < quantized;
        out[i] = (KvCell){ .state = CELL_LOSSY, /* f16 residual rows too, as in mixed */
                           .k_fmt = (unsigned char)(coded ? q->k_code : FMT_F16),
                           .v_fmt = (unsigned char)(coded ? q->v_fmt : FMT_F16),
                           .page_start = i % q->group == 0 };
    }
}

/* Empty (layer, seq); free = 1 gives its memory back, 0 keeps it for reuse. */
static void seq_clear(Seq *s, int free_memory)
{
    s->len = 0;
    s->n_groups = 0;
    if (!free_memory)
        return;
    for (size_t i = 0; i < s->n_alloc; i++)
        free(s->groups[i]);
    free(s->groups);
    free(s->resid);
    *s = (Seq){ 0 };
}

static void kivi_drop(KvCache *base, size_t seq)
{
    for (size_t l = 0; l < base->geo.n_layers; l++)
        seq_clear(seq_of((Kivi *)base, l, seq), 1);
}

static void kivi_reset(KvCache *base)
{
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        seq_clear(&((Kivi *)base)->seqs[i], 0);
}

/* dst (empty) gets copies of src's groups and residual. */
static int fork_seq(Kivi *q, const Seq *src, Seq *dst, Counters *ctr, Err *e)
{
    if (src->n_groups) {
        dst->groups = calloc(src->n_groups, sizeof *dst->groups);
        if (!dst->groups)
            return err_set(e, ERR_RUNTIME, "kivi cache: out of memory forking");
        dst->cap = src->n_groups;
    }
    for (; dst->n_alloc < src->n_groups; dst->n_alloc++) {
        if (!(dst->groups[dst->n_alloc] = malloc(group_bytes(q))))
            return err_set(e, ERR_RUNTIME, "kivi cache: out of memory forking");
        memcpy(dst->groups[dst->n_alloc], src->groups[dst->n_alloc], group_bytes(q));
    }
    if (src->resid && !(dst->resid = malloc(resid_bytes(q))))
        return err_set(e, ERR_RUNTIME, "kivi cache: out of memory forking");
    if (src->resid)
        memcpy(dst->resid, src->resid, resid_bytes(q));
    dst->n_groups = src->n_groups;
    dst->len = src->len;
    if (ctr) {
        ctr->allocations += src->n_groups + (src->resid != NULL);
        ctr->bytes_copied += src->n_groups * group_bytes(q) + (src->resid ? resid_bytes(q) : 0);
    }
    return 0;
}

static int kivi_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    Kivi *q = (Kivi *)base;
    if (seq_of(q, 0, dst)->len)
        return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < base->geo.n_layers; l++) {
        seq_clear(seq_of(q, l, dst), 1); /* a reset one may hold buffers: start clean */
        if (fork_seq(q, seq_of(q, l, src), seq_of(q, l, dst), ctr, e) < 0) {
            kivi_drop(base, dst);
            return -1;
        }
    }
    return 0;
}

static void kivi_stats(const KvCache *base, KvStats *out)
{
    const Kivi *q = (const Kivi *)base;
    for (size_t i = 0; i < base->geo.n_layers * base->geo.n_seqs; i++)
        out->chan_groups += q->seqs[i].n_groups;
}

static void kivi_destroy(KvCache *base)
{
    Kivi *q = (Kivi *)base;
    for (size_t i = 0; q->seqs && i < base->geo.n_layers * base->geo.n_seqs; i++)
        seq_clear(&q->seqs[i], 1);
    free(q->seqs);
    free(q->keys);
    free(q->codes);
    free(q);
}

/* Full groups: keys coded per channel, values per token; the rest f16. */
static void kivi_formats(const KvCache *base, char *buf, size_t cap)
{
    const Kivi *q = (const Kivi *)base;
    snprintf(buf, cap, "K %s per channel, V %s; recent f16", format_name(q->k_code), format_name(q->v_fmt));
}

static const KvCacheOps kivi_ops = {
    .name = "kivi",
    .rollback = "keys are quantized per channel once their group fills: a group filled by rejected rows holds scales made from them",
    .append = kivi_append,
    .n_blocks = kivi_n_blocks,
    .block = kivi_block,
    .length = kivi_length,
    .bytes_used = kivi_bytes_used,
    .bytes_reserved = kivi_bytes_reserved,
    .reset = kivi_reset,
    .cells = kivi_cells,
    .fork = kivi_fork,
    .drop = kivi_drop,
    .stats = kivi_stats,
    .formats = kivi_formats,
    .destroy = kivi_destroy,
};

/* The options: bits (4 or 2), group, v; and what kivi cannot hold. */
static int kivi_options(KvSpecPart *opts, const KvGeometry *geo, size_t *bits, size_t *group, Format *v, Err *e)
{
    if (spec_take_size(opts, "bits", bits, e) < 0 || spec_take_size(opts, "group", group, e) < 0 ||
        spec_take_format(opts, "v", v, e) < 0 || spec_check_all_taken(opts, "bits=4|2, group=ROWS, v=FMT", e) < 0)
        return -1;
    if (*bits != 4 && *bits != 2)
        return err_set(e, ERR_USAGE, "cache 'kivi': bits=%zu; per-channel keys take bits=4 or bits=2", *bits);
    if (geo->k_only)
        return err_set(e, ERR_USAGE, "cache 'kivi' quantizes attention keys per channel; it cannot hold an MLA "
                       "latent cache (use contiguous, paged, ring or mixed)");
    return 0;
}

KvCache *kivi_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    size_t bits = 4, group = 32;
    Format v = FMT_Q4_0;
    if (kivi_options(opts, geo, &bits, &group, &v, e) < 0)
        return NULL;
    /* A sequence never holds more than max_seq_len rows: a group longer than
     * that never fills, and one row more than that never fills either, so
     * the residual is kept at that size (it would be copied at every fork). */
    if (group > geo->max_seq_len + 1)
        group = geo->max_seq_len + 1;
    if (kv_check_fit(geo, "kivi", group, "rows in a group of every layer, sequence and KV head",
                     kv_head_row_bytes(geo, format_row_bytes(bits == 4 ? FMT_U4 : FMT_U2, geo->head_dim),
                                       format_row_bytes(v, geo->head_dim)), e) < 0)
        return NULL;
    Kivi *q = calloc(1, sizeof *q);
    if (!q) {
        err_set(e, ERR_RUNTIME, "kivi cache: out of memory");
        return NULL;
    }
    const size_t hd = geo->head_dim;
    q->base.ops = &kivi_ops;
    q->base.geo = *geo;
    q->base.lossy = 1;
    q->st = *st;
    q->bits = (unsigned)bits;
    q->group = group;
    q->k_code = bits == 4 ? FMT_U4 : FMT_U2;
    q->v_fmt = v;
    q->chan_bytes = 2 * hd * sizeof(unsigned short);
    q->k_row = format_row_bytes(q->k_code, hd);
    q->v_row = format_row_bytes(v, hd);
    q->f16_row = format_row_bytes(FMT_F16, hd);
    q->head_bytes = q->chan_bytes + group * (q->k_row + q->v_row); /* even: so is every row format's row */
    q->base.k_fmt = q->k_code; /* what the cache's descriptions name (kv_open keeps them) */
    q->base.v_fmt = v;
    q->seqs = calloc(geo->n_layers * geo->n_seqs, sizeof *q->seqs);
    q->keys = malloc(group * hd * sizeof *q->keys);
    q->codes = malloc(hd * sizeof *q->codes);
    if (!q->seqs || !q->keys || !q->codes) {
        kivi_destroy(&q->base);
        err_set(e, ERR_RUNTIME, "kivi cache: out of memory");
        return NULL;
    }
    return &q->base;
}
