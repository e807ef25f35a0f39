/* plot_streaming.c: figure 12, StreamingLLM's comparison on our trained
 * model: the held-out text streamed far past the model's context through
 * the full cache, a window, a window with 1 and with 4 sinks (each at the
 * window's budget), and the window recomputed from scratch at every step
 * (positions from 0: the baseline no cache matches). Each point is the mean
 * negative log-likelihood of a bin of positions: log-perplexity. */
#include "plot/plot.h"

#include <stdlib.h>

#define STREAM_MODEL "kjv-tiny"
#define WINDOW 64
#define BIN 32

static const struct {
    const char *spec;
    const char *column;
} lanes[] = {
    { "contiguous", "full" },
    { "ring:window=64", "window" },
    { "ring:window=63,sinks=1", "sinks1" },
    { "ring:window=60,sinks=4", "sinks4" },
};
#define N_LANES (sizeof lanes / sizeof lanes[0])

static int write_table(const PlotCtx *ctx, const PlotEval *s, const double *recompute, Err *e)
{
    FILE *f = plot_open(ctx, "streaming.tsv", e);
    if (!f)
        return -1;
    fprintf(f, "position");
    for (size_t i = 0; i < N_LANES; i++)
        fprintf(f, "\t%s_log_ppl", lanes[i].column);
    fprintf(f, "\trecompute_log_ppl\ttrained_context\n");
    const size_t scored = s->n - 1;
    for (size_t lo = 0; lo < scored; lo += BIN) {
        const size_t hi = lo + BIN < scored ? lo + BIN : scored;
        fprintf(f, "%zu", (lo + hi) / 2 + 1); /* scored k predicts the token at position k + 1 */
        for (size_t i = 0; i <= N_LANES; i++) {
            const double *nll = i < N_LANES ? s->res[i].nll_at : recompute;
            double sum = 0;
            for (size_t k = lo; k < hi; k++)
                sum += nll[k];
            fprintf(f, "\t%.5f", sum / (double)(hi - lo));
        }
        fprintf(f, "\t%zu\n", s->trained.max_seq_len);
    }
    return plot_close(f, "streaming.tsv", e);
}

int plot_streaming(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    PlotEval s;
    int rc = plot_eval_open(&s, STREAM_MODEL, ctx->quick ? 384 : 1024, 1, e);
    for (size_t i = 0; rc == 0 && i < N_LANES; i++)
        rc = plot_eval_add(&s, lanes[i].spec, e);
    const size_t n = s.n;
    double *recompute = rc == 0 ? malloc((n - 1) * sizeof(double)) : NULL;
    if (rc == 0 && !recompute)
        rc = err_set(e, ERR_RUNTIME, "out of memory");
    if (rc == 0)
        rc = plot_eval_run(ctx, &s, 1, e);
    if (rc == 0)
        rc = eval_recompute_window(&s.m, s.ids, n, 1, WINDOW, recompute, e);
    if (rc == 0)
        rc = write_table(ctx, &s, recompute, e);
    /* the sinks against the window on the same segments: 4 sinks minus the window, 1 sink minus the window */
    EvalIntervals vs = { 0 };
    const size_t pairs[2][2] = { { 3, 1 }, { 2, 1 } };
    if (rc == 0)
        rc = eval_intervals(s.res, N_LANES, pairs, 2, &vs, e);
    FILE *labels = NULL;
    if (rc == 0) {
        const EvalCacheCi *c = s.iv.cache;
        const EvalCi *d4 = &vs.pair[0].bpb, *d1 = &vs.pair[1].bpb;
        double re = 0;
        for (size_t k = 0; k + 1 < n; k++)
            re += recompute[k];
        char caption[1536];
        snprintf(caption, sizeof caption,
                 "%s (trained on windows of %zu tokens) streams the first %zu tokens of the held-out books "
                 "(data/text/kjv-valid.txt), one token per step; each point: the mean -ln p of %d positions.\n"
                 "Bits per byte over the whole stream, with 95%% intervals (a percentile bootstrap over %zu segments "
                 "of the text):\nfull cache %.3f [%.3f, %.3f], window of %d %.3f [%.3f, %.3f], 1 sink + %d %.3f "
                 "[%.3f, %.3f], 4 sinks + %d %.3f [%.3f, %.3f].\nOn the same segments (paired), 4 sinks minus the "
                 "window: %+.3f [%+.3f, %+.3f] bits per byte; 1 sink minus the window: %+.3f [%+.3f, %+.3f].\n"
                 "Recomputing the last %d from position 0 at every step: mean %.3f nats a token (window %.3f).",
                 STREAM_MODEL, s.trained.max_seq_len, n, BIN, s.iv.segments, s.res[0].bits_per_byte, c[0].bpb.lo,
                 c[0].bpb.hi, WINDOW, s.res[1].bits_per_byte, c[1].bpb.lo, c[1].bpb.hi, WINDOW - 1,
                 s.res[2].bits_per_byte, c[2].bpb.lo, c[2].bpb.hi, WINDOW - 4, s.res[3].bits_per_byte, c[3].bpb.lo,
                 c[3].bpb.hi, d4->value, d4->lo, d4->hi, d1->value, d1->lo, d1->hi, WINDOW, re / (double)(n - 1),
                 s.res[1].nll / (double)s.res[1].scored);
        labels = plot_labels_open(ctx, "streaming", "Streaming past the context: log-perplexity against position",
                                  caption, e);
        rc = labels ? 0 : -1;
    }
    if (rc == 0) {
        fprintf(labels, "window = %d\ntrained = %zu\n", WINDOW, s.trained.max_seq_len);
        rc = plot_close(labels, "streaming", e);
        snprintf(note->note, sizeof note->note, "bits per byte: full %.3f, window %.3f, 4 sinks %.3f (%zu tokens)",
                 s.res[0].bits_per_byte, s.res[1].bits_per_byte, s.res[3].bits_per_byte, n);
    }
    free(recompute);
    eval_intervals_free(&vs);
    plot_eval_free(&s);
    return rc;
}
