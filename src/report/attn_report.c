/* attn_report.c: the attention statistics as a table, tsv or json (attn_report.h). */
#include "report/attn_report.h"

#include <jansson.h>

static double mean_of(const double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return n ? sum / (double)n : 0;
}

/* One layer-by-head grid; mark flags the cells above ATTN_SINK_THRESHOLD. */
static void grid(FILE *f, const AttnStats *s, const double *v, int mark)
{
    fprintf(f, "layer");
    for (size_t h = 0; h < s->n_heads; h++)
        fprintf(f, "  head %-2zu", h);
    fprintf(f, "\n");
    for (size_t l = 0; l < s->n_layers; l++) {
        fprintf(f, "%5zu", l);
        for (size_t h = 0; h < s->n_heads; h++) {
            const double x = v[l * s->n_heads + h];
            fprintf(f, "  %6.3f%c", x, mark && x > ATTN_SINK_THRESHOLD ? '*' : ' ');
        }
        fprintf(f, "\n");
    }
}

static void table(FILE *f, const AttnRun *r, const AttnStats *s)
{
    const size_t heads = s->n_layers * s->n_heads;
    fprintf(f, "%s (%s) on %s: %zu windows of %zu tokens, ", r->model, r->weights, r->text, r->opts.windows,
            r->opts.len);
    if (r->bos >= 0)
        fprintf(f, "each starting with the fixed first token %d; ", r->bos);
    else
        fprintf(f, "each starting where the text does (no fixed first token); ");
    fprintf(f, "queries %zu..%zu of each (%zu per head)\n\n", r->opts.from, r->opts.len - 1, s->queries);
    fprintf(f, "mean attention weight on position 0 (* above %.1f: a sink head)\n", ATTN_SINK_THRESHOLD);
    grid(f, s, s->first, 1);
    if (s->learned) {
        fprintf(f, "\nmean weight the learnt sink takes (attn_sink = learned: its own term of the softmax, no key; "
                "* above %.1f)\n", ATTN_SINK_THRESHOLD);
        grid(f, s, s->learned, 1);
    }
    fprintf(f, "\nshare of each query's mass on its heaviest %.0f%% of keys\n", 100 * ATTN_TOP_SHARE);
    grid(f, s, s->top, 0);
    fprintf(f, "\nsink heads: %zu of %zu (%.1f%%); over all heads, the weight on position 0 averages %.3f and the "
            "heaviest %.0f%% of keys hold %.3f of the mass (an even spread over the same queries: %.3f and %.3f)\n",
            s->sink_heads, heads, 100.0 * (double)s->sink_heads / (double)heads, mean_of(s->first, heads),
            100 * ATTN_TOP_SHARE, mean_of(s->top, heads), s->even_first, s->even_top);
    if (s->learned)
        fprintf(f, "learnt sink: it takes %.3f of the weight over all heads; %zu of %zu heads give it more than %.1f\n",
                mean_of(s->learned, heads), s->learned_heads, heads, ATTN_SINK_THRESHOLD);
}

static void json(FILE *f, const AttnRun *r, const AttnStats *s)
{
    json_t *heads = json_array();
    for (size_t l = 0; l < s->n_layers; l++)
        for (size_t h = 0; h < s->n_heads; h++) {
            const size_t i = l * s->n_heads + h;
            json_array_append_new(heads, json_pack("{s:I, s:I, s:f, s:f, s:f, s:b}", "layer", (json_int_t)l, "head",
                                                   (json_int_t)h, "first", s->first[i], "first_window_sd",
                                                   s->first_sd[i], "top", s->top[i],
                                                   "sink", s->first[i] > ATTN_SINK_THRESHOLD));
            if (s->learned)
                json_object_set_new(json_array_get(heads, i), "learned_sink", json_real(s->learned[i]));
        }
    json_t *root = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:f, s:o}", "model",
                             r->model,
                             "weights", r->weights, "text", r->text, "first_token", (json_int_t)r->bos, "windows",
                             (json_int_t)r->opts.windows, "window_tokens", (json_int_t)r->opts.len, "from",
                             (json_int_t)r->opts.from, "queries_per_head", (json_int_t)s->queries,
                             "sink_threshold", ATTN_SINK_THRESHOLD, "top_share", ATTN_TOP_SHARE, "sink_heads",
                             (json_int_t)s->sink_heads, "even_first", s->even_first, "even_top", s->even_top,
                             "heads", heads);
    if (s->learned)
        json_object_set_new(root, "learned_sink_heads", json_integer((json_int_t)s->learned_heads));
    json_dumpf(root, f, JSON_INDENT(2));
    fputc('\n', f);
    json_decref(root);
}

void attn_report(FILE *f, OutFormat fmt, const AttnRun *r, const AttnStats *s)
{
    if (fmt == OUT_TABLE) {
        table(f, r, s);
        return;
    }
    if (fmt == OUT_JSON) {
        json(f, r, s);
        return;
    }
    fprintf(f, "layer\thead\tfirst\tfirst_window_sd\ttop\tsink%s\n", s->learned ? "\tlearned_sink" : "");
    for (size_t l = 0; l < s->n_layers; l++)
        for (size_t h = 0; h < s->n_heads; h++) {
            const size_t i = l * s->n_heads + h;
            fprintf(f, "%zu\t%zu\t%.6f\t%.6f\t%.6f\t%d", l, h, s->first[i], s->first_sd[i], s->top[i],
                    s->first[i] > ATTN_SINK_THRESHOLD);
            if (s->learned)
                fprintf(f, "\t%.6f", s->learned[i]);
            fputc('\n', f);
        }
}
