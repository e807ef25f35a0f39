/* calc_report.c: `kvscope calc`'s report as a table, tsv or json.
 *
 * Every figure comes from model/memory.h (cmd_calc.c computes them); this
 * file only chooses what to show; calc_text.c spells out the numbers and
 * the formulas with the config's numbers substituted. */
#include "report/calc_report.h"

#include <jansson.h>
#include <stdio.h>

#include "report/calc_text.h"

static const char *shape_kind_name(KvShapeKind k)
{
    switch (k) {
    case KV_SHAPE_GQA:
        return "gqa";
    case KV_SHAPE_MHA:
        return "mha";
    case KV_SHAPE_MLA_LATENT:
        return "mla_latent";
    case KV_SHAPE_MLA_DECOMPRESSED:
        return "mla_decompressed";
    }
    return "?";
}

static int fits(const CalcReport *r, size_t bytes)
{
    return r->machine_bytes == 0 || bytes <= r->machine_bytes;
}

static double ratio(size_t num_bytes, size_t den_bytes)
{
    return den_bytes ? (double)num_bytes / (double)den_bytes : 0.0;
}

/* --- table ----------------------------------------------------------------- */

static void print_config_line(const Config *c)
{
    if (c->attention == ATTN_MLA) {
        printf("model    %s: MLA, %zu layers, %zu heads, kv_lora_rank %zu, qk_rope_dim %zu, "
               "qk_nope_dim %zu, v_head_dim %zu, max_seq_len %s\n",
               c->name, c->n_layers, c->n_heads, c->kv_lora_rank, c->qk_rope_dim, c->qk_nope_dim, c->v_head_dim,
               calc_num(c->max_seq_len).s);
        return;
    }
    const char *kind = c->n_kv_heads == c->n_heads ? "MHA" : c->n_kv_heads == 1 ? "MQA" : "GQA";
    printf("model    %s: %s, %zu layers, %zu query heads, %zu KV heads, head_dim %zu, max_seq_len %s",
           c->name, kind, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, calc_num(c->max_seq_len).s);
    if (c->sliding_window)
        printf(", sliding_window %s", calc_num(c->sliding_window).s);
    printf("\n");
}

static void print_notes(const CalcReport *r)
{
    if (r->context > r->cfg.max_seq_len)
        printf("note: context %s is beyond the model's max_seq_len %s\n", calc_num(r->context).s,
               calc_num(r->cfg.max_seq_len).s);
}

static const char *sequences(size_t batch)
{
    return batch == 1 ? "sequence" : "sequences";
}

/* The four figures of the one row, then how each is computed. */
static void print_one_figures(const CalcReport *r, const CalcRow *row)
{
    const Config *c = &r->cfg;
    const KvBytes *b = &row->own;
    const char *seqs = sequences(r->batch);
    char formula[512];

    printf("  per token per layer  %22s B  %12s\n", calc_num(b->token_layer).s, calc_human(b->token_layer).s);
    printf("  per token            %22s B  %12s\n", calc_num(b->token).s, calc_human(b->token).s);
    printf("  per layer            %22s B  %12s\n", calc_num(b->layer).s, calc_human(b->layer).s);
    printf("  total                %22s B  %12s\n\n", calc_num(b->total).s, calc_human(b->total).s);

    printf("how:\n");
    calc_shape_formula(formula, sizeof formula, c, &r->shape, row->f, 0);
    printf("  per token per layer = %s = %s B\n", formula, calc_num(b->token_layer).s);
    calc_shape_formula(formula, sizeof formula, c, &r->shape, row->f, c->n_layers);
    printf("  per token = %s = %s B\n", formula, calc_num(b->token).s);
    printf("  per layer = %s B x %s tokens x %s %s = %s B\n", calc_num(b->token_layer).s, calc_num(r->context).s,
           calc_num(r->batch).s, seqs, calc_num(b->layer).s);
    printf("  total     = %s B x %s tokens x %s %s = %s B (%s)\n", calc_num(b->token).s, calc_num(r->context).s,
           calc_num(r->batch).s, seqs, calc_num(b->total).s, calc_human(b->total).s);
}

/* The comparison: the MHA equivalent or the MLA decompressed shape; for an
 * MHA model, what GQA would save instead. */
static void print_one_reference(const CalcReport *r, const CalcRow *row)
{
    const Config *c = &r->cfg;
    const KvBytes *b = &row->own, *rb = &row->ref;
    char formula[512];

    if (!r->has_ref) {
        if (c->attention == ATTN_GQA)
            printf("\nMHA: each of the %zu query heads has its own K,V head; a GQA model with g query heads\n"
                   "per KV head would store 1/g of this.\n", c->n_heads);
        return;
    }
    printf("\n");
    if (r->ref_shape.kind == KV_SHAPE_MHA) {
        printf("MHA equivalent (every query head with its own K,V head):\n");
    } else {
        printf("decompressed equivalent (the per-head K,V a standard cache would hold):\n");
    }
    calc_shape_formula(formula, sizeof formula, c, &r->ref_shape, row->f, 0);
    if (!row->ref_counted) {
        printf("  per token per layer = %s; its total passes 2^64 B, more than kvscope counts\n", formula);
        return;
    }
    printf("  per token per layer = %s = %s B\n", formula, calc_num(rb->token_layer).s);
    printf("  per token = %s B, total = %s B (%s)\n", calc_num(rb->token).s, calc_num(rb->total).s,
           calc_human(rb->total).s);
    if (r->ref_shape.kind == KV_SHAPE_MHA)
        printf("  GQA stores %.2fx less: %zu query heads share %zu KV heads, %zu to a group\n",
               ratio(rb->total, b->total), c->n_heads, c->n_kv_heads, c->n_heads / c->n_kv_heads);
    else
        printf("  the latent stores %.2fx less: %s values per token per layer instead of %s\n",
               ratio(rb->total, b->total), calc_num(memory_shape_values(&r->shape)).s,
               calc_num(memory_shape_values(&r->ref_shape)).s);
}

static void print_table_one(const CalcReport *r)
{
    const Config *c = &r->cfg;
    const CalcRow *row = &r->rows[0];
    const KvBytes *b = &row->own;

    print_config_line(c);
    printf("cache    %s, context %s tokens, batch %s; %s values per token per layer%s\n\n", format_name(row->f),
           calc_num(r->context).s, calc_num(r->batch).s, calc_num(memory_shape_values(&r->shape)).s,
           r->shape.kind == KV_SHAPE_MLA_LATENT ? " (the latent)" : "");
    print_one_figures(r, row);
    print_one_reference(r, row);

    if (r->window_positions < r->context) {
        const KvBytes *w = &row->window;
        printf("\nsliding window %s: a ring buffer keeps only the last %s positions per sequence:\n",
               calc_num(c->sliding_window).s, calc_num(r->window_positions).s);
        printf("  total = %s B x %s tokens x %s %s = %s B (%s)\n", calc_num(w->token).s,
               calc_num(r->window_positions).s, calc_num(r->batch).s, sequences(r->batch), calc_num(w->total).s,
               calc_human(w->total).s);
    }

    if (!fits(r, b->total) || r->context > c->max_seq_len)
        printf("\n");
    if (!fits(r, b->total))
        printf("note: the total, %s, is more than this machine's memory (%s)\n", calc_human(b->total).s,
               calc_human(r->machine_bytes).s);
    print_notes(r);
}

/* Under the one-line-per-format table: how the columns are computed, the
 * comparison and the ring in f16, and the formats beyond this machine. */
static void print_all_footer(const CalcReport *r, const CalcRow *f16, int any_over)
{
    printf("\n  B/token/layer = ");
    char formula[512];
    calc_shape_formula(formula, sizeof formula, &r->cfg, &r->shape, FMT_F16, 0);
    printf("%s for f16; other formats change the bytes of a row\n", formula);
    printf("  total = B/token x %s tokens x %s %s; vs f16 = f16 total / this total\n", calc_num(r->context).s,
           calc_num(r->batch).s, sequences(r->batch));
    if (r->has_ref && f16 && !f16->ref_counted)
        printf("  %s: more than 2^64 B in f16, more than kvscope counts\n",
               r->ref_shape.kind == KV_SHAPE_MHA ? "MHA equivalent" : "decompressed equivalent");
    else if (r->has_ref && f16)
        printf("  %s: %s B total in f16 (%.2fx the f16 row above)\n",
               r->ref_shape.kind == KV_SHAPE_MHA ? "MHA equivalent" : "decompressed equivalent",
               calc_num(f16->ref.total).s, ratio(f16->ref.total, f16->own.total));
    if (r->window_positions < r->context && f16)
        printf("  sliding window %s: a ring keeps %s B in f16\n", calc_num(r->cfg.sliding_window).s,
               calc_num(f16->window.total).s);
    if (r->n_uncounted) {
        printf("\nnote: not counted, their totals pass 2^64 B:");
        for (size_t i = 0; i < r->n_uncounted; i++)
            printf(" %s", format_name(r->uncounted[i]));
        printf("\n");
    }
    if (any_over) {
        printf("\nnote: beyond this machine's memory (%s):", calc_human(r->machine_bytes).s);
        for (size_t i = 0; i < r->n_rows; i++)
            if (!fits(r, r->rows[i].own.total))
                printf(" %s", format_name(r->rows[i].f));
        printf("\n");
    }
    print_notes(r);
}

static void print_table_all(const CalcReport *r)
{
    print_config_line(&r->cfg);
    printf("cache    context %s tokens, batch %s; %s values per token per layer%s\n\n", calc_num(r->context).s,
           calc_num(r->batch).s, calc_num(memory_shape_values(&r->shape)).s,
           r->shape.kind == KV_SHAPE_MLA_LATENT ? " (the latent)" : "");
    const CalcRow *f16 = NULL;
    for (size_t i = 0; i < r->n_rows; i++)
        if (r->rows[i].f == FMT_F16)
            f16 = &r->rows[i];
    printf("  %-6s %15s %15s %19s %23s %12s %8s\n", "format", "B/token/layer", "B/token", "B/layer", "B total",
           "total", "vs f16");
    int any_over = 0;
    for (size_t i = 0; i < r->n_rows; i++) {
        const KvBytes *b = &r->rows[i].own;
        printf("  %-6s %15s %15s %19s %23s %12s %7.2fx\n", format_name(r->rows[i].f), calc_num(b->token_layer).s,
               calc_num(b->token).s, calc_num(b->layer).s, calc_num(b->total).s, calc_human(b->total).s,
               f16 ? ratio(f16->own.total, b->total) : 0.0);
        any_over |= !fits(r, b->total);
    }
    print_all_footer(r, f16, any_over);
}

void calc_print_table(const CalcReport *r)
{
    if (r->n_rows == 1 && !r->n_uncounted)
        print_table_one(r);
    else
        print_table_all(r);
}

/* --- tsv ------------------------------------------------------------------- */

void calc_print_tsv(const CalcReport *r)
{
    const Config *c = &r->cfg;
    printf("model\tattention\tn_layers\tn_heads\tn_kv_heads\thead_dim\tcontext\tbatch\tformat\t"
           "values_per_token_layer\tbytes_per_token_layer\tbytes_per_token\tbytes_per_layer\tbytes_total\t"
           "reference\treference_bytes_total\treference_ratio\twindow_bytes_total\tfits_in_memory\n");
    for (size_t i = 0; i < r->n_rows; i++) {
        const CalcRow *row = &r->rows[i];
        printf("%s\t%s\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%s\t%zu\t%zu\t%zu\t%zu\t%zu\t", c->name,
               c->attention == ATTN_MLA ? "mla" : "gqa", c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim,
               r->context, r->batch, format_name(row->f), memory_shape_values(&r->shape), row->own.token_layer,
               row->own.token, row->own.layer, row->own.total);
        if (r->has_ref && row->ref_counted)
            printf("%s\t%zu\t%.4f\t", shape_kind_name(r->ref_shape.kind), row->ref.total,
                   ratio(row->ref.total, row->own.total));
        else if (r->has_ref)
            printf("%s\t-\t-\t", shape_kind_name(r->ref_shape.kind));
        else
            printf("-\t-\t-\t");
        if (r->window_positions < r->context)
            printf("%zu\t", row->window.total);
        else
            printf("-\t");
        printf("%s\n", fits(r, row->own.total) ? "yes" : "no");
    }
}

/* --- json ------------------------------------------------------------------ */

static json_t *json_bytes(const KvBytes *b)
{
    return json_pack("{s:o, s:o, s:o, s:o}", "bytes_per_token_layer", calc_json_size(b->token_layer),
                     "bytes_per_token", calc_json_size(b->token), "bytes_per_layer", calc_json_size(b->layer),
                     "bytes_total", calc_json_size(b->total));
}

static json_t *json_shape(const KvShape *s)
{
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "kind", shape_kind_name(s->kind), "k_rows",
                     calc_json_size(s->k_rows), "k_len", calc_json_size(s->k_len), "v_rows",
                     calc_json_size(s->v_rows), "v_len", calc_json_size(s->v_len), "values_per_token_layer",
                     calc_json_size(memory_shape_values(s)));
}

/* One format's figures, the formula and the comparisons, as an object;
 * NULL when out of memory. */
static json_t *json_row(const CalcReport *r, const CalcRow *row)
{
    char formula[512];
    calc_shape_formula(formula, sizeof formula, &r->cfg, &r->shape, row->f, r->cfg.n_layers);
    json_t *o = json_pack("{s:s}", "format", format_name(row->f)), *own = json_bytes(&row->own);
    if (!o || !own) {
        json_decref(o);
        json_decref(own);
        return NULL;
    }
    json_object_update(o, own);
    json_decref(own);
    json_object_set_new(o, "formula_per_token", json_string(formula));
    json_object_set_new(o, "fits_in_memory", json_boolean(fits(r, row->own.total)));
    if (r->has_ref && !row->ref_counted) {
        json_object_set_new(o, "reference", json_null());
        json_object_set_new(o, "reference_too_large_to_count", json_true());
    } else if (r->has_ref) {
        json_t *ref = json_bytes(&row->ref);
        if (ref)
            json_object_set_new(ref, "ratio", json_real(ratio(row->ref.total, row->own.total)));
        json_object_set_new(o, "reference", ref ? ref : json_null());
    }
    if (r->window_positions < r->context)
        json_object_set_new(o, "window_bytes_total", calc_json_size(row->window.total));
    return o;
}

int calc_print_json(const CalcReport *r, Err *e)
{
    json_t *root = json_object(), *rows = json_array();
    if (!root || !rows) {
        json_decref(root);
        json_decref(rows);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    json_object_set_new(root, "model", calc_json_config(&r->cfg));
    json_object_set_new(root, "context", calc_json_size(r->context));
    json_object_set_new(root, "batch", calc_json_size(r->batch));
    json_object_set_new(root, "cached_positions", calc_json_size(r->window_positions));
    json_object_set_new(root, "shape", json_shape(&r->shape));
    json_object_set_new(root, "reference_shape", r->has_ref ? json_shape(&r->ref_shape) : json_null());
    json_object_set_new(root, "machine_memory_bytes",
                        r->machine_bytes ? calc_json_size(r->machine_bytes) : json_null());
    json_t *uncounted = json_array();
    for (size_t i = 0; i < r->n_uncounted; i++)
        json_array_append_new(uncounted, json_string(format_name(r->uncounted[i])));
    json_object_set_new(root, "not_counted", uncounted);
    for (size_t i = 0; i < r->n_rows; i++) {
        json_t *o = json_row(r, &r->rows[i]);
        if (o)
            json_array_append_new(rows, o);
    }
    json_object_set_new(root, "formats", rows);
    return calc_json_print(root, e);
}
