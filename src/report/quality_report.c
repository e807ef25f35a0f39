/* quality_report.c: the quality table of `kvscope run --quality`. */
#include "report/quality_report.h"

#include <jansson.h>
#include <stdio.h>

#include "sim/quality.h"

typedef struct {
    OutFormat fmt;
    json_t *steps;
} Printer;

static int print_step(void *user, const QualityStep *q)
{
    Printer *p = user;
    double worst = 0, least = 1;
    for (size_t l = 0; l < q->n_layers; l++) {
        worst = q->attn_err[l] > worst ? q->attn_err[l] : worst;
        least = q->mass_kept[l] < least ? q->mass_kept[l] : least;
    }
    if (p->fmt == OUT_TABLE) {
        printf("%5zu %8zu %12.4g %11.4f %11.4g %7d %7d%s\n", q->step, q->context, worst, least, q->logit_err, q->token,
               q->exact_token, q->token == q->exact_token ? "" : "  <- differs");
    } else if (p->fmt == OUT_TSV) {
        for (size_t l = 0; l < q->n_layers; l++)
            printf("%zu\t%zu\t%zu\t%.9g\t%.9g\t%.9g\t%d\t%d\n", q->step, q->context, l, q->attn_err[l], q->mass_kept[l],
                   q->logit_err, q->token, q->exact_token);
    } else {
        json_t *err = json_array(), *kept = json_array();
        for (size_t l = 0; l < q->n_layers; l++) {
            json_array_append_new(err, json_real(q->attn_err[l]));
            json_array_append_new(kept, json_real(q->mass_kept[l]));
        }
        json_array_append_new(p->steps, json_pack("{s:I, s:I, s:o, s:o, s:f, s:i, s:i}", "step", (json_int_t)q->step,
                                                  "context", (json_int_t)q->context, "attn_err", err, "mass_kept",
                                                  kept, "logit_err", q->logit_err, "token", q->token,
                                                  "exact_token", q->exact_token));
    }
    return 0;
}

int quality_report(const Model *m, KvCache *cache, const int *prompt, size_t plen, const GenOptions *o,
                   OutFormat fmt, const char *structure, Err *e)
{
    Printer p = { .fmt = fmt, .steps = fmt == OUT_JSON ? json_array() : NULL };
    if (fmt == OUT_TABLE) {
        printf("quality of %s against an exact shadow (contiguous f32, fed the same tokens):\n", cache->spec);
        printf("%5s %8s %12s %11s %11s %7s %7s\n", "step", "context", "attn error", "mass kept", "logit err",
               "token", "exact");
    } else if (fmt == OUT_TSV) {
        printf("step\tcontext\tlayer\tattn_rel_err\tmass_kept\tlogit_max_abs_err\ttoken\texact_token\n");
    }
    QualitySummary s;
    if (quality_run(m, cache, prompt, plen, o, print_step, &p, &s, e) < 0) {
        json_decref(p.steps);
        return -1;
    }
    if (fmt == OUT_TABLE) {
        printf("attn error: ||a - a*|| / ||a*|| of the last token's attention output, worst layer; mass kept: the\n"
               "exact softmax weight on positions the cache still holds, worst layer (mean over heads)\n");
        printf("worst attention error %.4g, least mass kept %.4f, worst logit error %.4g\n", s.max_attn_err,
               s.min_mass_kept, s.max_logit_err);
        printf("attention sinks (exact run): position 0 draws %.4f of a query's attention on average (%.4f if "
               "spread evenly); most in layer %zu head %zu, %.4f\n", s.first_mass, s.first_mass_even,
               s.first_top_layer, s.first_top_head, s.first_mass_top);
        if (s.lookback_queries)
            printf("looking back (exact run): of %zu queries whose token came before, layer %zu head %zu puts "
                   "%.4f on the positions after the earlier copies (%.4f if spread evenly)\n", s.lookback_queries,
                   s.lookback_layer, s.lookback_head, s.lookback_top, s.lookback_even);
        else
            printf("looking back (exact run): no query's token came before\n");
        if (s.first_divergence < s.steps)
            printf("greedy tokens first differ at step %zu of %zu\n", s.first_divergence, s.steps);
        else
            printf("greedy tokens never differ in %zu steps\n", s.steps);
    } else if (fmt == OUT_JSON) {
        json_t *root = json_pack("{s:s, s:s, s:o, s:{s:f, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:f, s:f, "
                                 "s:I, s:I, s:I}}", "cache",
                                 cache->spec, "structure", structure, "steps", p.steps,
                                 "summary", "max_attn_err", s.max_attn_err, "min_mass_kept", s.min_mass_kept,
                                 "max_logit_err", s.max_logit_err, "first_divergence",
                                 (json_int_t)s.first_divergence, "steps", (json_int_t)s.steps, "first_mass",
                                 s.first_mass, "first_mass_even", s.first_mass_even, "first_mass_top",
                                 s.first_mass_top, "first_top_layer", (json_int_t)s.first_top_layer,
                                 "first_top_head", (json_int_t)s.first_top_head, "lookback_top", s.lookback_top,
                                 "lookback_even", s.lookback_even, "lookback_layer", (json_int_t)s.lookback_layer,
                                 "lookback_head", (json_int_t)s.lookback_head, "lookback_queries",
                                 (json_int_t)s.lookback_queries);
        json_dumpf(root, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(root);
    }
    return 0;
}
