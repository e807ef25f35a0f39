/* plot_mla.c: figure 10, multi-head latent attention (model/mla.h). (a) What
 * one token costs in the cache of MHA, GQA, MQA and MLA configs (the closed
 * forms of model/memory.h, checked against the bytes an MLA cache really
 * held in a run). (b) The work of the attention sublayer per generated
 * token, measured by the engine's counters in real generation runs, on the
 * two read paths: absorbed (W_uk and W_uv folded into the query and the
 * output, attention straight on the latent) and decompress (every row
 * up-projected to per-head K and V), with the MLA notes' LRU of decompressed
 * tiles and without one. */
#include "plot/plot.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/generate.h"
#include "model/memory.h"
#include "model/mla.h"

#define RUN_MODEL "mla-tiny"
#define RUN_FMT FMT_F32   /* the cache of the runs */
#define BAR_FMT FMT_F16   /* the bars of (a) */

/* (a): the configs, each as stored and, for MLA, as the per-head K,V its
 * latent stands for. */
typedef enum { B_NATIVE, B_MQA, B_REFERENCE } BarVariant;
static const struct {
    const char *model;
    BarVariant variant;
} bars[] = {
    { "llama-2-7b", B_NATIVE },       { "llama-3-8b", B_NATIVE },      { "llama-3-8b", B_MQA },
    { "deepseek-v2-lite", B_REFERENCE }, { "deepseek-v2-lite", B_NATIVE }, { "glm-mla", B_REFERENCE },
    { "glm-mla", B_NATIVE },
};
#define N_BARS (sizeof bars / sizeof bars[0])

static int bytes_table(const PlotCtx *ctx, Err *e)
{
    FILE *f = plot_open(ctx, "mla.bytes.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "label\tkind\tlayers\tvalues_per_token_layer\tbytes_per_token_%s\tbytes_per_token_%s\t"
               "mha_bytes_per_token_%s\n",
            format_name(BAR_FMT), format_name(RUN_FMT), format_name(BAR_FMT));
    for (size_t i = 0; i < N_BARS; i++) {
        ModelOpts mo = { .model = bars[i].model };
        Config c;
        if (setup_load_config(&mo, &c, e) < 0) {
            plot_close(f, "mla.bytes.tsv", NULL);
            return -1;
        }
        if (bars[i].variant == B_MQA)
            c.n_kv_heads = 1;
        KvShape s = memory_shape(&c), mha;
        int have_ref = memory_shape_reference(&c, &mha) == 0;
        if (bars[i].variant == B_REFERENCE) {
            if (!have_ref) {
                plot_close(f, "mla.bytes.tsv", NULL);
                return err_set(e, ERR_RUNTIME, "plot: model '%s' has no reference shape", c.name);
            }
            s = mha;
        } else if (!have_ref) { /* MHA already */
            mha = s;
        }
        const char *kind;
        char label[96];
        if (s.kind == KV_SHAPE_MLA_LATENT) {
            kind = "MLA";
            snprintf(label, sizeof label, "%.40s MLA latent (%zu + %zu)", c.name, c.kv_lora_rank, c.qk_rope_dim);
        } else if (s.kind == KV_SHAPE_MLA_DECOMPRESSED) {
            kind = "MLA-decompressed";
            snprintf(label, sizeof label, "%.40s as MHA (%zu heads x %zu + %zu)", c.name, s.k_rows, s.k_len,
                     s.v_len);
        } else {
            kind = c.n_kv_heads == c.n_heads ? "MHA" : c.n_kv_heads == 1 ? "MQA" : "GQA";
            snprintf(label, sizeof label, "%.40s%s %s (%zu x %zu)", c.name, bars[i].variant == B_MQA ? " as" : "",
                     kind, c.n_kv_heads, c.head_dim);
        }
        fprintf(f, "%s\t%s\t%zu\t%zu\t%zu\t%zu\t%zu\n", label, kind, c.n_layers, memory_shape_values(&s),
                memory_token_layer_bytes(&s, BAR_FMT) * c.n_layers, memory_token_layer_bytes(&s, RUN_FMT) * c.n_layers,
                memory_token_layer_bytes(&mha, BAR_FMT) * c.n_layers);
    }
    return plot_close(f, "mla.bytes.tsv", e);
}

/* (b): one generation, step by step. */
enum { P_ABSORBED, P_DECOMPRESS_LRU, P_DECOMPRESS, N_PATHS };

typedef struct {
    size_t n;
    uint64_t *flops;     /* [n] the attention sublayer: projections (with W_uk, W_uv) and attention */
    uint64_t *rows_up;   /* [n] rows up-projected by the pass (decompress) */
    uint64_t kv_read;    /* latent bytes read from the cache, the whole run */
    uint64_t last_rows;  /* cumulative rows_decompressed so far */
    size_t bytes_used, positions;
} Trace;

static int on_step(void *user, const StepReport *r)
{
    Trace *t = user;
    t->flops[t->n] = counters_proj_flops(&r->ctr) + counters_attn_flops(&r->ctr);
    const MlaStats *st = r->state ? mla_state_stats(r->state->mla) : NULL;
    uint64_t rows = st ? st->tiles.rows_decompressed : 0;
    t->rows_up[t->n] = rows - t->last_rows;
    t->last_rows = rows;
    t->kv_read += r->ctr.kv_bytes_read;
    t->n++;
    return 0;
}

static int run_path(Model *m, int path, const int *prompt, size_t n_gen, Trace *t, Err *e)
{
    memset(t, 0, sizeof *t);
    t->flops = calloc(n_gen, sizeof *t->flops);
    t->rows_up = calloc(n_gen, sizeof *t->rows_up);
    int *out = malloc(n_gen * sizeof *out);
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *cache = NULL;
    int rc = t->flops && t->rows_up && out ? 0 : err_set(e, ERR_RUNTIME, "plot: out of memory");
    if (rc == 0 && !(cache = kv_open("contiguous", &geo, e)))
        rc = -1;
    m->mla_path = path == P_ABSORBED ? MLA_ABSORBED : MLA_DECOMPRESS;
    m->mla_tiles = path == P_DECOMPRESS_LRU ? MLA_DEFAULT_TILES : 0;
    GenOptions go = { .n_generate = n_gen, .sample_seed = 1 };
    if (rc == 0)
        rc = generate(m, cache, prompt, 1, 1, &go, out, on_step, t, e);
    if (rc == 0) {
        t->bytes_used = kv_bytes_used(cache);
        t->positions = kv_length(cache, 0, 0);
    }
    kv_free(cache);
    free(out);
    return rc;
}

static void trace_free(Trace *t)
{
    free(t->flops);
    free(t->rows_up);
}

/* Load RUN_MODEL (its memory checked with a full cache of RUN_FMT) and draw
 * its one-token prompt (*prompt, the caller frees). */
static int open_mla_model(const PlotCtx *ctx, Model *m, int **prompt, Err *e)
{
    ModelOpts mo = { .model = RUN_MODEL };
    Config cfg;
    if (setup_load_config(&mo, &cfg, e) < 0)
        return -1;
    KvGeometry g = config_kv_geometry(&cfg, 1);
    if (setup_load_model(&mo, cfg.n_layers * cfg.max_seq_len * kv_row_pair_bytes(&g, RUN_FMT, RUN_FMT), m, e) < 0)
        return -1;
    PromptOpts po = { .len = 1, .seed = ctx->seed };
    size_t batch, plen;
    if (setup_make_prompt(&po, &m->cfg, prompt, &batch, &plen, e) < 0) {
        model_free(m);
        return -1;
    }
    return 0;
}

/* mla.tsv: one row per context (each path's FLOPs per step beside the
 * closed forms); each path's FLOPs summed into sum[]. */
static int write_mla_table(const PlotCtx *ctx, const Config *c, const Trace *t, size_t n_gen, uint64_t *sum, Err *e)
{
    FILE *f = plot_open(ctx, "mla.tsv", e);
    if (!f)
        return -1;
    fputs("context\tabsorbed_flops\tdecompress_lru_flops\tdecompress_flops\tabsorbed_closed_form\t"
          "decompress_closed_form\tdecompress_lru_rows_up\tdecompress_rows_up\n", f);
    for (size_t i = 0; i < n_gen; i++) {
        MlaFlops fa, fd;
        mla_flops(c, MLA_ABSORBED, 1, i + 1, 0, &fa);
        mla_flops(c, MLA_DECOMPRESS, 1, i + 1, i + 1, &fd);
        fprintf(f, "%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
                   "\n", i + 1, t[P_ABSORBED].flops[i], t[P_DECOMPRESS_LRU].flops[i], t[P_DECOMPRESS].flops[i],
                c->n_layers * mla_flops_total(&fa), c->n_layers * mla_flops_total(&fd),
                t[P_DECOMPRESS_LRU].rows_up[i], t[P_DECOMPRESS].rows_up[i]);
        for (int p = 0; p < N_PATHS; p++)
            sum[p] += t[p].flops[i];
    }
    return plot_close(f, "mla.tsv", e);
}

/* mla.labels.gp: the caption, and the bytes per token the absorbed run's
 * cache held beside memory.h's closed forms (latent and MHA). */
static int write_mla_labels(const PlotCtx *ctx, const Model *m, const Trace *t, int prompt0, size_t n_gen, Err *e)
{
    const Config *c = &m->cfg;
    KvShape lat = memory_shape(c), ref;
    size_t formula = memory_token_layer_bytes(&lat, RUN_FMT) * c->n_layers, mha = 0;
    if (memory_shape_reference(c, &ref) == 0)
        mha = memory_token_layer_bytes(&ref, RUN_FMT) * c->n_layers;
    const Trace *ta = &t[P_ABSORBED];
    size_t measured = ta->positions ? ta->bytes_used / ta->positions : 0;
    char caption[1024];
    snprintf(caption, sizeof caption,
             "(a) the closed forms of model/memory.h over data/models (nothing run), %s; engine check: model %s's "
             "latent cache held %zu B per token in the runs of (b), memory.h says %zu B (f32)\n"
             "(b) model %s: %zu layers, %zu heads, latent %zu + %zu values, nope %zu, v %zu; weights %s; cache "
             "contiguous, %s; prompt 1 token (id %d, seed %" PRIu64 "), %zu tokens greedy\n"
             "FLOPs of the attention sublayer (Q, latent, W_uk, W_uv, O, scores, softmax, weighted sum) counted by "
             "the engine; dashed: mla_flops() in closed form; machine: %s",
             format_name(BAR_FMT), c->name, measured, formula, c->name, c->n_layers, c->n_heads, c->kv_lora_rank,
             c->qk_rope_dim, c->qk_nope_dim, c->v_head_dim, m->source, format_name(RUN_FMT), prompt0, ctx->seed,
             n_gen, ctx->machine);
    FILE *labels = plot_labels_open(ctx, "mla",
                                    "MLA: bytes per token against MHA, GQA, MQA; decompress vs absorbed FLOPs",
                                    caption, e);
    if (!labels)
        return -1;
    fprintf(labels, "bar_format = \"%s\"\nrun_model = \"%s\"\ntiles = %d\ntile_rows = %d\nlayers = %zu\n"
                    "measured_bytes = %zu\nformula_bytes = %zu\nmha_bytes = %zu\n",
            format_name(BAR_FMT), c->name, MLA_DEFAULT_TILES, MLA_TILE_ROWS, c->n_layers, measured, formula, mha);
    return plot_close(labels, "mla", e);
}

int plot_mla(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    if (bytes_table(ctx, e) < 0)
        return -1;
    Model m;
    int *prompt = NULL;
    if (open_mla_model(ctx, &m, &prompt, e) < 0)
        return -1;
    const Config *c = &m.cfg;
    /* a one-token prompt: step s sees s + 1 positions */
    const size_t n_gen = c->max_seq_len;
    Trace t[N_PATHS] = { 0 };
    uint64_t sum[N_PATHS] = { 0 };
    int rc = 0;
    for (int p = 0; p < N_PATHS && rc == 0; p++)
        rc = run_path(&m, p, prompt, n_gen, &t[p], e);
    if (rc == 0)
        rc = write_mla_table(ctx, c, t, n_gen, sum, e);
    if (rc == 0)
        rc = write_mla_labels(ctx, &m, t, prompt[0], n_gen, e);
    if (rc == 0)
        snprintf(note->note, sizeof note->note,
                 "%s, %zu tokens: attention sublayer %.1f MFLOPs absorbed, %.1f decompress with %d tiles, %.1f "
                 "without", c->name, n_gen, sum[P_ABSORBED] / 1e6, sum[P_DECOMPRESS_LRU] / 1e6, MLA_DEFAULT_TILES,
                 sum[P_DECOMPRESS] / 1e6);
    for (int p = 0; p < N_PATHS; p++)
        trace_free(&t[p]);
    free(prompt);
    model_free(&m);
    return rc;
}
