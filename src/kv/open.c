/* open.c: a cache from its spec string (cache.h's kv_open): the layouts by
 * name with their help, and the modifiers every layout takes. */
#include "kv/cache.h"

#include <stdio.h>
#include <string.h>

#include "kv/layouts.h"

typedef struct {
    const char *name;
    const char *help;
    KvCache *(*open)(KvSpecPart *opts, const KvGeometry *geo, const KvStorage *st, Err *e);
    int own_formats; /* sets its base.k_fmt and v_fmt itself and takes no +quant (kivi) */
} Layout;

static const Layout layouts[] = {
    { "contiguous", "contiguous[:max=ROWS]   pre-allocated to max_seq_len (or ROWS); overflow is an error",
      contiguous_open, 0 },
    { "dynamic", "dynamic                 grows by reallocating and copying at every append", dynamic_open, 0 },
    { "ring", "ring:window=W[,sinks=S,pass=P] the last W positions (plus the first S, kept\n"
              "                          for good) in a ring of W + P - 1 slots; passes of <= P tokens",
      ring_open, 0 },
    { "shift", "shift[:ctx=C,keep=N]    llama.cpp's context shift: C rows (default max_seq_len); when\n"
               "                          full, keep the first N, discard the older half of the rest and\n"
               "                          rotate the kept keys back, so a run may outgrow the context",
      shift_open, 0 },
    { "mixed", "mixed[:hot=32,group=16,cold=q4_0,warm=q8_0,warm_rows=R] recent rows f16; past hot,\n"
               "                          the oldest group is quantized (to warm when warm_rows is set)",
      mixed_open, 0 },
    { "h2o", "h2o[:budget=256,recent=64,pass=P] heavy hitters: at most budget positions per layer,\n"
             "                          the recent ones plus those that drew the most attention", h2o_open, 0 },
    { "snapkv", "snapkv[:budget=256,window=32,pool=7] SnapKV: after the prompt, its last window\n"
                "                          queries vote (pooled over pool neighbours) for the budget\n"
                "                          positions per layer to keep; decode keeps every token", snapkv_open, 0 },
    { "paged", "paged[:page=16,pages=N] a pool of N pages of 16 rows, block tables, prefix sharing,\n"
               "                          copy on write (N: enough for every sequence by default)", paged_open, 0 },
    { "kivi", "kivi[:bits=4,group=32,v=q4_0] KIVI: keys quantized per channel (bits 4 or 2, a scale and\n"
              "                          minimum per channel per group of rows), values per token in v;\n"
              "                          the recent rows stay f16 until they fill a group", kivi_open, 1 },
};

static const char modifiers_help[] =
    "  +quant:k=FMT,v=FMT      store K and V in a format each (f32, f16, q8_0, q4_0, int4, fp4);\n"
    "                          every layout but kivi, which sets its own\n"
    "  +sparse:threshold=T,keep=R  (paged) past T tokens keep the most recent fraction R of the\n"
    "                          pages and give the others back (the MLA notes' block-sparse mode)\n";

void kv_spec_help(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0] && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "  %s\n", layouts[i].help);
    if (used < cap)
        snprintf(buf + used, cap - used, "%s", modifiers_help);
}

int kv_spec_shifts(const char *text)
{
    KvSpec spec;
    Err e = { 0 };
    return spec_parse(text, &spec, &e) == 0 && strcmp(spec.part[0].name, "shift") == 0; /* shift_ops' pos_shift */
}

/* "+quant" applies to every layout; other modifiers are the layout's. */
static int apply_quant(KvSpec *spec, KvStorage *st, Err *e)
{
    KvSpecPart *p = spec_modifier(spec, "quant");
    if (!p)
        return 0;
    if (spec_take_format(p, "k", &st->k_fmt, e) < 0 || spec_take_format(p, "v", &st->v_fmt, e) < 0 ||
        spec_check_all_taken(p, "k=FMT, v=FMT", e) < 0)
        return -1;
    return 0;
}

static int check_modifiers_used(const KvSpec *spec, Err *e)
{
    for (size_t i = 1; i < spec->n_parts; i++)
        if (!spec->part[i].used)
            return err_set(e, ERR_USAGE, "cache '%s' takes no modifier '+%s' (modifiers: +quant for every layout, "
                           "+sparse for paged)", spec->part[0].name, spec->part[i].name);
    return 0;
}

KvCache *kv_open(const char *text, const KvGeometry *geo, Err *e)
{
    KvSpec spec;
    if (spec_parse(text, &spec, e) < 0)
        return NULL;
    KvStorage st = { FMT_F32, FMT_F32, geo->codec ? geo->codec : codec_ref, &spec };
    if (apply_quant(&spec, &st, e) < 0)
        return NULL;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        if (strcmp(spec.part[0].name, layouts[i].name) != 0)
            continue;
        if (layouts[i].own_formats && spec_modifier(&spec, "quant")) {
            err_set(e, ERR_USAGE, "cache '%s' sets its own formats; it takes no '+quant'", layouts[i].name);
            return NULL;
        }
        KvCache *c = layouts[i].open(&spec.part[0], geo, &st, e);
        if (c && check_modifiers_used(&spec, e) < 0) {
            kv_free(c);
            return NULL;
        }
        if (c) {
            snprintf(c->spec, sizeof c->spec, "%s", text);
            if (!layouts[i].own_formats) {
                c->k_fmt = st.k_fmt;
                c->v_fmt = st.v_fmt;
            }
            c->lossy |= st.k_fmt != FMT_F32 || st.v_fmt != FMT_F32;
        }
        return c;
    }
    char names[256];
    size_t used = 0;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", layouts[i].name);
    err_set(e, ERR_USAGE, "unknown cache '%s' (accepted: %s)", spec.part[0].name, names);
    return NULL;
}
