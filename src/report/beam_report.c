/* run_beam.c: `kvscope run --model encdec --beams W`: beam search over an
 * encoder-decoder (seed 003) with the self-attention cache the user names
 * and one shared cross-attention cache, without a cache, or both; a row per
 * step, the hypotheses, and the memory per beam beside the seed's estimate. */
#include "app/run_beam.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/run_report.h"
#include "kv/cache.h"
#include "model/beam.h"
#include "model/encdec.h"

/* Largest score difference accepted between cached and uncached f32 runs. */
#define SCORE_TOL 1e-5

/* The width the seed's memory estimate is worked for ("beam_width=8"). */
#define SEED_WIDTH 8

const char run_beam_help[] =
    "  --beams W           beam search of width W (encoder-decoder models, e.g. --model encdec;\n"
    "                      default 1): the source is encoded once, its cross-attention K/V are\n"
    "                      computed once and shared by every beam; each beam's self-attention\n"
    "                      rows are a sequence of --cache (paged: forks share pages)\n"
    "  --src-len N         source tokens (default: the model's src_len); --prompt gives the\n"
    "                      source ids themselves\n"
    "  --alpha A           length normalisation: score = sum log p / len^A (default 1)\n"
    "  (--tokens N is then the most target tokens, default the model's max_seq_len)\n";

typedef struct {
    const char *label;
    OutFormat fmt;
    size_t src_len;
    json_t *steps;
} Sink;

static void step_header(OutFormat fmt)
{
    if (fmt == OUT_TABLE)
        printf("%-8s %4s %5s %4s %5s %13s %11s %10s %7s %5s %5s %10s %5s %6s %4s %11s %4s %8s %4s %5s\n", "run",
               "step", "beams", "self", "cross", "FLOPs", "kv read B", "kv write B", "crossKV", "forks", "drops",
               "copied B", "pages", "shared", "cow", "self used B", "refs", "time ms", "done", "best");
    else if (fmt == OUT_TSV)
        printf("run\tstep\tbeams\tself_rows\tcross_rows\ttotal_flops\tkv_bytes_read\tkv_bytes_written\t"
               "cross_kv_rows\tforks\tdrops\tbytes_copied\tpages_used\tpages_shared\tcow_copies\tself_bytes_used\t"
               "cross_refs\tseconds\tfinished\tbest_token\n");
}

static int on_step(void *user, const BeamStep *st)
{
    Sink *k = user;
    const Counters *c = &st->ctr;
    int best = st->n_kept ? st->token[0] : -1;
    char tok[16] = "-";
    if (best >= 0)
        snprintf(tok, sizeof tok, "%d", best);
    if (k->fmt == OUT_TABLE)
        printf("%-8s %4zu %5zu %4zu %5zu %13" PRIu64 " %11" PRIu64 " %10" PRIu64 " %7" PRIu64
               " %5zu %5zu %10" PRIu64 " %5zu %6zu %4zu %11zu %4zu %8.3f %4zu %5s\n",
               k->label, st->step, st->n_beams, st->pos + 1, k->src_len, counters_total_flops(c), c->kv_bytes_read,
               c->kv_bytes_written, st->cross_kv_rows, st->forks, st->drops, c->bytes_copied, st->kv.pages_used,
               st->kv.pages_shared, st->cow_copies, st->self_bytes_used, st->cross_refs, c->seconds * 1e3,
               st->n_finished, tok);
    else if (k->fmt == OUT_TSV)
        printf("%s\t%zu\t%zu\t%zu\t%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%zu\t%zu\t%" PRIu64
               "\t%zu\t%zu\t%zu\t%zu\t%zu\t%.9f\t%zu\t%d\n",
               k->label, st->step, st->n_beams, st->pos + 1, k->src_len, counters_total_flops(c), c->kv_bytes_read,
               c->kv_bytes_written, st->cross_kv_rows, st->forks, st->drops, c->bytes_copied, st->kv.pages_used,
               st->kv.pages_shared, st->cow_copies, st->self_bytes_used, st->cross_refs, c->seconds, st->n_finished,
               best);
    else if (k->steps) {
        json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "run",
                              k->label, "step", (json_int_t)st->step, "beams", (json_int_t)st->n_beams,
                              "self_rows", (json_int_t)(st->pos + 1), "cross_rows", (json_int_t)k->src_len,
                              "cross_kv_rows", (json_int_t)st->cross_kv_rows, "forks", (json_int_t)st->forks,
                              "drops", (json_int_t)st->drops, "pages_used", (json_int_t)st->kv.pages_used,
                              "pages_shared", (json_int_t)st->kv.pages_shared, "cow_copies",
                              (json_int_t)st->cow_copies, "self_bytes_used", (json_int_t)st->self_bytes_used,
                              "cross_refs", (json_int_t)st->cross_refs, "finished", (json_int_t)st->n_finished,
                              "counters", report_counters_json(c));
        if (best >= 0)
            json_object_set_new(o, "best_token", json_integer(best));
        json_array_append_new(k->steps, o);
    }
    return 0;
}

/* "163.8 kB" / "1.23 MB": the seed's decimal units. */
static const char *dec_bytes(char *buf, size_t cap, double b)
{
    if (b < 1e6)
        snprintf(buf, cap, "%.1f kB", b / 1e3);
    else
        snprintf(buf, cap, "%.2f MB", b / 1e6);
    return buf;
}

static void print_hyps(const char *run, const BeamResult *r, double alpha)
{
    printf("hypotheses, %s (best first; score = log p / len^%g):\n", run, alpha);
    printf("  %2s %10s %10s %4s %-4s %s\n", "#", "score", "log p", "len", "end", "tokens");
    for (size_t i = 0; i < r->n; i++) {
        const Hypothesis *h = &r->hyps[i];
        printf("  %2zu %10.6f %10.5f %4zu %-4s", i + 1, h->score, h->logp, h->len, h->finished ? "eos" : "max");
        for (size_t t = 0; t < h->len; t++)
            printf(" %d", h->tokens[t]);
        printf("\n");
    }
}

static json_t *hyps_json(const BeamResult *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const Hypothesis *h = &r->hyps[i];
        json_t *t = json_array();
        for (size_t j = 0; j < h->len; j++)
            json_array_append_new(t, json_integer(h->tokens[j]));
        json_array_append_new(a, json_pack("{s:f, s:f, s:I, s:b, s:o}", "score", h->score, "logp", h->logp, "len",
                                           (json_int_t)h->len, "finished", h->finished, "tokens", t));
    }
    return a;
}

/* The seed's estimate recomputed from the config, and kvscope's sharing. */
static int print_memory(const Config *c, size_t width, json_t *root, OutFormat fmt, Err *e)
{
    EncDecMemory mem, mem8;
    if (encdec_memory(c, c->max_seq_len, width, &mem, e) < 0 ||
        encdec_memory(c, c->max_seq_len, SEED_WIDTH, &mem8, e) < 0)
        return -1;
    double rounded = round((double)mem.seed_per_beam / 1e5) / 10; /* per beam in MB, to one decimal */
    if (root) {
        json_object_set_new(root, "memory",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "self_per_beam",
                                      (json_int_t)mem.self_per_beam, "cross_per_beam", (json_int_t)mem.cross_per_beam,
                                      "seed_per_beam", (json_int_t)mem.seed_per_beam, "width", (json_int_t)width,
                                      "seed_total", (json_int_t)mem.seed_total, "shared_total",
                                      (json_int_t)mem.shared_total, "seed_width", (json_int_t)SEED_WIDTH,
                                      "seed_width_total", (json_int_t)mem8.seed_total));
        return 0;
    }
    if (fmt != OUT_TABLE)
        return 0;
    char a[32], b[32], x[32], y[32];
    printf("memory per beam, from the config (f32, K and V) - seed 003's estimate, recomputed:\n");
    printf("  self-attention   %zu layers x %zu heads x %zu tokens x %zu x 4 B x 2 = %zu B (%s, %s)\n", c->n_layers,
           c->n_kv_heads, c->max_seq_len, c->head_dim, mem.self_per_beam,
           dec_bytes(a, sizeof a, (double)mem.self_per_beam), human_bytes(b, sizeof b, (double)mem.self_per_beam));
    printf("  cross-attention  %zu layers x %zu heads x %zu tokens x %zu x 4 B x 2 = %zu B (%s, %s)\n", c->n_layers,
           c->n_kv_heads, c->src_len, c->head_dim, mem.cross_per_beam,
           dec_bytes(a, sizeof a, (double)mem.cross_per_beam), human_bytes(b, sizeof b, (double)mem.cross_per_beam));
    printf("  per beam with a cross cache each (the seed's count): %zu B (%s; %.1f MB rounded)\n", mem.seed_per_beam,
           dec_bytes(a, sizeof a, (double)mem.seed_per_beam), rounded);
    printf("  %d beams (the seed's example): %zu B (%s); %d x the rounded %.1f MB gives %.1f MB\n", SEED_WIDTH,
           mem8.seed_total, dec_bytes(a, sizeof a, (double)mem8.seed_total), SEED_WIDTH, rounded, SEED_WIDTH * rounded);
    printf("  %zu beam(s), one cross cache shared (kvscope): %zu x %zu + %zu = %zu B (%s) instead of %zu B (%s)\n",
           width, width, mem.self_per_beam, mem.cross_per_beam, mem.shared_total,
           dec_bytes(x, sizeof x, (double)mem.shared_total), mem.seed_total,
           dec_bytes(y, sizeof y, (double)mem.seed_total));
    return 0;
}

/* What this run measured: memory per beam, sharing, copies. */
static void print_measured(const KvCache *self, const BeamResult *r, json_t *root, OutFormat fmt)
{
    KvStats st = r->kv;
    size_t beams = r->beams_last ? r->beams_last : 1;
    if (root) {
        json_object_set_new(root, "measured",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                                      "beams_last", (json_int_t)r->beams_last, "self_bytes_last",
                                      (json_int_t)r->self_bytes_last, "self_bytes_per_beam",
                                      (json_int_t)(r->self_bytes_last / beams), "self_bytes_peak",
                                      (json_int_t)r->self_bytes_peak, "cross_bytes", (json_int_t)r->cross_bytes,
                                      "cross_fills", (json_int_t)r->cross_fills, "cross_peak_refs",
                                      (json_int_t)r->cross_peak_refs, "cross_refs_end", (json_int_t)r->cross_refs_end,
                                      "cross_kv_rows", (json_int_t)r->cross_kv_rows, "forks", (json_int_t)r->forks,
                                      "drops", (json_int_t)r->drops, "bytes_copied",
                                      (json_int_t)r->total.bytes_copied, "cow_copies", (json_int_t)st.cow_copies));
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    char a[32], b[32], c[32];
    printf("measured after the last pass (%zu beam(s), %zu rows each): self cache %zu B used (%s per beam), "
           "peak %zu B\n",
           r->beams_last, r->steps, r->self_bytes_last, dec_bytes(a, sizeof a, (double)r->self_bytes_last / beams),
           r->self_bytes_peak);
    printf("cross cache: %zu B (%s), computed %zu time(s) (%" PRIu64 " memory rows projected), read by up to %zu "
           "beams (%s per beam), copied never; %zu reference(s) left\n",
           r->cross_bytes, dec_bytes(b, sizeof b, (double)r->cross_bytes), r->cross_fills, r->cross_kv_rows,
           r->cross_peak_refs, dec_bytes(c, sizeof c, (double)r->cross_bytes / (r->cross_peak_refs ? r->cross_peak_refs : 1)),
           r->cross_refs_end);
    if (st.page_rows)
        printf("copies: %zu forks share their pages (nothing copied at the fork), %zu drops; %zu page(s) copied on "
               "first write, %" PRIu64 " B copied\n",
               r->forks, r->drops, st.cow_copies, r->total.bytes_copied);
    else if (r->total.allocations)
        printf("copies: %zu forks, %zu drops; %" PRIu64 " B copied (%s: every fork copies the parent's rows, and "
               "%" PRIu64 " reallocations copied as they grew)\n",
               r->forks, r->drops, r->total.bytes_copied, self->ops->name, r->total.allocations);
    else
        printf("copies: %zu forks, %zu drops; %" PRIu64 " B copied (%s: every fork copies the parent's rows)\n",
               r->forks, r->drops, r->total.bytes_copied, self->ops->name);
}

/* The first hypothesis whose tokens or end differ between a and b, or n
 * when none does (then a->n == b->n == n); *worst gets the largest score or
 * log-probability difference over the hypotheses compared. */
static size_t first_different(const BeamResult *a, const BeamResult *b, double *worst)
{
    size_t n = a->n < b->n ? a->n : b->n;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        const Hypothesis *x = &a->hyps[i], *y = &b->hyps[i];
        if (x->len != y->len || x->finished != y->finished ||
            memcmp(x->tokens, y->tokens, x->len * sizeof *x->tokens) != 0)
            return i;
        *worst = fmax(*worst, fmax(fabs(x->score - y->score), fabs(x->logp - y->logp)));
    }
    return a->n == b->n ? a->n : n;
}

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
    if (!p.ids) {
        if (a->src_len)
            cfg->src_len = a->src_len;
        p.len = cfg->src_len;
    }
    size_t batch, len;
    if (setup_make_prompt(&p, cfg, src, &batch, &len, e) < 0)
        return -1;
    if (batch != 1) {
        free(*src);
        *src = NULL;
        return err_set(e, ERR_USAGE, "run: beam search reads one source; --prompt holds %zu", batch);
    }
    if (p.ids && a->src_len && a->src_len != len) {
        free(*src);
        *src = NULL;
        return err_set(e, ERR_USAGE, "run: --src-len %zu but --prompt holds %zu source tokens", a->src_len, len);
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

static void print_header(const Model *m, const BeamRunArgs *a, const BeamOptions *bo, const int *src)
{
    const Config *c = &m->cfg;
    printf("model %s: encoder-decoder, encoder %zu layers, decoder %zu layers, d_model %zu, %zu heads, %zu KV heads, "
           "head_dim %zu, ffn %zu, vocab %zu, source %zu tokens, target up to %zu\n",
           c->name, c->encoder_layers, c->n_layers, c->d_model, c->n_heads, c->n_kv_heads, c->head_dim, c->ffn_dim,
           c->vocab, c->src_len, c->max_seq_len);
    printf("weights: %s; kernels: %s; attention: %s\n", m->source, m->kern->isa, attend_algo_name(m->attend));
    printf("source: %zu tokens (%s", c->src_len, a->po->ids ? "given" : "random ids, gsl mt19937");
    if (!a->po->ids)
        printf(", prompt seed %" PRIu64, a->po->seed ? a->po->seed : 1);
    printf("), starting");
    for (size_t i = 0; i < c->src_len && i < 8; i++)
        printf(" %d", src[i]);
    printf("%s; BOS %d, EOS ", c->src_len > 8 ? " ..." : "", c->bos_token);
    if (c->eos_token >= 0)
        printf("%d\n", c->eos_token);
    else
        printf("none\n");
    printf("beam search: width %zu, up to %zu tokens, score = sum log p / len^%g, stops when %zu hypotheses end\n",
           bo->width, bo->max_len, bo->alpha, bo->width);
    if (a->no_cache)
        printf("cache: none (every step re-runs each beam's target and recomputes the cross K/V)\n");
    else
        printf("self-attention cache: %s, one sequence per beam; cross-attention cache: contiguous f32, computed "
               "once, shared by every beam\n", a->cache_spec);
}

int run_beam(const BeamRunArgs *a, const Config *cfg_in)
{
    Err e = { 0 };
    Config cfg = *cfg_in;
    int *src = NULL;
    if (refuse(a, &cfg, &e) < 0 || make_source(a, &cfg, &src, &e) < 0)
        return cli_fail(&e);
    BeamOptions bo = { .width = a->beams ? a->beams : 1, .max_len = a->tokens ? a->tokens : cfg.max_seq_len,
                       .alpha = a->alpha };
    if (bo.max_len > cfg.max_seq_len) {
        free(src);
        err_set(&e, ERR_USAGE, "run: --tokens %zu; model '%s' decodes at most max_seq_len = %zu target tokens",
                bo.max_len, cfg.name, cfg.max_seq_len);
        return cli_fail(&e);
    }
    if (bo.width > 4096 || !(bo.alpha >= 0 && bo.alpha <= 10)) {
        free(src);
        if (bo.width > 4096)
            err_set(&e, ERR_USAGE, "--beams: %zu is beyond kvscope's limit of 4096", bo.width);
        else
            err_set(&e, ERR_USAGE, "--alpha: must be 0 to 10, got %g", bo.alpha);
        return cli_fail(&e);
    }

    Model m;
    KvCache *self = NULL;
    const Kernels *k = kernels_select(a->mo->isa, &e);
    char what[128];
    snprintf(what, sizeof what, "model '%s' (weights)", cfg.name);
    if (!k || setup_check_memory(model_param_floats(&cfg) * sizeof(float), what, &e) < 0 ||
        model_init(&m, &cfg, k, &e) < 0) {
        free(src);
        return cli_fail(&e);
    }
    m.attend = a->attend;
    if (!a->no_cache) { /* before printing anything: a bad spec is one clean line */
        KvGeometry geo = encdec_self_geometry(&m, bo.width);
        self = kv_open(a->cache_spec, &geo, &e);
        if (!self) {
            free(src);
            model_free(&m);
            return cli_fail(&e);
        }
    }

    int rc = EXIT_OK;
    BeamResult rc_res = { 0 }, ru_res = { 0 };
    json_t *root = a->fmt == OUT_JSON ? json_object() : NULL, *steps = root ? json_array() : NULL;
    Sink sc = { "cached", a->fmt, cfg.src_len, steps }, su = { "uncached", a->fmt, cfg.src_len, steps };
    if (root) {
        json_object_set_new(root, "model", json_string(cfg.name));
        json_object_set_new(root, "architecture", json_string("encdec"));
        json_object_set_new(root, "weights", json_string(m.source));
        json_object_set_new(root, "kernels", json_string(m.kern->isa));
        json_object_set_new(root, "attention", json_string(attend_algo_name(m.attend)));
        json_object_set_new(root, "cache", json_string(a->no_cache ? "none" : a->cache_spec));
        json_object_set_new(root, "beams", json_integer((json_int_t)bo.width));
        json_object_set_new(root, "src_len", json_integer((json_int_t)cfg.src_len));
        json_object_set_new(root, "max_len", json_integer((json_int_t)bo.max_len));
        json_object_set_new(root, "alpha", json_real(bo.alpha));
        json_object_set_new(root, "steps", steps);
    }
    if (a->fmt == OUT_TABLE)
        print_header(&m, a, &bo, src);
    step_header(a->fmt);

    int run_cached = !a->no_cache, run_uncached = a->no_cache || a->compare;
    if ((run_cached && beam_search(&m, src, self, &bo, &rc_res, on_step, &sc, &e) < 0) ||
        (run_uncached && beam_search(&m, src, NULL, &bo, &ru_res, on_step, &su, &e) < 0)) {
        fflush(stdout);
        rc = cli_fail(&e);
        goto done;
    }

    json_t *totals = root ? json_object() : NULL;
    if (run_cached) {
        /* the cache's memory and copies are reported below, per beam: the
         * generic line would call fork copies "reallocation" */
        Counters t = rc_res.total;
        t.cache_bytes_reserved = 0;
        report_totals(stdout, a->fmt, "cached", &t, totals);
        if (a->fmt == OUT_TABLE)
            printf("cached encoder: %" PRIu64 " FLOPs, run once; the cross K/V of %zu layers computed from it "
                   "once\n", counters_total_flops(&rc_res.encoder), cfg.n_layers);
    }
    if (run_uncached) {
        report_totals(stdout, a->fmt, "uncached", &ru_res.total, totals);
        if (a->fmt == OUT_TABLE)
            printf("uncached encoder: %" PRIu64 " FLOPs, run once; the cross K/V recomputed by every beam at every "
                   "step (%" PRIu64 " memory rows projected)\n",
                   counters_total_flops(&ru_res.encoder), ru_res.cross_kv_rows);
    }
    if (root)
        json_object_set_new(root, "totals", totals);
    if (run_cached)
        report_pages(stdout, a->fmt, self, root);
    if (a->fmt == OUT_TABLE) {
        if (run_cached)
            print_hyps("cached", &rc_res, bo.alpha);
        if (run_uncached && !run_cached)
            print_hyps("uncached", &ru_res, bo.alpha);
    } else if (root) {
        json_t *h = json_object();
        if (run_cached)
            json_object_set_new(h, "cached", hyps_json(&rc_res));
        if (run_uncached)
            json_object_set_new(h, "uncached", hyps_json(&ru_res));
        json_object_set_new(root, "hypotheses", h);
    }
    if (print_memory(&cfg, bo.width, root, a->fmt, &e) < 0) {
        rc = cli_fail(&e);
        goto done;
    }
    if (run_cached)
        print_measured(self, &rc_res, root, a->fmt);

    if (a->compare) {
        double worst;
        size_t diff = first_different(&rc_res, &ru_res, &worst);
        int same = diff == rc_res.n && rc_res.n == ru_res.n;
        double flop_ratio = (double)counters_total_flops(&ru_res.total) / (double)counters_total_flops(&rc_res.total);
        int exact = self->k_fmt == FMT_F32 && self->v_fmt == FMT_F32;
        if (a->fmt == OUT_TABLE) {
            if (same)
                printf("beams identical: yes (%zu hypotheses: same tokens, same ends)\n", rc_res.n);
            else
                printf("beams identical: NO, from hypothesis %zu on (cached %zu, uncached %zu hypotheses)\n",
                       diff + 1, rc_res.n, ru_res.n);
            printf("max score difference: %.3g (tolerance %.0e)%s\n", worst, SCORE_TOL,
                   same ? "" : ", over the hypotheses that agree");
            printf("cross K/V memory rows projected: cached %" PRIu64 " (once), uncached %" PRIu64 "\n",
                   rc_res.cross_kv_rows, ru_res.cross_kv_rows);
            printf("FLOPs: cached %" PRIu64 ", uncached %" PRIu64 " (%.2fx)\n", counters_total_flops(&rc_res.total),
                   counters_total_flops(&ru_res.total), flop_ratio);
            printf("measured time: cached %.3f ms, uncached %.3f ms\n", rc_res.total.seconds * 1e3,
                   ru_res.total.seconds * 1e3);
            if (!exact)
                printf("(a lossy cache: these differences are its quantization error, not a fault)\n");
        } else if (root) {
            json_object_set_new(root, "compare",
                                json_pack("{s:b, s:f, s:f, s:I, s:I, s:f}", "beams_identical", same,
                                          "max_score_diff", worst, "tolerance", SCORE_TOL, "cross_kv_rows_cached",
                                          (json_int_t)rc_res.cross_kv_rows, "cross_kv_rows_uncached",
                                          (json_int_t)ru_res.cross_kv_rows, "flop_ratio", flop_ratio));
        }
        if (exact && (!same || worst > SCORE_TOL)) {
            if (root)
                json_dumpf(root, stdout, JSON_INDENT(2)), printf("\n");
            fflush(stdout);
            err_set(&e, ERR_RUNTIME, "cached and uncached beam search differ (%s; score difference %.3g)",
                    same ? "same beams" : "different beams", worst);
            rc = cli_fail(&e);
            json_decref(root);
            root = NULL;
            goto done;
        }
    }
    if (root) {
        json_dumpf(root, stdout, JSON_INDENT(2));
        printf("\n");
    }
done:
    json_decref(root);
    beam_result_free(&rc_res);
    beam_result_free(&ru_res);
    kv_free(self);
    free(src);
    model_free(&m);
    return rc;
}
