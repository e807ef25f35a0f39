/* cache.c: what every layout shares: row sizes, allocation, statistics, the
 * view's cell map of a prefix, encoding rows into a format, and freeing. */
#include "kv/cache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/layouts.h"
#include "util/human.h"
#include "util/sysmem.h"

size_t kv_row_pair_bytes(const KvGeometry *g, Format k_fmt, Format v_fmt)
{
    size_t v_row = g->k_only ? 0 : format_row_bytes(v_fmt, g->head_dim);
    return g->n_kv_heads * (format_row_bytes(k_fmt, g->head_dim) + v_row);
}

void *kv_calloc(size_t n, size_t size)
{
    return (n && size) ? calloc(n, size) : calloc(1, 1);
}

size_t kv_head_row_bytes(const KvGeometry *g, size_t k_row, size_t v_row)
{
    size_t heads = g->n_layers, out;
    if (__builtin_mul_overflow(heads, g->n_seqs, &heads) || __builtin_mul_overflow(heads, g->n_kv_heads, &heads) ||
        __builtin_add_overflow(k_row, v_row, &out) || __builtin_mul_overflow(heads, out, &out))
        return SIZE_MAX;
    return out;
}

int kv_check_fit(const KvGeometry *g, const char *cache, size_t count, const char *unit, size_t unit_bytes, Err *e)
{
    size_t limit = g->mem_limit ? g->mem_limit : sysmem_physical_bytes();
    if (limit == 0) /* unknown physical memory: still refuse what size_t cannot count */
        limit = SIZE_MAX;
    size_t most = unit_bytes ? limit / unit_bytes : SIZE_MAX;
    if (count <= most)
        return 0;
    char need_s[32], have_s[32];
    human_bytes(need_s, sizeof need_s, (double)count * (double)unit_bytes);
    human_bytes(have_s, sizeof have_s, (double)limit);
    if (g->mem_limit)
        return err_set(e, ERR_USAGE, "cache '%s' needs %s for %zu %s; its limit of %s holds at most %zu", cache,
                       need_s, count, unit, have_s, most);
    return err_set(e, ERR_USAGE, "cache '%s' needs %s for %zu %s; this machine's %s of memory holds at most %zu",
                   cache, need_s, count, unit, have_s, most);
}

void kv_stats(const KvCache *c, KvStats *out)
{
    memset(out, 0, sizeof *out);
    if (c->ops->stats)
        c->ops->stats(c, out);
}

void kv_formats(const KvCache *c, char *buf, size_t cap)
{
    if (c->ops->formats)
        c->ops->formats(c, buf, cap);
    else
        snprintf(buf, cap, "K/V %s/%s", format_name(c->k_fmt), format_name(c->v_fmt));
}

void kv_cells_prefix(const KvCache *c, size_t len, KvCell *out, size_t n)
{
    int lossy = c->k_fmt != FMT_F32 || c->v_fmt != FMT_F32;
    for (size_t i = 0; i < n; i++)
        out[i] = (KvCell){
            .state = (unsigned char)(i < len ? (lossy ? CELL_LOSSY : CELL_EXACT) : CELL_EMPTY),
            .k_fmt = (unsigned char)c->k_fmt, .v_fmt = (unsigned char)c->v_fmt,
            .page_start = i == 0,
        };
}

void kv_encode_rows(void *dst, size_t dst_stride, const float *src, size_t n, size_t h, const KvGeometry *g,
                    const FormatOps *ops)
{
    for (size_t t = 0; t < n; t++)
        ops->quantize((char *)dst + t * dst_stride, src + (t * g->n_kv_heads + h) * g->head_dim, g->head_dim);
}

int kv_check_room(const KvCache *c, size_t rows, Err *e)
{
    if (kv_shifts(c)) /* it discards old rows to make room */
        return 0;
    const size_t cap = kv_capacity(c);
    if (rows > cap)
        return err_set(e, ERR_RUNTIME, "cache overflow: cache '%s' holds %zu rows per sequence; the run needs %zu",
                       c->spec, cap, rows);
    return 0;
}

void kv_free(KvCache *c)
{
    if (c)
        c->ops->destroy(c);
}

int kv_truncate(KvCache *c, size_t seq, size_t len, Counters *ctr, Err *e)
{
    if (!c->ops->truncate)
        return err_set(e, ERR_USAGE, "cache '%s' cannot roll back rows: %s", c->spec,
                       c->ops->rollback ? c->ops->rollback : "it has no truncate operation");
    for (size_t l = 0; l < c->geo.n_layers; l++)
        if (len > kv_length(c, l, seq))
            return err_set(e, ERR_RUNTIME, "roll back of sequence %zu to %zu rows: layer %zu holds %zu", seq, len, l,
                           kv_length(c, l, seq));
    return c->ops->truncate(c, seq, len, ctr, e);
}

int kv_can_roll_back(KvCache *c, Err *e)
{
    return kv_truncate(c, 0, kv_length(c, 0, 0), NULL, e);
}
