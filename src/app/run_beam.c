/* run_beam.c: `kvscope run --model encdec --beams W`: beam search over an
 * encoder-decoder (the encoder-decoder notes) with the self-attention cache the user names
 * and one shared cross-attention cache, without a cache, or both. This file
 * checks the options and runs the searches; report/beam_report.c prints. */
#include "app/run_beam.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "kv/cache.h"
#include "model/beam.h"
#include "model/encdec.h"
#include "report/beam_report.h"
#include "report/run_report.h"
#include "sim/compare.h"

/* Largest score difference accepted between cached and uncached f32 runs. */
#define SCORE_TOL 1e-5

const char run_beam_help[] =
    "  --beams W           beam search of width W (encoder-decoder models, e.g. --model encdec;\n"
    "                      default 1): the source is encoded once, its cross-attention K/V are\n"
    "                      computed once and shared by every beam; each beam's self-attention\n"
    "                      rows are a sequence of --cache (paged: forks share pages)\n"
    "  --src-len N         source tokens (default: the model's src_len); --prompt gives the\n"
    "                      source ids themselves\n"
    "  --alpha A           length normalisation: score = sum log p / len^A (default 1)\n"
    "  (--tokens N is then the most target tokens, default the model's max_seq_len)\n";


/* The source: --prompt ids, or src_len seeded random ids. */
static int make_source(const BeamRunArgs *a, Config *cfg, int **src, Err *e)
{
    const PromptOpts *po = a->po;
    if (po->len)
        return err_set(e, ERR_USAGE, "run: --prompt-len is for decoder-only models; an encoder-decoder's "
                       "source length is --src-len");
    if (po->batch > 1)
        return err_set(e, ERR_USAGE, "run: beam search reads one source; --batch is for decoder-only models");
    PromptOpts p = *po;
    if (!setup_prompt_given(&p)) {
        if (a->src_len)
            cfg->src_len = a->src_len;
        if (config_validate(cfg, e) < 0) /* src_len within kvscope's limit before it is drawn */
            return -1;
        p.len = p.max_len = cfg->src_len; /* a source, not the decoder's positions */
    }
    size_t batch, len;
    if (setup_make_prompt(&p, cfg, src, &batch, &len, e) < 0)
        return -1;
    if (batch != 1) {
        free(*src);
        *src = NULL;
        return err_set(e, ERR_USAGE, "run: beam search reads one source; --prompt-ids holds %zu", batch);
    }
    if (setup_prompt_given(&p) && a->src_len && a->src_len != len) {
        free(*src);
        *src = NULL;
        return err_set(e, ERR_USAGE, "run: --src-len %zu but the prompt holds %zu source tokens", a->src_len, len);
    }
    cfg->src_len = len;
    if (config_validate(cfg, e) < 0) {
        free(*src);
        *src = NULL;
        return -1;
    }
    return 0;
}

static int refuse(const BeamRunArgs *a, const Config *cfg, Err *e)
{
    if (cfg->architecture != ARCH_ENCDEC)
        return err_set(e, ERR_USAGE, "run: model '%s' is decoder-only; --beams and --src-len apply to an "
                       "encoder-decoder (e.g. --model encdec)", cfg->name);
    const char *bad = a->chunk ? "--chunk" : a->temperature > 0 ? "--temperature" : a->top_k ? "--top-k"
                      : a->bugs ? "--bug" : NULL;
    if (bad)
        return err_set(e, ERR_USAGE, "run: %s applies to decoder-only models (beam search over model '%s' is "
                       "deterministic: no prefill chunks, no sampling, no pitfalls)", bad, cfg->name);
    return 0;
}

/* The search the options ask for, within the model's limits. */
static int beam_options(const BeamRunArgs *a, const Config *cfg, BeamOptions *bo, Err *e)
{
    *bo = (BeamOptions){ .width = a->beams ? a->beams : 1, .max_len = a->tokens ? a->tokens : cfg->max_seq_len,
                         .alpha = a->alpha };
    if (bo->max_len > cfg->max_seq_len)
        return err_set(e, ERR_USAGE, "run: --tokens %zu; model '%s' decodes at most max_seq_len = %zu target tokens",
                       bo->max_len, cfg->name, cfg->max_seq_len);
    if (bo->width > 4096)
        return err_set(e, ERR_USAGE, "--beams: %zu is beyond kvscope's limit of 4096", bo->width);
    if (!(bo->alpha >= 0 && bo->alpha <= 10))
        return err_set(e, ERR_USAGE, "--alpha: must be 0 to 10, got %g", bo->alpha);
    return 0;
}

/* The model and, unless --no-cache, the self-attention cache of `width`
 * sequences (opened before anything is printed: a bad spec is one line). */
static int open_model(const BeamRunArgs *a, const Config *cfg, size_t width, Model *m, KvCache **self, Err *e)
{
    const Kernels *k = kernels_select(a->mo->isa, e);
    char what[128];
    snprintf(what, sizeof what, "model '%s' (weights)", cfg->name);
    if (!k || setup_check_memory(model_param_floats(cfg) * sizeof(float), what, e) < 0 ||
        model_init(m, cfg, k, e) < 0)
        return -1;
    m->attend = a->attend;
    *self = NULL;
    if (a->no_cache)
        return 0;
    KvGeometry geo = encdec_self_geometry(m, width);
    *self = kv_open(a->cache_spec, &geo, e);
    if (!*self) {
        model_free(m);
        return -1;
    }
    return 0;
}

static json_t *json_root(const BeamRunArgs *a, const Model *m, const BeamOptions *bo, json_t *steps)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:o}", "model", m->cfg.name,
                     "architecture", "encdec", "weights", m->source, "kernels", m->kern->isa, "attention",
                     attend_algo_name(m->attend), "cache", a->no_cache ? "none" : a->cache_spec, "beams",
                     (json_int_t)bo->width, "src_len", (json_int_t)m->cfg.src_len, "max_len", (json_int_t)bo->max_len,
                     "alpha", bo->alpha, "steps", steps);
}

/* The results, then the comparison: 0; 1 with e set when an exact cache's
 * beams differ from the uncached ones (the numbers are still worth
 * printing); -1 with e set when the memory cannot be computed. */
static int report(const BeamRunArgs *a, const Model *m, const BeamOptions *bo, const KvCache *self,
                  const BeamResult *cached, const BeamResult *uncached, json_t *root, Err *e)
{
    beam_report_totals(a->fmt, cached, uncached, m->cfg.n_layers, root);
    if (cached)
        report_pages(stdout, a->fmt, self, root);
    if (a->fmt == OUT_TABLE) {
        beam_report_hyps(cached ? "cached" : "uncached", cached ? cached : uncached, bo->alpha);
    } else if (root) {
        json_t *h = json_object();
        if (cached)
            json_object_set_new(h, "cached", beam_report_hyps_json(cached));
        if (uncached)
            json_object_set_new(h, "uncached", beam_report_hyps_json(uncached));
        json_object_set_new(root, "hypotheses", h);
    }
    if (beam_report_memory(&m->cfg, bo->width, root, a->fmt, e) < 0)
        return -1;
    if (cached)
        beam_report_measured(self, cached, root, a->fmt);
    if (!a->compare)
        return 0;
    double worst;
    size_t diff = compare_beams(cached, uncached, &worst);
    int same = diff == cached->n && cached->n == uncached->n;
    int exact = self->k_fmt == FMT_F32 && self->v_fmt == FMT_F32;
    beam_report_compare(a->fmt, cached, uncached, diff, worst, SCORE_TOL, exact, root);
    if (exact && (!same || worst > SCORE_TOL)) {
        err_set(e, ERR_RUNTIME, "cached and uncached beam search differ (%s; score difference %.3g)",
                same ? "same beams" : "different beams", worst);
        return 1;
    }
    return 0;
}

int run_beam(const BeamRunArgs *a, const Config *cfg_in)
{
    Err e = { 0 };
    Config cfg = *cfg_in;
    int *src = NULL;
    BeamOptions bo;
    Model m;
    KvCache *self;
    if (refuse(a, &cfg, &e) < 0 || make_source(a, &cfg, &src, &e) < 0 || beam_options(a, &cfg, &bo, &e) < 0 ||
        open_model(a, &cfg, bo.width, &m, &self, &e) < 0) {
        free(src);
        return cli_fail(&e);
    }
    /* the longest hypothesis holds max_len rows: a cache too small fails now, before any output */
    if (self && kv_check_room(self, bo.max_len, &e) < 0) {
        kv_free(self);
        free(src);
        model_free(&m);
        return cli_fail(&e);
    }
    BeamResult cached = { 0 }, uncached = { 0 };
    json_t *steps = a->fmt == OUT_JSON ? json_array() : NULL;
    json_t *root = steps ? json_root(a, &m, &bo, steps) : NULL;
    BeamSink sc = { "cached", a->fmt, cfg.src_len, steps }, su = { "uncached", a->fmt, cfg.src_len, steps };
    if (a->fmt == OUT_TABLE)
        beam_report_header(&m, src, &bo, a->po, a->no_cache ? NULL : a->cache_spec);
    beam_report_step_header(a->fmt);

    int run_cached = !a->no_cache, run_uncached = a->no_cache || a->compare;
    int rc = (run_cached && beam_search(&m, src, self, &bo, &cached, beam_report_step, &sc, &e) < 0) ||
                     (run_uncached && beam_search(&m, src, NULL, &bo, &uncached, beam_report_step, &su, &e) < 0)
                 ? -1
                 : report(a, &m, &bo, self, run_cached ? &cached : NULL, run_uncached ? &uncached : NULL, root, &e);
    if (root && rc >= 0) /* a failed comparison still shows its numbers */
        json_dumpf(root, stdout, JSON_INDENT(2)), printf("\n");
    fflush(stdout);
    json_decref(root);
    beam_result_free(&cached);
    beam_result_free(&uncached);
    kv_free(self);
    free(src);
    model_free(&m);
    return rc == 0 ? EXIT_OK : cli_fail(&e);
}
