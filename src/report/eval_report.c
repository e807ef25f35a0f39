/* eval_report.c: `kvscope eval`'s output (eval_report.h). */
#include "report/eval_report.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/human.h"

/* Decimals that show an interval of this width to about two significant
 * digits, at least `least`. */
static int decimals_for(double width, int least)
{
    int d = width > 0 ? 1 - (int)floor(log10(width)) : least;
    return d < least ? least : d > 6 ? 6 : d;
}

/* "1.5191 [1.481, 1.557]"; signed: "+0.0052 [-0.0013, +0.0118]"; pct: the
 * figure is a share, written in percent with one decimal. */
static void fmt_ci(char *b, size_t cap, const EvalCi *c, int sign, int pct)
{
    if (pct) {
        snprintf(b, cap, sign ? "%+.1f%% [%+.1f, %+.1f]" : "%.1f%% [%.1f, %.1f]", 100 * c->value, 100 * c->lo,
                 100 * c->hi);
        return;
    }
    const int d = decimals_for(c->hi - c->lo, 3), dv = d > 4 ? d : 4;
    snprintf(b, cap, sign ? "%+.*f [%+.*f, %+.*f]" : "%.*f [%.*f, %.*f]", dv, c->value, d, c->lo, d, c->hi);
}

/* A difference's side in words: lower bits per byte and KL, higher top-1,
 * are better. */
static const char *side_word(const EvalCi *d, int higher_is_better)
{
    const EvalSide s = eval_ci_side(d);
    if (s == EVAL_SAME)
        return "same";
    return (s == EVAL_ABOVE) == higher_is_better ? "better" : "worse";
}

static const char *side_name(EvalSide s)
{
    return s == EVAL_SAME ? "same" : s == EVAL_BELOW ? "lower" : "higher";
}

#define CELL 64

/* The text of one row's cells. */
typedef struct {
    char bpb[CELL], vs[CELL + 8], kl[CELL], top1[CELL], used[32];
} Cells;

static void print_table(FILE *f, const EvalRun *run, const char *const *specs, const EvalResult *r,
                        const size_t *used, size_t n, const EvalIntervals *iv)
{
    fprintf(f, "eval: model %s (weights: %s), text %s: %zu bytes, %s tokens\n", run->model, run->weights,
            run->text, run->text_bytes, run->tokenizer);
    fprintf(f, "read %zu tokens: a prefill of %zu token%s, then one per step; scored %zu tokens (%.0f bytes) per "
            "cache; %.1f tokens/s over all caches\n", run->tokens, run->prefill, run->prefill == 1 ? "" : "s",
            r[0].scored, r[0].bytes, run->seconds > 0 ? (double)(r[0].scored * n) / run->seconds : 0.0);
    const EvalSegment *sg = r[0].seg;
    const size_t S = r[0].n_seg;
    size_t least = sg[0].count, most = sg[0].count;
    for (size_t j = 1; j < S; j++) {
        least = sg[j].count < least ? sg[j].count : least;
        most = sg[j].count > most ? sg[j].count : most;
    }
    char each[48];
    if (least == most)
        snprintf(each, sizeof each, "%zu", least);
    else
        snprintf(each, sizeof each, "%zu or %zu", least, most);
    fprintf(f, "%.0f%% intervals: a percentile bootstrap, %zu resamples (seed %lu) of %zu segments that cut the "
            "text\nfrom byte %zu to byte %zu, %s prediction%s each (--per-segment lists them)%s\n", 100 * iv->level,
            iv->resamples, iv->seed, S, sg[0].first_byte, sg[S - 1].end_byte, each, most == 1 ? "" : "s",
            S < EVAL_CI_SEGMENTS ? "; fewer than 32 segments: a rough interval" : "");
    /* every row's cells first, then the columns as wide as their widest */
    Cells *cells = calloc(n, sizeof *cells);
    if (!cells)
        return;
    int w[6] = { 5, 9, 19, 11, 5, 10 };
    for (size_t i = 0; i < n; i++) {
        Cells *c = &cells[i];
        fmt_ci(c->bpb, sizeof c->bpb, &iv->cache[i].bpb, 0, 0);
        human_bytes(c->used, sizeof c->used, (double)used[i]);
        if (i == 0) {
            snprintf(c->vs, sizeof c->vs, "(reference)");
            snprintf(c->kl, sizeof c->kl, "-");
            snprintf(c->top1, sizeof c->top1, "-");
        } else {
            const EvalPairCi *d = &iv->pair[i - 1]; /* cache i minus the reference */
            char b[CELL];
            fmt_ci(b, sizeof b, &d->bpb, 1, 0);
            snprintf(c->vs, sizeof c->vs, "%s %s", b, side_word(&d->bpb, 0));
            fmt_ci(c->kl, sizeof c->kl, &iv->cache[i].kl, 0, 0);
            fmt_ci(c->top1, sizeof c->top1, &iv->cache[i].top1, 0, 1);
        }
        const char *col[6] = { specs[i], c->bpb, c->vs, c->kl, c->top1, c->used };
        for (int k = 0; k < 6; k++)
            w[k] = (int)strlen(col[k]) > w[k] ? (int)strlen(col[k]) : w[k];
    }
    const char *vs = run->reference_exact ? "vs exact" : "vs reference";
    char vs_head[40];
    snprintf(vs_head, sizeof vs_head, "%s, bits/byte", vs);
    fprintf(f, "%-*s  %-*s  %-*s  %-*s  %-*s  %*s  %6s\n", w[0], "cache", w[1], "bits/byte", w[2], vs_head, w[3], "KL nats/tok", w[4], "top-1", w[5], "cache used", "reach");
    int past = 0;
    for (size_t i = 0; i < n; i++) {
        const Cells *c = &cells[i];
        const int beyond = run->trained_ctx && r[i].reach > run->trained_ctx;
        fprintf(f, "%-*s  %-*s  %-*s  %-*s  %-*s  %*s  %6zu%s\n", w[0], specs[i], w[1], c->bpb, w[2], c->vs, w[3],
                c->kl, w[4], c->top1, w[5], c->used, r[i].reach, beyond ? "  past the trained context" : "");
        past |= beyond;
    }
    free(cells);
    if (iv->n_pair > n - 1) {
        fprintf(f, "paired, the first cache minus the second:\n");
        for (size_t p = n - 1; p < iv->n_pair; p++) {
            const EvalPairCi *d = &iv->pair[p];
            char b[CELL], k[CELL], t[CELL];
            fmt_ci(b, sizeof b, &d->bpb, 1, 0);
            fmt_ci(k, sizeof k, &d->kl, 1, 0);
            fmt_ci(t, sizeof t, &d->top1, 1, 1);
            fprintf(f, "  %s - %s: bits/byte %s %s; KL %s %s; top-1 %s %s\n", specs[d->a], specs[d->b], b,
                    side_word(&d->bpb, 0), k, side_word(&d->kl, 0), t, side_word(&d->top1, 1));
        }
    }
    fprintf(f, "%s: this cache's bits per byte minus the reference's, with the interval of that paired\n"
               "difference (the same resamples); same: the interval holds 0, better / worse: it lies wholly below\n"
               "/ above (lower bits per byte and KL, higher top-1, are better). KL: mean KL(reference || cache) of\n"
               "the next-token distributions; top-1: steps whose greedy token agrees with the reference's; reach:\n"
               "the most positions a step attended across. tsv and json add perplexity and the largest logit error\n",
            vs);
    if (past)
        fprintf(f, "past the trained context: model %s learnt %zu positions; a cache that reaches further feeds it\n"
                   "distances it never saw, so its score says as much about the model there as about the cache\n",
                run->model, run->trained_ctx);
}

static json_t *ci_json(const EvalCi *c)
{
    return json_pack("{s:f, s:f, s:f, s:s}", "diff", c->value, "lo", c->lo, "hi", c->hi, "side",
                     side_name(eval_ci_side(c)));
}

static json_t *pair_json(const EvalPairCi *d, const char *const *specs)
{
    return json_pack("{s:s, s:s, s:I, s:I, s:o, s:o, s:o}", "first", specs[d->a], "second", specs[d->b],
                     "first_row", (json_int_t)d->a, "second_row", (json_int_t)d->b, "bits_per_byte",
                     ci_json(&d->bpb), "kl_nats", ci_json(&d->kl), "top1_agree", ci_json(&d->top1));
}

void eval_report(FILE *f, OutFormat fmt, const EvalRun *run, const char *const *specs, const EvalResult *r,
                 const size_t *used, size_t n, const EvalIntervals *iv)
{
    if (fmt == OUT_TABLE) {
        print_table(f, run, specs, r, used, n, iv);
        return;
    }
    if (fmt == OUT_TSV) {
        fprintf(f, "cache\tscored\tbytes\tnll_nats\tbits_per_byte\tperplexity\tkl_nats\ttop1_agree\tmax_logit_err\t"
                   "cache_bytes_used\treach\tbits_per_byte_lo\tbits_per_byte_hi\tkl_nats_lo\tkl_nats_hi\t"
                   "top1_agree_lo\ttop1_agree_hi\tvs_ref_bits_per_byte\tvs_ref_lo\tvs_ref_hi\tvs_ref\tsegments\n");
        for (size_t i = 0; i < n; i++) {
            const EvalCacheCi *c = &iv->cache[i];
            const EvalCi zero = { 0 }, *d = i ? &iv->pair[i - 1].bpb : &zero;
            fprintf(f, "%s\t%zu\t%.0f\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%zu\t%zu\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t"
                       "%.9g\t%.9g\t%.9g\t%.9g\t%s\t%zu\n",
                    specs[i], r[i].scored, r[i].bytes, r[i].nll, r[i].bits_per_byte, r[i].perplexity, r[i].kl,
                    r[i].top1_agree, r[i].max_logit_err, used[i], r[i].reach, c->bpb.lo, c->bpb.hi, c->kl.lo,
                    c->kl.hi, c->top1.lo, c->top1.hi, d->value, d->lo, d->hi, side_name(eval_ci_side(d)),
                    iv->segments);
        }
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++) {
        const EvalCacheCi *c = &iv->cache[i];
        json_t *row = json_pack("{s:s, s:b, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}", "cache", specs[i],
                                "reference", i == 0, "scored", (json_int_t)r[i].scored, "bytes", r[i].bytes,
                                "nll_nats", r[i].nll, "bits_per_byte", r[i].bits_per_byte, "perplexity",
                                r[i].perplexity, "kl_nats", r[i].kl, "top1_agree", r[i].top1_agree, "max_logit_err",
                                r[i].max_logit_err, "cache_bytes_used", (json_int_t)used[i], "reach",
                                (json_int_t)r[i].reach);
        json_object_set_new(row, "bits_per_byte_lo", json_real(c->bpb.lo));
        json_object_set_new(row, "bits_per_byte_hi", json_real(c->bpb.hi));
        json_object_set_new(row, "kl_nats_lo", json_real(c->kl.lo));
        json_object_set_new(row, "kl_nats_hi", json_real(c->kl.hi));
        json_object_set_new(row, "top1_agree_lo", json_real(c->top1.lo));
        json_object_set_new(row, "top1_agree_hi", json_real(c->top1.hi));
        if (i > 0)
            json_object_set_new(row, "vs_reference", pair_json(&iv->pair[i - 1], specs));
        json_array_append_new(rows, row);
    }
    json_t *pairs = json_array();
    for (size_t p = n - 1; p < iv->n_pair; p++)
        json_array_append_new(pairs, pair_json(&iv->pair[p], specs));
    json_t *segs = json_array();
    for (size_t j = 0; j < r[0].n_seg; j++)
        json_array_append_new(segs, json_pack("{s:I, s:I, s:I, s:I}", "first_byte",
                                              (json_int_t)r[0].seg[j].first_byte, "end_byte",
                                              (json_int_t)r[0].seg[j].end_byte, "first_prediction",
                                              (json_int_t)r[0].seg[j].first, "predictions",
                                              (json_int_t)r[0].seg[j].count));
    json_t *boot = json_pack("{s:s, s:f, s:I, s:I, s:I}", "interval", "percentile", "level", iv->level, "segments",
                             (json_int_t)iv->segments, "resamples", (json_int_t)iv->resamples, "seed",
                             (json_int_t)iv->seed);
    json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:o, s:o, s:o, s:o}", "model",
                             run->model, "weights", run->weights, "text", run->text, "tokenizer", run->tokenizer,
                             "text_bytes", (json_int_t)run->text_bytes, "tokens", (json_int_t)run->tokens, "prefill",
                             (json_int_t)run->prefill, "trained_context", (json_int_t)run->trained_ctx, "seconds",
                             run->seconds, "bootstrap", boot, "caches", rows, "pairs", pairs, "segments", segs);
    json_dumpf(root, f, JSON_INDENT(2));
    fprintf(f, "\n");
    json_decref(root);
}

void eval_report_segments(FILE *f, OutFormat fmt, const EvalRun *run, const char *const *specs,
                          const EvalResult *r, size_t n)
{
    const size_t S = r[0].n_seg;
    if (fmt == OUT_JSON) {
        json_t *segs = json_array();
        for (size_t j = 0; j < S; j++) {
            const EvalSegment *g = &r[0].seg[j];
            json_t *bpb = json_object(), *kl = json_object(), *top1 = json_object();
            for (size_t i = 0; i < n; i++) {
                const EvalSegment *h = &r[i].seg[j];
                json_object_set_new(bpb, specs[i], json_real(h->bytes > 0 ? h->nll / log(2.0) / h->bytes : 0));
                json_object_set_new(kl, specs[i], json_real(h->kl / (double)h->count));
                json_object_set_new(top1, specs[i], json_real(h->agree / (double)h->count));
            }
            json_array_append_new(segs, json_pack("{s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "first_byte",
                                                  (json_int_t)g->first_byte, "end_byte", (json_int_t)g->end_byte,
                                                  "first_prediction", (json_int_t)g->first, "predictions",
                                                  (json_int_t)g->count, "bits_per_byte", bpb, "kl_nats", kl,
                                                  "top1_agree", top1));
        }
        json_t *root = json_pack("{s:s, s:s, s:I, s:o}", "model", run->model, "text", run->text, "text_bytes",
                                 (json_int_t)run->text_bytes, "segments", segs);
        json_dumpf(root, f, JSON_INDENT(2));
        fprintf(f, "\n");
        json_decref(root);
        return;
    }
    /* a row per segment: its place, then bits per byte, KL and top-1 per cache */
    fprintf(f, "segment\tfirst_byte\tend_byte\tfirst_prediction\tpredictions");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "\t%s bits_per_byte\t%s kl_nats\t%s top1_agree", specs[i], specs[i], specs[i]);
    fprintf(f, "\n");
    for (size_t j = 0; j < S; j++) {
        const EvalSegment *g = &r[0].seg[j];
        fprintf(f, "%zu\t%zu\t%zu\t%zu\t%zu", j, g->first_byte, g->end_byte, g->first, g->count);
        for (size_t i = 0; i < n; i++) {
            const EvalSegment *h = &r[i].seg[j];
            fprintf(f, "\t%.9g\t%.9g\t%.9g", h->bytes > 0 ? h->nll / log(2.0) / h->bytes : 0,
                    h->kl / (double)h->count, h->agree / (double)h->count);
        }
        fprintf(f, "\n");
    }
}

void eval_report_positions(FILE *f, OutFormat fmt, const EvalRun *run, const char *const *specs,
                           const EvalResult *r, size_t n)
{
    if (fmt == OUT_JSON) {
        json_t *curves = json_object();
        for (size_t i = 0; i < n; i++) {
            json_t *a = json_array();
            for (size_t k = 0; k < r[i].scored; k++)
                json_array_append_new(a, json_real(r[i].nll_at[k]));
            json_object_set_new(curves, specs[i], a);
        }
        json_t *root = json_pack("{s:s, s:I, s:s, s:o}", "model", run->model, "first_position",
                                 (json_int_t)run->prefill, "unit", "nats", "nll", curves);
        json_dumpf(root, f, JSON_INDENT(2));
        fprintf(f, "\n");
        json_decref(root);
        return;
    }
    /* the position of the predicted token, then -ln p for each cache */
    fprintf(f, "position");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "\t%s", specs[i]);
    fprintf(f, "\n");
    for (size_t k = 0; k < r[0].scored; k++) {
        fprintf(f, "%zu", run->prefill + k);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "\t%.6g", r[i].nll_at[k]);
        fprintf(f, "\n");
    }
}
