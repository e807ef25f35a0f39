/* eval_report.c: `kvscope eval`'s output (eval_report.h). */
#include "report/eval_report.h"

#include <jansson.h>
#include <string.h>

#include "util/human.h"

static void print_table(FILE *f, const EvalRun *run, const char *const *specs, const EvalResult *r,
                        const size_t *used, size_t n)
{
    fprintf(f, "eval: model %s (weights: %s), text %s: %zu bytes, %s tokens\n", run->model, run->weights,
            run->text, run->text_bytes, run->tokenizer);
    fprintf(f, "read %zu tokens: a prefill of %zu token%s, then one per step; scored %zu tokens (%.0f bytes) per "
            "cache; %.1f tokens/s over all caches\n", run->tokens, run->prefill, run->prefill == 1 ? "" : "s",
            r[0].scored, r[0].bytes, run->seconds > 0 ? (double)(r[0].scored * n) / run->seconds : 0.0);
    int w = 36; /* the cache column: as wide as its longest spec */
    for (size_t i = 0; i < n; i++)
        w = strlen(specs[i]) > (size_t)w ? (int)strlen(specs[i]) : w;
    fprintf(f, "%-*s %9s %10s %12s %7s %10s %11s %6s\n", w, "cache", "bits/byte", "perplexity", "KL nats/tok",
            "top-1", "logit err", "cache used", "reach");
    int past = 0;
    for (size_t i = 0; i < n; i++) {
        char b[32];
        if (i == 0)
            fprintf(f, "%-*s %9.4f %10.3f %12s %7s %10s %11s", w, specs[i], r[i].bits_per_byte, r[i].perplexity,
                    "(reference)", "-", "-", human_bytes(b, sizeof b, (double)used[i]));
        else
            fprintf(f, "%-*s %9.4f %10.3f %12.4g %6.1f%% %10.3g %11s", w, specs[i], r[i].bits_per_byte,
                    r[i].perplexity, r[i].kl, 100 * r[i].top1_agree, r[i].max_logit_err,
                    human_bytes(b, sizeof b, (double)used[i]));
        const int beyond = run->trained_ctx && r[i].reach > run->trained_ctx;
        fprintf(f, " %6zu%s\n", r[i].reach, beyond ? "  past the trained context" : "");
        past |= beyond;
    }
    fprintf(f, "KL: mean KL(reference || cache) of the next-token distributions; top-1: steps whose greedy token\n"
               "agrees with the reference's; logit err: the largest |logit - reference logit| seen; reach: the\n"
               "most positions a step attended across, from the oldest row held to the query\n");
    if (past)
        fprintf(f, "past the trained context: model %s learnt %zu positions; a cache that reaches further feeds it\n"
                   "distances it never saw, so its score says as much about the model there as about the cache\n",
                run->model, run->trained_ctx);
}

void eval_report(FILE *f, OutFormat fmt, const EvalRun *run, const char *const *specs, const EvalResult *r,
                 const size_t *used, size_t n)
{
    if (fmt == OUT_TABLE) {
        print_table(f, run, specs, r, used, n);
        return;
    }
    if (fmt == OUT_TSV) {
        fprintf(f, "cache\tscored\tbytes\tnll_nats\tbits_per_byte\tperplexity\tkl_nats\ttop1_agree\tmax_logit_err\t"
                   "cache_bytes_used\treach\n");
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s\t%zu\t%.0f\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%zu\t%zu\n", specs[i], r[i].scored,
                    r[i].bytes, r[i].nll, r[i].bits_per_byte, r[i].perplexity, r[i].kl, r[i].top1_agree,
                    r[i].max_logit_err, used[i], r[i].reach);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(rows, json_pack("{s:s, s:b, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}",
                                              "cache", specs[i], "reference", i == 0, "scored",
                                              (json_int_t)r[i].scored, "bytes", r[i].bytes, "nll_nats", r[i].nll,
                                              "bits_per_byte", r[i].bits_per_byte, "perplexity", r[i].perplexity,
                                              "kl_nats", r[i].kl, "top1_agree", r[i].top1_agree,
                                              "max_logit_err", r[i].max_logit_err, "cache_bytes_used",
                                              (json_int_t)used[i], "reach", (json_int_t)r[i].reach));
    json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:o}", "model", run->model, "weights",
                             run->weights, "text", run->text, "tokenizer", run->tokenizer, "text_bytes",
                             (json_int_t)run->text_bytes, "tokens", (json_int_t)run->tokens, "prefill",
                             (json_int_t)run->prefill, "trained_context", (json_int_t)run->trained_ctx, "seconds",
                             run->seconds, "caches", rows);
    json_dumpf(root, f, JSON_INDENT(2));
    fprintf(f, "\n");
    json_decref(root);
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
