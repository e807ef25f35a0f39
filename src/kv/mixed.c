/* mixed.c: the mixed-precision cache of the mixed-precision proposal (llama.cpp's mixed KV
 * cache design), with gradual aging.
 *
 * Per (layer, sequence, KV head) the rows sit in up to three runs, oldest
 * first: cold (default q4_0), warm (optional, e.g. q8_0) and hot (f16). New
 * rows enter hot. When hot holds more than `hot` rows, its oldest `group`
 * rows are re-encoded into the next colder run; when warm holds more than
 * `warm_rows`, its oldest group moves to cold. Attention reads the runs as
 * three blocks, each in its own format: fused (the codecs decode in
 * registers) or, with --attention materialize, through the mixed-precision proposal's merged
 * f32 view, its traffic counted.
 *
 * Each run is a contiguous array in position order; a move re-encodes the
 * oldest group and slides the rest of its run down (counted as copies). */
#include "kv/layouts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RUN_COLD, RUN_WARM, RUN_HOT, N_RUNS };

typedef struct {
    KvCache base;
    KvStorage st;
    size_t hot, group, warm_rows;  /* thresholds; warm_rows = 0: no warm run */
    Format fmt[N_RUNS];
    size_t row[N_RUNS];            /* bytes per row */
    int n_tensors;                 /* 2 (K and V), or 1 for a k_only geometry: V holds nothing */
    size_t cap[N_RUNS];            /* rows per run per (layer, seq, head) */
    unsigned char *k[N_RUNS], *v[N_RUNS]; /* [layer][seq][head][cap] rows */
    size_t *n;                     /* [layer][seq][N_RUNS] rows per run */
    size_t *len;                   /* [layer][seq] positions appended */
    size_t moves;                  /* groups re-encoded */
    float *scratch;                /* one decoded row */
} Mixed;

static size_t seq_slot(const Mixed *m, size_t layer, size_t seq)
{
    return layer * m->base.geo.n_seqs + seq;
}

static unsigned char *row_ptr(const Mixed *m, unsigned char *const *base, int run, size_t layer, size_t seq,
                              size_t h, size_t i)
{
    if (base == m->v && m->n_tensors == 1) /* k_only: V is not stored; point at K's row, never read */
        base = m->k;
    size_t idx = (seq_slot(m, layer, seq) * m->base.geo.n_kv_heads + h) * m->cap[run] + i;
    return base[run] + idx * m->row[run];
}

/* Re-encode the oldest `group` rows of run `from` at the end of run `to`,
 * then slide the rest of `from` down. */
static void move_group(Mixed *m, size_t layer, size_t seq, int from, int to, Counters *ctr)
{
    const KvGeometry *g = &m->base.geo;
    size_t *n = &m->n[seq_slot(m, layer, seq) * N_RUNS];
    unsigned char *const *bases[2] = { m->k, m->v };
    for (int kv = 0; kv < m->n_tensors; kv++)
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            for (size_t i = 0; i < m->group; i++) {
                m->st.codec[m->fmt[from]].dequantize(m->scratch, row_ptr(m, bases[kv], from, layer, seq, h, i),
                                                      g->head_dim);
                m->st.codec[m->fmt[to]].quantize(row_ptr(m, bases[kv], to, layer, seq, h, n[to] + i), m->scratch,
                                                 g->head_dim);
            }
            size_t rest = n[from] - m->group;
            memmove(row_ptr(m, bases[kv], from, layer, seq, h, 0),
                    row_ptr(m, bases[kv], from, layer, seq, h, m->group), rest * m->row[from]);
            if (ctr)
                ctr->bytes_copied += rest * m->row[from];
        }
    n[from] -= m->group;
    n[to] += m->group;
    m->moves++;
}

static int mixed_append(KvCache *base, size_t layer, size_t seq, size_t pos, size_t n_new, const float *k,
                        const float *v, Counters *ctr, Err *e)
{
    Mixed *m = (Mixed *)base;
    const KvGeometry *g = &base->geo;
    size_t *len = &m->len[seq_slot(m, layer, seq)];
    size_t *n = &m->n[seq_slot(m, layer, seq) * N_RUNS];
    if (pos != *len)
        return err_set(e, ERR_RUNTIME, "mixed cache: append at position %zu, expected %zu", pos, *len);
    if (n_new > g->max_seq_len - pos)
        return err_set(e, ERR_RUNTIME, "cache overflow: %zu rows held + %zu new > max_seq_len %zu", pos, n_new,
                       g->max_seq_len);
    for (size_t t = 0; t < n_new; t++) {
        for (size_t h = 0; h < g->n_kv_heads; h++) {
            const float *kt = k + t * g->n_kv_heads * g->head_dim, *vt = v + t * g->n_kv_heads * g->head_dim;
            kv_encode_rows(row_ptr(m, m->k, RUN_HOT, layer, seq, h, n[RUN_HOT]), 0, kt, 1, h, g,
                           &m->st.codec[m->fmt[RUN_HOT]]);
            if (m->n_tensors == 2)
                kv_encode_rows(row_ptr(m, m->v, RUN_HOT, layer, seq, h, n[RUN_HOT]), 0, vt, 1, h, g,
                               &m->st.codec[m->fmt[RUN_HOT]]);
        }
        n[RUN_HOT]++;
        /* age one row at a time, so a long prefill ages exactly as decode does */
        if (n[RUN_HOT] > m->hot)
            move_group(m, layer, seq, RUN_HOT, m->warm_rows ? RUN_WARM : RUN_COLD, ctr);
        if (m->warm_rows && n[RUN_WARM] > m->warm_rows)
            move_group(m, layer, seq, RUN_WARM, RUN_COLD, ctr);
    }
    *len += n_new;
    if (ctr)
        ctr->kv_bytes_written += n_new * g->n_kv_heads * m->n_tensors * m->row[RUN_HOT];
    return 0;
}

static size_t mixed_length(const KvCache *base, size_t layer, size_t seq)
{
    const Mixed *m = (const Mixed *)base;
    return m->len[seq_slot(m, layer, seq)];
}

static size_t mixed_n_blocks(const KvCache *base, size_t layer, size_t seq)
{
    const Mixed *m = (const Mixed *)base;
    const size_t *n = &m->n[seq_slot(m, layer, seq) * N_RUNS];
    return (n[RUN_COLD] > 0) + (n[RUN_WARM] > 0) + (n[RUN_HOT] > 0);
}

static void mixed_block(const KvCache *base, size_t layer, size_t seq, size_t h, size_t i, KvBlock *out)
{
    const Mixed *m = (const Mixed *)base;
    const size_t *n = &m->n[seq_slot(m, layer, seq) * N_RUNS];
    size_t pos = 0;
    for (int run = 0; run < N_RUNS; run++) {
        if (!n[run])
            continue;
        if (i-- == 0) {
            *out = (KvBlock){
                .pos = pos, .n = n[run],
                .k = row_ptr(m, m->k, run, layer, seq, h, 0), .v = row_ptr(m, m->v, run, layer, seq, h, 0),
                .k_stride = m->row[run], .v_stride = m->row[run],
                .k_fmt = m->fmt[run], .v_fmt = m->fmt[run],
            };
            return;
        }
        pos += n[run];
    }
}

static size_t mixed_bytes_used(const KvCache *base)
{
    const Mixed *m = (const Mixed *)base;
    size_t bytes = 0;
    for (size_t s = 0; s < base->geo.n_layers * base->geo.n_seqs; s++)
        for (int run = 0; run < N_RUNS; run++)
            bytes += m->n[s * N_RUNS + run] * m->n_tensors * m->row[run];
    return bytes * base->geo.n_kv_heads;
}

static size_t mixed_bytes_reserved(const KvCache *base)
{
    const Mixed *m = (const Mixed *)base;
    size_t per = 0;
    for (int run = 0; run < N_RUNS; run++)
        per += m->cap[run] * m->n_tensors * m->row[run];
    return base->geo.n_layers * base->geo.n_seqs * base->geo.n_kv_heads * per;
}

static void mixed_cells(const KvCache *base, size_t layer, size_t seq, KvCell *out, size_t n)
{
    const Mixed *m = (const Mixed *)base;
    const size_t *runs = &m->n[seq_slot(m, layer, seq) * N_RUNS];
    size_t pos = 0;
    for (size_t i = 0; i < n; i++)
        out[i] = (KvCell){ .state = CELL_EMPTY };
    for (int run = 0; run < N_RUNS; run++)
        for (size_t r = 0; r < runs[run] && pos < n; r++, pos++)
            out[pos] = (KvCell){ .state = (unsigned char)(m->fmt[run] == FMT_F32 ? CELL_EXACT : CELL_LOSSY),
                                 .k_fmt = (unsigned char)m->fmt[run], .v_fmt = (unsigned char)m->fmt[run],
                                 .page_start = r == 0 };
}

static void mixed_drop(KvCache *base, size_t seq)
{
    Mixed *m = (Mixed *)base;
    for (size_t l = 0; l < base->geo.n_layers; l++) {
        m->len[seq_slot(m, l, seq)] = 0;
        memset(&m->n[seq_slot(m, l, seq) * N_RUNS], 0, N_RUNS * sizeof *m->n);
    }
}

static void mixed_reset(KvCache *base)
{
    for (size_t s = 0; s < base->geo.n_seqs; s++)
        mixed_drop(base, s);
    ((Mixed *)base)->moves = 0;
}

static int mixed_fork(KvCache *base, size_t src, size_t dst, Counters *ctr, Err *e)
{
    Mixed *m = (Mixed *)base;
    const KvGeometry *g = &base->geo;
    if (m->len[seq_slot(m, 0, dst)])
        return err_set(e, ERR_RUNTIME, "fork: sequence %zu is not empty", dst);
    for (size_t l = 0; l < g->n_layers; l++) {
        for (int run = 0; run < N_RUNS; run++) {
            size_t bytes = g->n_kv_heads * m->cap[run] * m->row[run];
            memcpy(row_ptr(m, m->k, run, l, dst, 0, 0), row_ptr(m, m->k, run, l, src, 0, 0), bytes);
            if (m->n_tensors == 2)
                memcpy(row_ptr(m, m->v, run, l, dst, 0, 0), row_ptr(m, m->v, run, l, src, 0, 0), bytes);
            if (ctr)
                ctr->bytes_copied += m->n_tensors * bytes;
        }
        memcpy(&m->n[seq_slot(m, l, dst) * N_RUNS], &m->n[seq_slot(m, l, src) * N_RUNS], N_RUNS * sizeof *m->n);
        m->len[seq_slot(m, l, dst)] = m->len[seq_slot(m, l, src)];
    }
    return 0;
}

static void mixed_stats(const KvCache *base, KvStats *out)
{
    out->evictions = 0; /* nothing is dropped: rows only change format */
    (void)base;
}

static void mixed_destroy(KvCache *base)
{
    Mixed *m = (Mixed *)base;
    for (int run = 0; run < N_RUNS; run++) {
        free(m->k[run]);
        free(m->v[run]);
    }
    free(m->n);
    free(m->len);
    free(m->scratch);
    free(m);
}

/* New rows are hot; the oldest groups age to warm (when there is one), then cold. */
static void mixed_formats(const KvCache *base, char *buf, size_t cap)
{
    const Mixed *m = (const Mixed *)base;
    if (m->warm_rows)
        snprintf(buf, cap, "K/V %s hot, %s warm, %s cold", format_name(m->fmt[RUN_HOT]),
                 format_name(m->fmt[RUN_WARM]), format_name(m->fmt[RUN_COLD]));
    else
        snprintf(buf, cap, "K/V %s hot, %s cold", format_name(m->fmt[RUN_HOT]), format_name(m->fmt[RUN_COLD]));
}

static const KvCacheOps mixed_ops = {
    .name = "mixed",
    .rollback = "new rows age the older ones (f16 to q8_0 to q4_0): rows re-encoded because rejected rows arrived cannot get their f16 values back",
    .append = mixed_append,
    .n_blocks = mixed_n_blocks,
    .block = mixed_block,
    .length = mixed_length,
    .bytes_used = mixed_bytes_used,
    .bytes_reserved = mixed_bytes_reserved,
    .reset = mixed_reset,
    .cells = mixed_cells,
    .fork = mixed_fork,
    .drop = mixed_drop,
    .stats = mixed_stats,
    .formats = mixed_formats,
    .destroy = mixed_destroy,
};

KvCache *mixed_open(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e)
{
    size_t hot = 32, group = 16, warm_rows = 0;
    Format cold = FMT_Q4_0, warm = FMT_Q8_0;
    if (spec_take_size(opts, "hot", &hot, e) < 0 || spec_take_size(opts, "group", &group, e) < 0 ||
        spec_take_size(opts, "warm_rows", &warm_rows, e) < 0 || spec_take_format(opts, "cold", &cold, e) < 0 ||
        spec_take_format(opts, "warm", &warm, e) < 0 ||
        spec_check_all_taken(opts, "hot=ROWS, group=ROWS, cold=FMT, warm=FMT, warm_rows=ROWS", e) < 0)
        return NULL;
    if (group > hot) {
        err_set(e, ERR_USAGE, "cache 'mixed': group=%zu must not exceed hot=%zu", group, hot);
        return NULL;
    }
    if (warm_rows && group > warm_rows) {
        err_set(e, ERR_USAGE, "cache 'mixed': group=%zu must not exceed warm_rows=%zu", group, warm_rows);
        return NULL;
    }
    /* A sequence never holds more than max_seq_len rows: a hot or warm run
     * longer than that never fills, so it is kept at that (the same rows). */
    if (hot > geo->max_seq_len)
        hot = geo->max_seq_len;
    if (group > hot)
        group = hot;
    if (warm_rows > geo->max_seq_len)
        warm_rows = geo->max_seq_len;
    /* the runs the spec sizes: hot (f16) and warm; cold is max_seq_len's */
    const size_t hot_row = format_row_bytes(FMT_F16, geo->head_dim), warm_row = format_row_bytes(warm, geo->head_dim);
    if (kv_check_fit(geo, "mixed", hot + 1, "hot rows per layer, sequence and KV head",
                     kv_head_row_bytes(geo, hot_row, geo->k_only ? 0 : hot_row), e) < 0 ||
        (warm_rows && kv_check_fit(geo, "mixed", warm_rows + group, "warm rows per layer, sequence and KV head",
                                   kv_head_row_bytes(geo, warm_row, geo->k_only ? 0 : warm_row), e) < 0))
        return NULL;
    Mixed *m = calloc(1, sizeof *m);
    if (!m) {
        err_set(e, ERR_RUNTIME, "mixed cache: out of memory");
        return NULL;
    }
    m->base.ops = &mixed_ops;
    m->base.geo = *geo;
    m->base.lossy = 1;
    m->st = *st;
    m->hot = hot, m->group = group, m->warm_rows = warm_rows;
    m->n_tensors = geo->k_only ? 1 : 2;
    m->fmt[RUN_COLD] = cold, m->fmt[RUN_WARM] = warm, m->fmt[RUN_HOT] = FMT_F16;
    m->cap[RUN_HOT] = hot + 1; /* it moves a group as soon as it passes hot */
    m->cap[RUN_WARM] = warm_rows ? warm_rows + group : 0; /* it receives a whole group at a time */
    m->cap[RUN_COLD] = geo->max_seq_len;
    size_t slots = geo->n_layers * geo->n_seqs * geo->n_kv_heads;
    int ok = 1;
    for (int run = 0; run < N_RUNS; run++) {
        m->row[run] = format_row_bytes(m->fmt[run], geo->head_dim);
        m->k[run] = calloc(slots * m->cap[run] + 1, m->row[run]);
        m->v[run] = geo->k_only ? NULL : calloc(slots * m->cap[run] + 1, m->row[run]);
        ok &= m->k[run] && (geo->k_only || m->v[run]);
    }
    m->n = calloc(geo->n_layers * geo->n_seqs * N_RUNS, sizeof *m->n);
    m->len = calloc(geo->n_layers * geo->n_seqs, sizeof *m->len);
    m->scratch = malloc(geo->head_dim * sizeof(float));
    if (!ok || !m->n || !m->len || !m->scratch) {
        mixed_destroy(&m->base);
        err_set(e, ERR_RUNTIME, "mixed cache: out of memory");
        return NULL;
    }
    return &m->base;
}
