/* attn_stats.c: the attention weights of uncached passes over windows of a
 * text, reduced to each head's mass on position 0 and on its heaviest keys
 * (attn_stats.h). */
#include "sim/attn_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "stats/top_sum.h"

static size_t top_count(size_t keys)
{
    size_t k = (size_t)ceil(ATTN_TOP_SHARE * (double)keys);
    return k ? k : 1;
}

void attn_stats_free(AttnStats *s)
{
    free(s->first);
    free(s->top);
    free(s->first_sd);
    free(s->learned);
    memset(s, 0, sizeof *s);
}

/* Window w's tokens into win[0..len): the text's, or the first token and then the text's. */
static void window_tokens(const Config *c, const int *ids, size_t n, size_t len, size_t windows, size_t w, int *win)
{
    const size_t skip = c->add_bos ? 1 : 0; /* ids[0] is then the first token itself */
    const size_t take = len - skip, span = n - skip - take;
    const size_t at = skip + (windows > 1 ? w * span / (windows - 1) : 0);
    if (skip)
        win[0] = c->bos_token;
    memcpy(win + skip, ids + at, take * sizeof *win);
}

int attn_stats_measure(Model *m, const int *ids, size_t n, const AttnStatsOpts *o, AttnStats *out, Err *e)
{
    memset(out, 0, sizeof *out);
    const Config *c = &m->cfg;
    const size_t L = c->n_layers, H = c->n_heads, len = o->len;
    if (len < 2 || len > c->max_seq_len)
        return err_set(e, ERR_USAGE, "attention: windows of %zu tokens; model '%s' reads 2 to %zu", len, c->name,
                       c->max_seq_len);
    if (o->from < 1 || o->from >= len)
        return err_set(e, ERR_USAGE, "attention: the first counted query %zu is not in 1..%zu", o->from, len - 1);
    if (o->windows == 0 || n < len + (c->add_bos ? 0 : 1))
        return err_set(e, ERR_USAGE, "attention: the text makes %zu tokens; a window needs %zu", n, len);
    const size_t cells = L * H;
    out->n_layers = L, out->n_heads = H;
    out->first = calloc(cells, sizeof *out->first);
    out->top = calloc(cells, sizeof *out->top);
    out->first_sd = calloc(cells, sizeof *out->first_sd);
    if (c->attn_sink)
        out->learned = calloc(cells, sizeof *out->learned);
    double *sq = calloc(cells, sizeof *sq); /* sums of squared per-window means */
    float *tmp = malloc(len * sizeof *tmp);
    int *win = malloc(len * sizeof *win);
    ForwardState fs;
    int ready = forward_state_init(&fs, c, len, 1, e) == 0;
    int rc = ready && out->first && out->top && out->first_sd && (out->learned || !c->attn_sink) && sq && tmp && win
                 ? 0
                 : (e->kind ? -1 : err_set(e, ERR_RUNTIME, "out of memory for the attention weights"));
    const AttendAlgo form = m->attend;
    m->attend = ATTEND_NAIVE;
    const size_t counted = len - o->from;
    for (size_t w = 0; rc == 0 && w < o->windows; w++) {
        window_tokens(c, ids, n, len, o->windows, w, win);
        Counters ctr = { 0 };
        if ((rc = model_forward(m, &fs, NULL, win, 1, len, 0, NULL, &ctr, e)) < 0)
            break;
        for (size_t l = 0; l < L; l++)
            for (size_t h = 0; h < H; h++) {
                const float *head = fs.probs + (l * H + h) * fs.max_q * c->max_seq_len;
                double first = 0, top = 0, learned = 0;
                for (size_t t = o->from; t < len; t++) { /* query t sees rows 0..t */
                    const float *row = head + t * c->max_seq_len;
                    first += row[0];
                    top += top_sum(row, t + 1, top_count(t + 1), tmp);
                    if (out->learned) { /* what the keys do not take, the sink does */
                        double keys = 0;
                        for (size_t j = 0; j <= t; j++)
                            keys += row[j];
                        learned += 1.0 - keys;
                    }
                }
                if (out->learned)
                    out->learned[l * H + h] += learned;
                out->first[l * H + h] += first;
                out->top[l * H + h] += top;
                sq[l * H + h] += (first / (double)counted) * (first / (double)counted);
            }
    }
    m->attend = form;
    if (rc == 0) {
        const double q = (double)(o->windows * counted), W = (double)o->windows;
        out->queries = o->windows * counted;
        for (size_t t = o->from; t < len; t++) { /* query t sees t + 1 keys */
            out->even_first += 1.0 / (double)(t + 1) / (double)counted;
            out->even_top += (double)top_count(t + 1) / (double)(t + 1) / (double)counted;
        }
        for (size_t i = 0; i < cells; i++) {
            out->first[i] /= q;
            out->top[i] /= q;
            const double var = W > 1 ? (sq[i] - W * out->first[i] * out->first[i]) / (W - 1) : 0;
            out->first_sd[i] = var > 0 ? sqrt(var) : 0;
            out->sink_heads += out->first[i] > ATTN_SINK_THRESHOLD;
            if (out->learned) {
                out->learned[i] /= q;
                out->learned_heads += out->learned[i] > ATTN_SINK_THRESHOLD;
            }
        }
    }
    if (ready)
        forward_state_free(&fs);
    free(sq);
    free(tmp);
    free(win);
    if (rc < 0)
        attn_stats_free(out);
    return rc;
}
