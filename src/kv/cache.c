#include "kv/cache.h"

#include <stdio.h>
#include <string.h>

#include "kv/layouts.h"

typedef struct {
    const char *name;
    const char *help;
    KvCache *(*open)(KvSpec *spec, const KvGeometry *geo, Err *e);
} Layout;

static const Layout layouts[] = {
    { "contiguous", "contiguous[:max=ROWS]  pre-allocated to max_seq_len (or ROWS); overflow is an error",
      contiguous_open },
    { "dynamic", "dynamic                grows by reallocating and copying at every append", dynamic_open },
};

void kv_spec_help(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0] && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "  %s\n", layouts[i].help);
}

size_t kv_row_pair_bytes(const KvGeometry *g, Format k_fmt, Format v_fmt)
{
    return g->n_kv_heads * (format_row_bytes(k_fmt, g->head_dim) + format_row_bytes(v_fmt, g->head_dim));
}

KvCache *kv_open(const char *text, const KvGeometry *geo, Err *e)
{
    KvSpec spec;
    if (spec_parse(text, &spec, e) < 0)
        return NULL;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        if (strcmp(spec.name, layouts[i].name) != 0)
            continue;
        KvCache *c = layouts[i].open(&spec, geo, e);
        if (c)
            snprintf(c->spec, sizeof c->spec, "%s", text);
        return c;
    }
    char names[256];
    size_t used = 0;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", layouts[i].name);
    err_set(e, ERR_USAGE, "unknown cache '%s' (accepted: %s)", spec.name, names);
    return NULL;
}

void kv_free(KvCache *c)
{
    if (c)
        c->ops->destroy(c);
}
