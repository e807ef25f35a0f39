/* attn_stats.h: where a trained model's attention goes, measured on a text.
 *
 * Two measures per layer and head, over windows of the text read the way
 * the model trained (each window from position 0; with add_bos, the fixed
 * first token, then the text):
 *   - the mean weight the queries give position 0. A head that puts much
 *     of its mass there uses the first token as an attention sink
 *     (StreamingLLM 3.1); Gu et al. (2024) count a head as a sink head when
 *     that mean passes a threshold, 0.3 in their tables;
 *   - the mean share of a query's mass on its heaviest 5% of keys (rounded
 *     up, at least one): how concentrated attention is, which is what an
 *     eviction policy that keeps heavy hitters (H2O) relies on.
 * With learnt sinks (attn_sink = learned) a third: the mean weight the
 * sink's own term takes, beside position 0's; the other two are then
 * shares of the whole softmax, the sink's term included.
 * Every query from position `from` on counts once (position 0's own query
 * sees only itself). The windows are evenly spaced over the text, always
 * the same ones. Nothing here prints. */
#ifndef KVSCOPE_SIM_ATTN_STATS_H
#define KVSCOPE_SIM_ATTN_STATS_H

#include <stddef.h>

#include "model/model.h"
#include "util/err.h"

#define ATTN_SINK_THRESHOLD 0.3
#define ATTN_TOP_SHARE 0.05

typedef struct {
    size_t windows;  /* windows measured */
    size_t len;      /* tokens in each (the first of them the model's bos_token with add_bos) */
    size_t from;     /* the first query position counted, >= 1 */
} AttnStatsOpts;

typedef struct {
    size_t n_layers, n_heads;
    size_t queries;       /* queries averaged per head: windows x (len - from) */
    double *first;        /* [n_layers][n_heads] mean weight on position 0 */
    double *top;          /* [n_layers][n_heads] mean share of mass on the top 5% of keys */
    double *first_sd;     /* [n_layers][n_heads] the spread of the per-window means of first, over windows
                             (sample standard deviation; 0 with one window) */
    double *learned;      /* [n_layers][n_heads] mean weight the learnt sink takes (attn_sink = learned: its
                             term of the softmax, 1 minus the keys' weights); NULL for a model without */
    size_t sink_heads;    /* heads whose first passes ATTN_SINK_THRESHOLD */
    size_t learned_heads; /* heads whose learned passes it */
    double even_first, even_top; /* the same two means for a head that spreads each query's
                                    weight evenly over the keys it sees: the baseline */
} AttnStats;

/* Measure m on ids[0..n), the text's tokens as the model's tokenizer makes
 * them (with add_bos, bos_token first: each window then starts with it and
 * continues with len - 1 of the text's tokens). m's attention
 * form is set to naive for the passes (flash keeps no weights). ERR_USAGE
 * when the text is shorter than a window or the window longer than the
 * model's context; ERR_RUNTIME when memory runs out. Free with
 * attn_stats_free. */
int attn_stats_measure(Model *m, const int *ids, size_t n, const AttnStatsOpts *o, AttnStats *out, Err *e);
void attn_stats_free(AttnStats *s);

#endif
