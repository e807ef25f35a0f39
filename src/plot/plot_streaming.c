/* plot_streaming.c: figure 12, StreamingLLM's comparison on our trained
 * model: the held-out text streamed to four times the context the model
 * trained on, its first context's worth as the prefill, through the full
 * cache, a window of the context, 4 sinks beside a window at the same
 * budget (kept at their positions), llama.cpp's context shift keeping 0 and
 * 4 first tokens (moved with the rest), and the window recomputed from
 * scratch (the baseline no cache is; sampled, as each sample is a whole
 * context's forward). Each point is the mean negative log-likelihood of a
 * bin of positions: log-perplexity. The caption's bits per byte come from
 * the same stream and from a second one to twice the context. */
#include "plot/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_MODEL "kjv-base"
#define QUICK_CONTEXT 64 /* --quick: this stands in for the trained context (the same comparison, smaller) */
#define BINS_PER_CONTEXT 8
#define SAMPLES_PER_BIN 4 /* recomputed windows a bin */
#define SINKS 4

enum { L_FULL, L_WINDOW, L_SINKS, L_SHIFT0, L_SHIFT4, N_LANES };
static const char *const lane_column[N_LANES] = { "full", "window", "sinks4", "shift0", "shift4" };

static void lane_spec(char *buf, size_t cap, int lane, size_t ctx)
{
    switch (lane) {
    case L_FULL: snprintf(buf, cap, "contiguous"); break;
    case L_WINDOW: snprintf(buf, cap, "ring:window=%zu,pass=%zu", ctx, ctx); break;
    case L_SINKS: snprintf(buf, cap, "ring:window=%zu,sinks=%d,pass=%zu", ctx - SINKS, SINKS, ctx); break;
    case L_SHIFT0: snprintf(buf, cap, "shift:ctx=%zu,keep=0", ctx); break;
    default: snprintf(buf, cap, "shift:ctx=%zu,keep=%d", ctx, SINKS); break;
    }
}

/* sinks beside the window, and the shift keeping 4 against keeping none: on the same segments */
static const size_t lane_pairs[2][2] = { { L_SINKS, L_WINDOW }, { L_SHIFT4, L_SHIFT0 } };

/* Every lane over the first `times` contexts of held-out text, the first
 * context as the prefill; vs: the lane pairs' intervals. */
static int stream(const PlotCtx *ctx, PlotEval *s, size_t context, size_t times, EvalIntervals *vs, Err *e)
{
    int rc = plot_eval_open(s, STREAM_MODEL, times * context, 1, e);
    s->prefill = context;
    for (int i = 0; rc == 0 && i < N_LANES; i++) {
        char spec[96];
        lane_spec(spec, sizeof spec, i, context);
        rc = plot_eval_add(s, spec, e);
    }
    if (rc == 0 && s->n != times * context)
        rc = err_set(e, ERR_RUNTIME, "plot: %zu held-out tokens, not %zu", s->n, times * context);
    if (rc == 0)
        rc = plot_eval_run(ctx, s, 1, e);
    if (rc == 0)
        rc = eval_intervals(s->res, N_LANES, lane_pairs, 2, vs, e);
    return rc;
}

/* A bin's mean of nll[lo, hi), over the entries that are numbers. */
static double bin_mean(const double *nll, size_t lo, size_t hi)
{
    double sum = 0;
    size_t k = 0;
    for (size_t i = lo; i < hi; i++)
        if (!isnan(nll[i])) {
            sum += nll[i];
            k++;
        }
    return k ? sum / (double)k : NAN;
}

/* A row for the first prediction alone (every cache holds the whole
 * prefill there), then bins of `bin` predictions from the first on, each
 * with the recomputed window's samples at its start. */
static int write_table(const PlotCtx *ctx, const PlotEval *s, const double *recompute, size_t context, size_t bin,
                       Err *e)
{
    FILE *f = plot_open(ctx, "streaming.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "position");
    for (int i = 0; i < N_LANES; i++)
        fprintf(f, "\t%s_log_ppl", lane_column[i]);
    fprintf(f, "\trecompute_log_ppl\ttrained_context\n");
    const size_t scored = s->n - s->prefill;
    for (size_t r = 0, lo = 0; lo < scored; r++) {
        const size_t hi = r == 0 ? 1 : (lo + bin < scored ? lo + bin : scored);
        fprintf(f, "%zu", s->prefill + (lo + hi - 1) / 2); /* scored k predicts the token at position P + k */
        for (int i = 0; i < N_LANES; i++)
            fprintf(f, "\t%.5f", bin_mean(s->res[i].nll_at, lo, hi));
        fprintf(f, "\t%.5f\t%zu\n", bin_mean(recompute, lo, hi), context);
        lo = r == 0 ? 0 : hi;
    }
    return plot_close(f, "streaming.tsv", e);
}

/* "name 1.234 [1.200, 1.300]" for lane i of s */
static int say_lane(char *buf, size_t cap, const PlotEval *s, int i)
{
    const EvalCi *c = &s->iv.cache[i].bpb;
    return snprintf(buf, cap, "%s %.3f [%.3f, %.3f]", lane_column[i], s->res[i].bits_per_byte, c->lo, c->hi);
}

/* One stream's line of the caption: every lane, then the paired differences. */
static void say_stream(char *buf, size_t cap, const PlotEval *s, const EvalIntervals *vs, size_t times)
{
    size_t at = (size_t)snprintf(buf, cap, "%zux the context (%zu scored):", times, s->n - s->prefill);
    for (int i = 0; i < N_LANES && at < cap; i++) {
        at += (size_t)snprintf(buf + at, cap - at, "%s", i ? ", " : " ");
        if (at < cap)
            at += (size_t)say_lane(buf + at, cap - at, s, i);
    }
    const EvalCi *w = &s->iv.pair[L_WINDOW - 1].bpb, *d4 = &vs->pair[0].bpb, *sh = &vs->pair[1].bpb;
    if (at < cap)
        snprintf(buf + at, cap - at,
                 ".\n   paired: window - full %+.4f [%+.4f, %+.4f]; sinks4 - window %+.4f [%+.4f, %+.4f]; "
                 "shift4 - shift0 %+.4f [%+.4f, %+.4f].",
                 w->value, w->lo, w->hi, d4->value, d4->lo, d4->hi, sh->value, sh->lo, sh->hi);
}

int plot_streaming(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    PlotEval s2, s4;
    EvalIntervals vs2 = { 0 }, vs4 = { 0 };
    memset(&s2, 0, sizeof s2);
    ModelOpts mo = { .model = STREAM_MODEL };
    Config trained;
    int rc = setup_load_config(&mo, &trained, e);
    const size_t context = ctx->quick ? QUICK_CONTEXT : trained.max_seq_len;
    const size_t bin = context / BINS_PER_CONTEXT, stride = ctx->quick ? bin : bin / SAMPLES_PER_BIN;
    if (rc == 0)
        rc = stream(ctx, &s4, context, 4, &vs4, e);
    else
        memset(&s4, 0, sizeof s4);
    if (rc == 0)
        rc = stream(ctx, &s2, context, 2, &vs2, e);
    const size_t scored = s4.n > context ? s4.n - context : 0;
    double *recompute = rc == 0 ? malloc(scored * sizeof(double)) : NULL;
    if (rc == 0 && !recompute)
        rc = err_set(e, ERR_RUNTIME, "out of memory");
    if (rc == 0)
        rc = eval_recompute_window(&s4.m, s4.ids, s4.n, context, context, stride, recompute, e);
    if (rc == 0)
        rc = write_table(ctx, &s4, recompute, context, bin, e);
    FILE *labels = NULL;
    if (rc == 0) {
        double re = 0, win = 0, sh = 0;
        size_t k = 0;
        for (size_t i = 0; i < scored; i += stride, k++) { /* the recomputed window against the caches where sampled */
            re += recompute[i];
            win += s4.res[L_WINDOW].nll_at[i];
            sh += s4.res[L_SHIFT4].nll_at[i];
        }
        char line2[640], line4[640], caption[2048];
        say_stream(line2, sizeof line2, &s2, &vs2, 2);
        say_stream(line4, sizeof line4, &s4, &vs4, 4);
        snprintf(caption, sizeof caption,
                 "%s (trained on windows of %zu tokens, the first its fixed first token) streams the held-out "
                 "books (data/text/kjv-valid.txt), the first %zu tokens as one prefill, then one token a step;\neach "
                 "point: the mean -ln p of %zu positions%s.\nBits per byte with 95%% intervals (a percentile "
                 "bootstrap over %zu segments of the text), and paired differences on the same segments:\n%s\n%s\n"
                 "The window recomputed at one step in %zu (the first token and the last %zu, at positions 0 .. "
                 "%zu): %.3f nats a token at those %zu steps; the window there %.3f, shift4 %.3f.",
                 STREAM_MODEL, trained.max_seq_len, context, bin,
                 ctx->quick ? " (--quick: a context of 64 stands in for the trained one)" : "", s4.iv.segments,
                 line2, line4, stride, context - 1, context - 1, re / (double)k, k, win / (double)k, sh / (double)k);
        labels = plot_labels_open(ctx, "streaming", "Streaming past the context: log-perplexity against position",
                                  caption, e);
        rc = labels ? 0 : -1;
    }
    if (rc == 0) {
        fprintf(labels, "window = %zu\ntrained = %zu\nsinks = %d\n", context, context, SINKS);
        rc = plot_close(labels, "streaming", e);
        snprintf(note->note, sizeof note->note,
                 "bits per byte at 4x: full %.3f, window %.3f, 4 sinks %.3f, shift keep 4 %.3f (%zu tokens)",
                 s4.res[L_FULL].bits_per_byte, s4.res[L_WINDOW].bits_per_byte, s4.res[L_SINKS].bits_per_byte,
                 s4.res[L_SHIFT4].bits_per_byte, s4.n);
    }
    free(recompute);
    eval_intervals_free(&vs2);
    eval_intervals_free(&vs4);
    plot_eval_free(&s2);
    plot_eval_free(&s4);
    return rc;
}
