/* plot_streaming.c: figure 12, StreamingLLM's comparison on our trained
 * model: the held-out text streamed far past the model's context through
 * the full cache, a window, a window with 1 and with 4 sinks (each at the
 * window's budget), and the window recomputed from scratch at every step
 * (positions from 0: the baseline no cache matches). Each point is the mean
 * negative log-likelihood of a bin of positions: log-perplexity. */
#include "plot/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "sim/eval.h"
#include "util/files.h"

#define STREAM_MODEL "kjv-tiny"
#define WINDOW 64
#define BIN 32
#define MAX_TEXT_BYTES ((size_t)64 << 20)

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

typedef struct {
    Model m;
    int model_ready;
    int *ids;
    size_t *bytes, n;
    KvCache *caches[N_LANES];
    EvalResult res[N_LANES];
    double *recompute; /* [n - 1] */
} Stream;

static void stream_free(Stream *s)
{
    for (size_t i = 0; i < N_LANES; i++) {
        eval_result_free(&s->res[i]);
        kv_free(s->caches[i]);
    }
    if (s->model_ready)
        model_free(&s->m);
    free(s->ids);
    free(s->bytes);
    free(s->recompute);
}

/* The model stretched to n positions, the first n held-out tokens, the caches. */
static int stream_open(Stream *s, size_t n, Err *e)
{
    char path[4096];
    if (files_find("KVSCOPE_DATA", "data", "text/kjv-valid.txt", path, sizeof path) < 0)
        return err_set(e, ERR_USAGE, "plot streaming: data/text/kjv-valid.txt is missing (is KVSCOPE_DATA right?)");
    ModelOpts mo = { .model = STREAM_MODEL };
    Config cfg;
    size_t n_ids, text_len;
    if (setup_load_config(&mo, &cfg, e) < 0 ||
        setup_text_ids(&cfg, path, MAX_TEXT_BYTES, &s->ids, &s->bytes, &n_ids, &text_len, NULL, 0, e) < 0)
        return -1;
    if (n_ids < n)
        return err_set(e, ERR_RUNTIME, "plot streaming: the held-out text makes %zu tokens, fewer than %zu", n_ids, n);
    s->n = n;
    cfg.max_seq_len = n; /* past the trained context: the cache decides what is kept */
    if (setup_model(&cfg, NULL, 0, &s->m, e) < 0)
        return -1;
    s->model_ready = 1;
    KvGeometry geo = model_kv_geometry(&s->m, 1);
    for (size_t i = 0; i < N_LANES; i++)
        if (!(s->caches[i] = kv_open(lanes[i].spec, &geo, e)))
            return -1;
    if (!(s->recompute = malloc((n - 1) * sizeof(double))))
        return err_set(e, ERR_RUNTIME, "out of memory");
    return 0;
}

static int write_table(const PlotCtx *ctx, const Stream *s, size_t trained, Err *e)
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
            const double *nll = i < N_LANES ? s->res[i].nll_at : s->recompute;
            double sum = 0;
            for (size_t k = lo; k < hi; k++)
                sum += nll[k];
            fprintf(f, "\t%.5f", sum / (double)(hi - lo));
        }
        fprintf(f, "\t%zu\n", trained);
    }
    return plot_close(f, "streaming.tsv", e);
}

int plot_streaming(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    Stream s = { 0 };
    const size_t n = ctx->quick ? 384 : 1024;
    int rc = stream_open(&s, n, e);
    ModelOpts mo = { .model = STREAM_MODEL };
    Config trained;
    if (rc == 0)
        rc = setup_load_config(&mo, &trained, e);
    EvalOptions eo = { .prefill = 1, .token_bytes = s.bytes, .per_position = 1 };
    if (rc == 0)
        rc = eval_run(&s.m, s.caches, N_LANES, s.ids, n, &eo, s.res, NULL, NULL, e);
    if (rc == 0)
        rc = eval_recompute_window(&s.m, s.ids, n, 1, WINDOW, s.recompute, e);
    if (rc == 0)
        rc = write_table(ctx, &s, trained.max_seq_len, e);
    FILE *labels = NULL;
    if (rc == 0) {
        double re = 0;
        for (size_t k = 0; k + 1 < n; k++)
            re += s.recompute[k];
        char caption[1024];
        snprintf(caption, sizeof caption,
                 "%s (trained on windows of %zu tokens) streams the first %zu tokens of the held-out books "
                 "(data/text/kjv-valid.txt), one token per step; each point: the mean -ln p of %d positions.\n"
                 "Bits per byte over the whole stream: full cache %.3f, window of %d %.3f, 1 sink + %d %.3f, "
                 "4 sinks + %d %.3f; recomputing the last %d from position 0 at every step: mean %.3f nats a token "
                 "(window %.3f).",
                 STREAM_MODEL, trained.max_seq_len, n, BIN, s.res[0].bits_per_byte, WINDOW, s.res[1].bits_per_byte,
                 WINDOW - 1, s.res[2].bits_per_byte, WINDOW - 4, s.res[3].bits_per_byte, WINDOW,
                 re / (double)(n - 1), s.res[1].nll / (double)s.res[1].scored);
        labels = plot_labels_open(ctx, "streaming", "Streaming past the context: log-perplexity against position",
                                  caption, e);
        rc = labels ? 0 : -1;
    }
    if (rc == 0) {
        fprintf(labels, "window = %d\ntrained = %zu\n", WINDOW, trained.max_seq_len);
        rc = plot_close(labels, "streaming", e);
        snprintf(note->note, sizeof note->note, "bits per byte: full %.3f, window %.3f, 4 sinks %.3f (%zu tokens)",
                 s.res[0].bits_per_byte, s.res[1].bits_per_byte, s.res[3].bits_per_byte, n);
    }
    stream_free(&s);
    return rc;
}
