/* plot_memory.c: figure 4, KV cache memory from the model configs alone
 * (model/memory.h): every byte computed from a Config and a Format. */
#include "plot/plot.h"

#include <string.h>

#include "model/memory.h"

/* Contexts of the memory-vs-context curves: powers of two. */
#define CTX_FROM 256
#define CTX_TO 131072
/* The format of those curves; the second table has every format. */
#define CURVE_FMT FMT_F16

typedef enum {
    V_NATIVE,   /* the cache the config itself stores (GQA, MHA, or the MLA latent) */
    V_MQA,      /* the same model with one KV head: what MQA would store */
    V_REFERENCE /* what the config is compared with: the MLA latent's decompressed K,V */
} Variant;

static const struct {
    const char *model;
    Variant variant;
} series[] = {
    { "llama-2-7b", V_NATIVE },       { "llama-3-8b", V_NATIVE },
    { "llama-3-8b", V_MQA },          { "mistral-7b", V_NATIVE },
    { "deepseek-v2-lite", V_REFERENCE }, { "deepseek-v2-lite", V_NATIVE },
    { "glm-mla", V_NATIVE },
};
#define N_SERIES (sizeof series / sizeof series[0])

typedef struct {
    Config cfg;
    KvShape shape;
    char label[128];
} Series;

/* "llama-3-8b GQA: 8 KV heads x 128, 32 layers", all from the config. */
static int series_init(Series *s, const char *model, Variant v, Err *e)
{
    ModelOpts mo = { .model = model };
    if (setup_load_config(&mo, &s->cfg, e) < 0)
        return -1;
    Config *c = &s->cfg;
    if (v == V_MQA)
        c->n_kv_heads = 1;
    s->shape = memory_shape(c);
    if (v == V_REFERENCE && memory_shape_reference(c, &s->shape) < 0)
        return err_set(e, ERR_RUNTIME, "plot: model '%s' has no reference shape", model);
    const KvShape *k = &s->shape;
    char window[48] = "";
    if (c->sliding_window)
        snprintf(window, sizeof window, ", window %zu", c->sliding_window);
    switch (k->kind) {
    case KV_SHAPE_MLA_LATENT:
        snprintf(s->label, sizeof s->label, "%.40s MLA latent: %zu + %zu values, %zu layers", c->name,
                 c->kv_lora_rank, c->qk_rope_dim, c->n_layers);
        break;
    case KV_SHAPE_MLA_DECOMPRESSED:
        snprintf(s->label, sizeof s->label, "%.40s decompressed: %zu heads x (K %zu + V %zu), %zu layers", c->name,
                 k->k_rows, k->k_len, k->v_len, c->n_layers);
        break;
    default: {
        const char *kind = c->n_kv_heads == c->n_heads ? "MHA" : c->n_kv_heads == 1 ? "MQA" : "GQA";
        snprintf(s->label, sizeof s->label, "%.40s%s %s: %zu KV head%s x %zu, %zu layers%s", c->name,
                 v == V_MQA ? " as" : "", kind, c->n_kv_heads, c->n_kv_heads == 1 ? "" : "s", c->head_dim,
                 c->n_layers, window);
    }
    }
    return 0;
}

int plot_memory(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    Series s[N_SERIES];
    for (size_t i = 0; i < N_SERIES; i++)
        if (series_init(&s[i], series[i].model, series[i].variant, e) < 0)
            return -1;

    /* memory.tsv: bytes of the whole cache (batch 1) per context, f16 */
    FILE *f = plot_open(ctx, "memory.tsv", e);
    if (!f)
        return -1;
    fputs("context", f);
    for (size_t i = 0; i < N_SERIES; i++)
        fprintf(f, "\t%s", s[i].label);
    fputc('\n', f);
    for (size_t ctxlen = CTX_FROM; ctxlen <= CTX_TO; ctxlen *= 2) {
        fprintf(f, "%zu", ctxlen);
        for (size_t i = 0; i < N_SERIES; i++) {
            KvBytes b;
            if (memory_bytes(&s[i].cfg, &s[i].shape, CURVE_FMT, memory_cached_positions(&s[i].cfg, ctxlen), 1, &b,
                             e) < 0) {
                plot_close(f, "memory.tsv", NULL);
                return -1;
            }
            fprintf(f, "\t%zu", b.total);
        }
        fputc('\n', f);
    }
    if (plot_close(f, "memory.tsv", e) < 0)
        return -1;

    /* memory.formats.tsv: bytes per token (all layers), a row per format and
     * a column per shape, as memory.tsv, so each shape keeps its colour */
    if (!(f = plot_open(ctx, "memory.formats.tsv", e)))
        return -1;
    fputs("format", f);
    for (size_t i = 0; i < N_SERIES; i++)
        fprintf(f, "\t%s", s[i].label);
    fputc('\n', f);
    size_t worst = 0, best = SIZE_MAX;
    for (int fmt = 0; fmt < FMT_ROW_COUNT; fmt++) {
        fprintf(f, "%s", format_name((Format)fmt));
        for (size_t i = 0; i < N_SERIES; i++) {
            size_t tok = memory_token_layer_bytes(&s[i].shape, (Format)fmt) * s[i].cfg.n_layers;
            fprintf(f, "\t%zu", tok);
            worst = tok > worst ? tok : worst;
            best = tok < best ? tok : best;
        }
        fputc('\n', f);
    }
    if (plot_close(f, "memory.formats.tsv", e) < 0)
        return -1;

    char caption[512];
    snprintf(caption, sizeof caption,
             "closed forms of model/memory.h over the configs in data/models (nothing run, no seed); batch 1\n"
             "MQA: llama-3-8b with n_kv_heads = 1 (a what-if); mistral-7b holds only its window (up to it, the same "
             "as llama-3-8b)\nmachine: %s", ctx->machine);
    FILE *labels = plot_labels_open(ctx, "memory", "KV cache memory: MHA vs GQA vs MQA vs MLA, and per format",
                                    caption, e);
    if (!labels)
        return -1;
    fprintf(labels, "curve_format = \"%s\"\n", format_name(CURVE_FMT));
    if (plot_close(labels, "memory", e) < 0)
        return -1;
    snprintf(note->note, sizeof note->note, "%zu configs x %d formats; bytes per token from %zu to %zu",
             N_SERIES, FMT_ROW_COUNT, best, worst);
    return 0;
}
