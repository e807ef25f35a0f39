/* plot_paged.c: figure 7, the paged cache (kv/paged.c) against its page
 * size: (a) the rows reserved but empty at the end of each sequence's last
 * page (internal waste), from the cache's own accounting after it is filled
 * with seeded requests of many lengths; (b) the pages saved when requests
 * with a common prompt prefix share its full pages, from real generation
 * runs of a model. */
#include "plot/plot.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "model/generate.h"

#define PG_MODEL "tiny"     /* its geometry and, for (b), its generation runs */
/* (a): requests of seeded lengths, uniform on 1 .. max_seq_len */
#define WASTE_REQUESTS 64
#define FIXED_LEN 100       /* and one request of this length alone: waste for a fixed length */
/* (b): requests sharing a prompt prefix */
#define SHARE_REQUESTS 8
#define SHARE_PREFIX 100    /* tokens every prompt starts with (a "system prompt") */
#define SHARE_OWN 20        /* then tokens of its own */
#define SHARE_GEN 16        /* tokens generated, greedy */

/* The logical pages the block tables of seqs 0 .. n-1 map: what the
 * requests would hold in pages of their own, with no sharing. */
static size_t pages_mapped(const KvCache *c, size_t n, const size_t *len, size_t page)
{
    size_t sum = 0;
    for (size_t s = 0; s < n; s++)
        sum += c->ops->page_table ? c->ops->page_table(c, s, NULL, 0) : (len[s] + page - 1) / page;
    return sum;
}

static KvCache *open_paged(size_t page, const KvGeometry *g, Err *e)
{
    char spec[48];
    snprintf(spec, sizeof spec, "paged:page=%zu", page);
    return kv_open(spec, g, e);
}

/* The empty rows of one request of len rows alone, measured. */
static int fixed_waste(const Config *cfg, size_t page, size_t len, const int *ids, size_t *waste, Err *e)
{
    KvGeometry g = config_kv_geometry(cfg, 1);
    KvCache *c = open_paged(page, &g, e);
    if (!c)
        return -1;
    int rc = kv_reserve(c, 0, 0, ids, len, NULL, e);
    KvStats st;
    kv_stats(c, &st);
    *waste = st.waste_rows;
    kv_free(c);
    return rc;
}

/* (a) paged.tsv: each page size, the waste requests appended straight to
 * the cache (every layer, seeded N(0, 1) K and V rows). */
static int waste_table(const PlotCtx *ctx, const Config *cfg, gsl_rng *r, double *last_mean, Err *e)
{
    const size_t T = cfg->max_seq_len, N = WASTE_REQUESTS;
    KvGeometry g = config_kv_geometry(cfg, N);
    const size_t row_floats = g.n_kv_heads * g.head_dim;
    size_t *len = malloc(N * sizeof *len);
    int *ids = malloc(N * T * sizeof *ids);
    float *k = malloc(T * row_floats * sizeof *k), *v = malloc(T * row_floats * sizeof *v);
    FILE *f = NULL;
    int rc = len && ids && k && v ? 0 : err_set(e, ERR_RUNTIME, "plot: out of memory");
    size_t held = 0;
    if (rc == 0) {
        for (size_t i = 0; i < N; i++) {
            len[i] = 1 + gsl_rng_uniform_int(r, T);
            held += len[i];
            /* a first token of its own: no two requests share a page */
            ids[i * T] = (int)(i % cfg->vocab);
            for (size_t t = 1; t < T; t++)
                ids[i * T + t] = (int)gsl_rng_uniform_int(r, cfg->vocab);
        }
        for (size_t i = 0; i < T * row_floats; i++) {
            k[i] = (float)gsl_ran_gaussian(r, 1.0);
            v[i] = (float)gsl_ran_gaussian(r, 1.0);
        }
        if (!(f = plot_open(ctx, "paged.tsv", e)))
            rc = -1;
    }
    if (rc == 0)
        fprintf(f, "page_rows\trequests\trows_held\tpages_mapped\tpages_used\twaste_rows\twaste_rows_per_request\t"
                   "expected_waste_per_request\tpages_per_request\twaste_percent\tbytes_used\tbytes_reserved\t"
                   "waste_rows_len_%d\n", FIXED_LEN);
    for (size_t page = 1; page <= T && rc == 0; page *= 2) {
        KvCache *c = open_paged(page, &g, e);
        if (!c) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < N && rc == 0; i++) {
            rc = kv_reserve(c, i, 0, ids + i * T, len[i], NULL, e);
            for (size_t l = 0; l < g.n_layers && rc == 0; l++)
                rc = kv_append(c, l, i, 0, len[i], k, v, NULL, e);
        }
        KvStats st;
        kv_stats(c, &st);
        size_t mapped = pages_mapped(c, N, len, page), used = kv_bytes_used(c), reserved = kv_bytes_reserved(c);
        kv_free(c);
        /* what the waste averages to over every length 1 .. T, each as likely */
        double expected = 0;
        for (size_t L = 1; L <= T; L++)
            expected += (double)((L + page - 1) / page * page - L);
        expected /= (double)T;
        size_t fixed = 0;
        if (rc == 0)
            rc = fixed_waste(cfg, page, FIXED_LEN, ids, &fixed, e);
        if (rc < 0)
            break;
        double mean = (double)st.waste_rows / (double)N;
        fprintf(f, "%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%.4f\t%.4f\t%.4f\t%.4f\t%zu\t%zu\t%zu\n", page, N, held, mapped,
                st.pages_used, st.waste_rows, mean, expected, (double)mapped / (double)N,
                100.0 * (double)st.waste_rows / (double)(st.pages_used * page), used, reserved, fixed);
        *last_mean = mean;
    }
    if (f && plot_close(f, "paged.tsv", rc == 0 ? e : NULL) < 0)
        rc = -1;
    free(len);
    free(ids);
    free(k);
    free(v);
    return rc;
}

/* (b) paged.prefix.tsv: each page size, SHARE_REQUESTS prompts with a
 * common prefix, generated by the model through a paged cache. */
static int prefix_table(const PlotCtx *ctx, const Model *m, gsl_rng *r, size_t saved16[2], Err *e)
{
    const Config *cfg = &m->cfg;
    const size_t N = SHARE_REQUESTS, P = SHARE_PREFIX + SHARE_OWN;
    int *prompt = malloc(N * P * sizeof *prompt), *out = malloc(N * SHARE_GEN * sizeof *out);
    FILE *f = NULL;
    int rc = prompt && out ? 0 : err_set(e, ERR_RUNTIME, "plot: out of memory");
    if (rc == 0) {
        for (size_t t = 0; t < SHARE_PREFIX; t++)
            prompt[t] = (int)gsl_rng_uniform_int(r, cfg->vocab);
        size_t first = gsl_rng_uniform_int(r, cfg->vocab);
        for (size_t i = 0; i < N; i++) {
            memcpy(prompt + i * P, prompt, SHARE_PREFIX * sizeof *prompt);
            /* the first own token differs between requests: the prefix ends there */
            prompt[i * P + SHARE_PREFIX] = (int)((first + i) % cfg->vocab);
            for (size_t t = SHARE_PREFIX + 1; t < P; t++)
                prompt[i * P + t] = (int)gsl_rng_uniform_int(r, cfg->vocab);
        }
        if (!(f = plot_open(ctx, "paged.prefix.tsv", e)))
            rc = -1;
    }
    const size_t rows = generate_positions(P, SHARE_GEN);
    KvGeometry g = model_kv_geometry(m, N);
    const size_t row_bytes = g.n_layers * kv_row_pair_bytes(&g, FMT_F32, FMT_F32);
    if (rc == 0)
        fputs("page_rows\trequests\tprefix_rows\trows_per_request\tpages_mapped\tpages_used\tpages_saved\t"
              "prefix_hits\tpages_shared\tfull_prefix_pages\tbytes_unshared\tbytes_reserved\tbytes_exact\t"
              "saved_percent\n", f);
    for (size_t page = 1; page <= cfg->max_seq_len && rc == 0; page *= 2) {
        KvCache *c = open_paged(page, &g, e);
        if (!c) {
            rc = -1;
            break;
        }
        GenOptions go = { .n_generate = SHARE_GEN, .sample_seed = 1 };
        rc = generate(m, c, prompt, N, P, &go, out, NULL, NULL, e);
        KvStats st;
        kv_stats(c, &st);
        size_t lens[SHARE_REQUESTS];
        for (size_t i = 0; i < N; i++)
            lens[i] = rows;
        size_t mapped = pages_mapped(c, N, lens, page), reserved = kv_bytes_reserved(c);
        kv_free(c);
        if (rc < 0)
            break;
        size_t saved = mapped - st.pages_used;
        if (page == 16)
            saved16[0] = saved, saved16[1] = mapped;
        fprintf(f, "%zu\t%zu\t%d\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%.4f\n", page, N, SHARE_PREFIX,
                rows, mapped, st.pages_used, saved, st.prefix_hits, st.pages_shared, SHARE_PREFIX / page,
                mapped * page * row_bytes, reserved, (SHARE_PREFIX + N * (rows - SHARE_PREFIX)) * row_bytes,
                100.0 * (double)saved / (double)mapped);
    }
    if (f && plot_close(f, "paged.prefix.tsv", rc == 0 ? e : NULL) < 0)
        rc = -1;
    free(prompt);
    free(out);
    return rc;
}

int plot_paged(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    ModelOpts mo = { .model = PG_MODEL };
    Model m;
    Config cfg;
    if (setup_load_config(&mo, &cfg, e) < 0)
        return -1;
    KvGeometry g = config_kv_geometry(&cfg, SHARE_REQUESTS > WASTE_REQUESTS ? SHARE_REQUESTS : WASTE_REQUESTS);
    if (setup_load_model(&mo, cfg.n_layers * cfg.max_seq_len * g.n_seqs * kv_row_pair_bytes(&g, FMT_F32, FMT_F32), &m,
                       e) < 0)
        return -1;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) {
        model_free(&m);
        return err_set(e, ERR_RUNTIME, "plot: out of memory");
    }
    gsl_rng_set(r, ctx->seed);
    double worst = 0;
    size_t saved16[2] = { 0, 0 };
    int rc = waste_table(ctx, &m.cfg, r, &worst, e);
    if (rc == 0)
        rc = prefix_table(ctx, &m, r, saved16, e);
    gsl_rng_free(r);

    const Config *c = &m.cfg;
    char caption[1024];
    snprintf(caption, sizeof caption,
             "model %s: %zu layers, %zu KV heads x %zu, f32 K and V (%zu B a position); weights %s; cache "
             "paged:page=P, P = 1 .. %zu\n"
             "(a), (b) %d requests of lengths uniform on 1 .. %zu (seed %" PRIu64 "), their seeded N(0, 1) K, V rows "
             "appended straight into the cache; kv_stats counts the empty rows\n"
             "(c) real generation, greedy: %d prompts = a %d-token common prefix + %d tokens of their own (seed %" PRIu64
             "), %d tokens generated; machine: %s",
             c->name, c->n_layers, c->n_kv_heads, c->head_dim, c->n_layers * kv_row_pair_bytes(&g, FMT_F32, FMT_F32),
             m.source, c->max_seq_len, WASTE_REQUESTS, c->max_seq_len, ctx->seed, SHARE_REQUESTS, SHARE_PREFIX,
             SHARE_OWN, ctx->seed, SHARE_GEN, ctx->machine);
    FILE *labels = NULL;
    if (rc == 0 && !(labels = plot_labels_open(ctx, "paged",
                                               "Paged KV cache: internal waste vs page size, and pages saved by "
                                               "prefix sharing",
                                               caption, e)))
        rc = -1;
    if (labels) {
        fprintf(labels, "fixed_len = %d\nwaste_requests = %d\nmax_len = %zu\nshare_requests = %d\n"
                        "share_prefix = %d\nshare_rows = %zu\n",
                FIXED_LEN, WASTE_REQUESTS, c->max_seq_len, SHARE_REQUESTS, SHARE_PREFIX,
                generate_positions(SHARE_PREFIX + SHARE_OWN, SHARE_GEN));
        if (plot_close(labels, "paged", rc == 0 ? e : NULL) < 0)
            rc = -1;
    }
    if (rc == 0)
        snprintf(note->note, sizeof note->note,
                 "empty rows per request: %.1f at page %zu (about (P - 1) / 2); page 16: prefix sharing saves %zu of "
                 "%zu pages", worst, c->max_seq_len, saved16[0], saved16[1]);
    model_free(&m);
    return rc;
}
