/* cmd_calc.c: `kvscope calc`, the KV cache memory of a model config.
 *
 * Every figure comes from model/memory.h, computed from the config and the
 * element format; this file only chooses what to show and writes the
 * formulas out with the config's numbers substituted. */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "kernels/format.h"
#include "model/config.h"
#include "model/memory.h"
#include "util/parse.h"
#include "util/sysmem.h"

#define CALC_DEFAULT_MODEL "llama-2-7b"
#define CALC_DEFAULT_ELEM FMT_F16

typedef struct {
    ModelOpts mo;
    size_t context; /* 0: the model's max_seq_len */
    size_t batch;
    Format elem;
    int elem_set;
    int all_formats;
    int list;
    OutFormat out;
} CalcOpts;

/* One format's figures: the model's own cache, its comparison (MHA
 * equivalent or MLA decompressed) and, with a sliding window, the ring. */
typedef struct {
    Format f;
    KvBytes own;
    KvBytes ref;    /* valid when the report has a reference shape */
    KvBytes window; /* valid when the window is shorter than the context */
} CalcRow;

typedef struct {
    Config cfg;
    size_t context, batch;
    size_t window_positions; /* positions a ring keeps; == context without a window */
    KvShape shape, ref_shape;
    int has_ref;
    CalcRow rows[FMT_COUNT];
    size_t n_rows;
    size_t machine_bytes; /* 0 when unknown */
} CalcReport;

/* --- small text helpers ---------------------------------------------------- */

/* Numbers with thousands separators; returned by value so that several can
 * sit in one printf: num(x).s lives until the end of the full expression. */
typedef struct {
    char s[32];
} Text32;

static Text32 num(size_t v)
{
    char raw[32];
    Text32 t;
    snprintf(raw, sizeof raw, "%zu", v);
    size_t len = strlen(raw), o = 0;
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            t.s[o++] = ',';
        t.s[o++] = raw[i];
    }
    t.s[o] = '\0';
    return t;
}

static Text32 human(size_t bytes)
{
    Text32 t;
    cli_bytes(t.s, sizeof t.s, (double)bytes);
    return t;
}

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

/* One row of `label` values in format f: "128 head_dim x 2 bytes" for plain
 * formats; for block formats the bytes of a row and how they add up. */
static void row_text(char *buf, size_t cap, Format f, size_t n, const char *label)
{
    size_t bv = format_block_values(f), bb = format_block_bytes(f), extra = format_row_extra(f);
    size_t blocks = (n + bv - 1) / bv;
    if (bv == 1 && extra == 0)
        snprintf(buf, cap, "%s x %zu bytes", label, bb);
    else if (extra == 0)
        snprintf(buf, cap, "%zu B per row of %s (%zu blocks of %zu values x %zu B)", format_row_bytes(f, n),
                 label, blocks, bv, bb);
    else
        snprintf(buf, cap, "%zu B per row of %s (%zu words of %zu values x %zu B + %zu B scale)",
                 format_row_bytes(f, n), label, blocks, bv, bb, extra);
}

/* The product behind one token's bytes, per layer (layers = 0) or over all
 * layers, with the config's numbers substituted. */
static void shape_formula(char *buf, size_t cap, const Config *c, const KvShape *s, Format f, size_t layers)
{
    char lay[48] = "", row[192], label[96];
    if (layers)
        snprintf(lay, sizeof lay, "%s layers x ", num(layers).s);
    switch (s->kind) {
    case KV_SHAPE_GQA:
    case KV_SHAPE_MHA:
        snprintf(label, sizeof label, "%zu head_dim", s->k_len);
        row_text(row, sizeof row, f, s->k_len, label);
        snprintf(buf, cap, "2 (K,V) x %s%zu KV heads%s x %s", lay, s->k_rows,
                 s->kind == KV_SHAPE_MHA ? " (= query heads)" : "", row);
        return;
    case KV_SHAPE_MLA_LATENT:
        snprintf(label, sizeof label, "(%zu kv_lora_rank + %zu qk_rope_dim)", c->kv_lora_rank, c->qk_rope_dim);
        row_text(row, sizeof row, f, s->k_len, label);
        snprintf(buf, cap, "%s%s", lay, row);
        return;
    case KV_SHAPE_MLA_DECOMPRESSED:
        if (format_block_values(f) == 1 && format_row_extra(f) == 0) {
            snprintf(buf, cap, "%s%zu heads x (%zu qk_nope_dim + %zu qk_rope_dim + %zu v_head_dim) x %zu bytes", lay,
                     s->k_rows, c->qk_nope_dim, c->qk_rope_dim, s->v_len, format_block_bytes(f));
        } else {
            char vrow[192];
            snprintf(label, sizeof label, "(%zu qk_nope_dim + %zu qk_rope_dim)", c->qk_nope_dim, c->qk_rope_dim);
            row_text(row, sizeof row, f, s->k_len, label);
            snprintf(label, sizeof label, "%zu v_head_dim", s->v_len);
            row_text(vrow, sizeof vrow, f, s->v_len, label);
            snprintf(buf, cap, "%s%zu heads x (K: %s + V: %s)", lay, s->k_rows, row, vrow);
        }
        return;
    }
    snprintf(buf, cap, "?");
}

/* --- options --------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: kvscope calc [--model NAME] [--context N] [--batch B] [--elem FORMAT | --all-formats]\n"
            "                    [--format table|tsv|json]\n"
            "       kvscope calc --list\n\n"
            "How many bytes a model's KV cache takes, computed from its config (data/models/NAME.ini).\n\n"
            "options:\n"
            "%s"
            "  --context N         tokens held per sequence (default: the model's max_seq_len)\n"
            "  --batch B           sequences cached side by side (default 1)\n"
            "  --elem FORMAT       how each value is stored: %s (default f16)\n"
            "  --all-formats       one row per format instead\n"
            "  --list              the models in data/models, one line each, with their shape\n"
            "  --format FMT        table (default), tsv or json\n"
            "  -h, --help          this text\n\n"
            "the figures:\n"
            "  per token per layer  what one token adds to one layer: its K and V rows\n"
            "                       = 2 (K,V) x n_kv_heads x row_bytes(head_dim)\n"
            "  per token            the same over every layer: x n_layers\n"
            "  per layer            one layer's cache at the context: per token per layer x context x batch\n"
            "  total                the whole cache: per token x context x batch\n"
            "  row_bytes(n)         n x 4 (f32), n x 2 (f16); q8_0 and q4_0: blocks of 32 values of\n"
            "                       34 and 18 bytes; int4 and fp4: 8 values per 4-byte word plus a\n"
            "                       2-byte fp16 scale per row. Rows round up to whole blocks or words.\n\n"
            "comparisons:\n"
            "  GQA (n_kv_heads < n_heads): the MHA equivalent, every query head with its own K,V\n"
            "                       (n_kv_heads = n_heads), and the ratio n_heads / n_kv_heads.\n"
            "  MLA (attention = mla): the cache holds one latent row per token per layer,\n"
            "                       kv_lora_rank + qk_rope_dim values (K and V are rebuilt from it);\n"
            "                       beside it the decompressed per-head equivalent,\n"
            "                       n_heads x (qk_nope_dim + qk_rope_dim + v_head_dim) values.\n"
            "  sliding window: a ring buffer keeps only the last sliding_window positions.\n"
            "A total beyond this machine's memory is noted, not refused: calc allocates nothing.\n\n"
            "examples:\n"
            "  kvscope calc --model llama-3-8b --context 8192\n"
            "  kvscope calc --model glm-mla --all-formats\n"
            "  kvscope calc --model llama-2-7b --batch 32 --format json\n",
            cli_model_help, format_names);
}

/* Returns 0 to go on, or 1 to stop with *code: after --help (0, usage
 * printed) or an error (2 or 1, its one line printed). */
static int parse_options(int argc, char **argv, CalcOpts *o, int *code)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 }, { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },   { "shared", no_argument, 0, 0 },
        { "context", required_argument, 0, 0 }, { "batch", required_argument, 0, 0 },
        { "elem", required_argument, 0, 0 },  { "all-formats", no_argument, 0, 0 },
        { "list", no_argument, 0, 0 },        { "format", required_argument, 0, 0 },
        { "help", no_argument, 0, 'h' },      { 0, 0, 0, 0 },
    };
    Err e = { 0 };
    opterr = 0;
    optind = 1;
    int c, idx;
    while ((c = getopt_long(argc, argv, ":h", longopts, &idx)) != -1) {
        if (c == 'h') {
            usage(stdout);
            *code = EXIT_OK;
            return 1;
        }
        if (c == ':') {
            *code = cli_usage("calc", "option '%s' needs a value", argv[optind - 1]);
            return 1;
        }
        if (c == '?') {
            if (optopt)
                *code = cli_usage("calc", "unknown option '-%c'", optopt);
            else
                *code = cli_usage("calc", "unknown option '%s'", argv[optind - 1]);
            return 1;
        }
        const char *name = longopts[idx].name;
        int taken = cli_model_option(&o->mo, name, optarg, &e);
        if (taken < 0) {
            *code = cli_fail(&e);
            return 1;
        }
        if (taken)
            continue;
        int rc = 0;
        if (strcmp(name, "context") == 0) {
            rc = parse_size(optarg, "--context", &o->context, &e);
        } else if (strcmp(name, "batch") == 0) {
            rc = parse_size(optarg, "--batch", &o->batch, &e);
        } else if (strcmp(name, "elem") == 0) {
            if (format_parse(optarg, &o->elem) < 0)
                rc = err_set(&e, ERR_USAGE, "--elem: '%s' is not one of %s", optarg, format_names);
            o->elem_set = 1;
        } else if (strcmp(name, "all-formats") == 0) {
            o->all_formats = 1;
        } else if (strcmp(name, "list") == 0) {
            o->list = 1;
        } else if (strcmp(name, "format") == 0) {
            rc = cli_parse_format(optarg, &o->out, &e);
        }
        if (rc < 0) {
            *code = cli_fail(&e);
            return 1;
        }
    }
    if (optind < argc) {
        *code = cli_usage("calc", "unexpected argument '%s'", argv[optind]);
        return 1;
    }
    if (o->elem_set && o->all_formats) {
        *code = cli_usage("calc", "--elem and --all-formats exclude each other");
        return 1;
    }
    return 0;
}

/* --- computing ------------------------------------------------------------- */

static int calc_row(const CalcReport *r, Format f, CalcRow *row, Err *e)
{
    row->f = f;
    if (memory_bytes(&r->cfg, &r->shape, f, r->context, r->batch, &row->own, e) < 0)
        return -1;
    if (r->has_ref && memory_bytes(&r->cfg, &r->ref_shape, f, r->context, r->batch, &row->ref, e) < 0)
        return -1;
    if (r->window_positions < r->context &&
        memory_bytes(&r->cfg, &r->shape, f, r->window_positions, r->batch, &row->window, e) < 0)
        return -1;
    return 0;
}

static int calc_report(const CalcOpts *o, CalcReport *r, Err *e)
{
    memset(r, 0, sizeof *r);
    if (cli_load_config(&o->mo, &r->cfg, e) < 0)
        return -1;
    r->context = o->context ? o->context : r->cfg.max_seq_len;
    r->batch = o->batch ? o->batch : 1;
    r->window_positions = memory_cached_positions(&r->cfg, r->context);
    r->shape = memory_shape(&r->cfg);
    r->has_ref = memory_shape_reference(&r->cfg, &r->ref_shape) == 0;
    r->machine_bytes = sysmem_physical_bytes();
    if (o->all_formats) {
        for (int f = 0; f < FMT_COUNT; f++)
            if (calc_row(r, (Format)f, &r->rows[r->n_rows++], e) < 0)
                return -1;
    } else if (calc_row(r, o->elem_set ? o->elem : CALC_DEFAULT_ELEM, &r->rows[r->n_rows++], e) < 0) {
        return -1;
    }
    return 0;
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
               num(c->max_seq_len).s);
        return;
    }
    const char *kind = c->n_kv_heads == c->n_heads ? "MHA" : c->n_kv_heads == 1 ? "MQA" : "GQA";
    printf("model    %s: %s, %zu layers, %zu query heads, %zu KV heads, head_dim %zu, max_seq_len %s",
           c->name, kind, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, num(c->max_seq_len).s);
    if (c->sliding_window)
        printf(", sliding_window %s", num(c->sliding_window).s);
    printf("\n");
}

static void print_notes(const CalcReport *r)
{
    if (r->context > r->cfg.max_seq_len)
        printf("note: context %s is beyond the model's max_seq_len %s\n", num(r->context).s,
               num(r->cfg.max_seq_len).s);
}

static void print_table_one(const CalcReport *r)
{
    const Config *c = &r->cfg;
    const CalcRow *row = &r->rows[0];
    const KvBytes *b = &row->own;
    char formula[512];
    const char *seqs = r->batch == 1 ? "sequence" : "sequences";

    print_config_line(c);
    printf("cache    %s, context %s tokens, batch %s; %s values per token per layer%s\n\n", format_name(row->f),
           num(r->context).s, num(r->batch).s, num(memory_shape_values(&r->shape)).s,
           r->shape.kind == KV_SHAPE_MLA_LATENT ? " (the latent)" : "");

    printf("  per token per layer  %22s B  %12s\n", num(b->token_layer).s, human(b->token_layer).s);
    printf("  per token            %22s B  %12s\n", num(b->token).s, human(b->token).s);
    printf("  per layer            %22s B  %12s\n", num(b->layer).s, human(b->layer).s);
    printf("  total                %22s B  %12s\n\n", num(b->total).s, human(b->total).s);

    printf("how:\n");
    shape_formula(formula, sizeof formula, c, &r->shape, row->f, 0);
    printf("  per token per layer = %s = %s B\n", formula, num(b->token_layer).s);
    shape_formula(formula, sizeof formula, c, &r->shape, row->f, c->n_layers);
    printf("  per token = %s = %s B\n", formula, num(b->token).s);
    printf("  per layer = %s B x %s tokens x %s %s = %s B\n", num(b->token_layer).s, num(r->context).s,
           num(r->batch).s, seqs, num(b->layer).s);
    printf("  total     = %s B x %s tokens x %s %s = %s B (%s)\n", num(b->token).s, num(r->context).s,
           num(r->batch).s, seqs, num(b->total).s, human(b->total).s);

    if (r->has_ref) {
        const KvBytes *rb = &row->ref;
        printf("\n");
        if (r->ref_shape.kind == KV_SHAPE_MHA) {
            printf("MHA equivalent (every query head with its own K,V head):\n");
        } else {
            printf("decompressed equivalent (the per-head K,V a standard cache would hold):\n");
        }
        shape_formula(formula, sizeof formula, c, &r->ref_shape, row->f, 0);
        printf("  per token per layer = %s = %s B\n", formula, num(rb->token_layer).s);
        printf("  per token = %s B, total = %s B (%s)\n", num(rb->token).s, num(rb->total).s, human(rb->total).s);
        if (r->ref_shape.kind == KV_SHAPE_MHA)
            printf("  GQA stores %.2fx less: %zu query heads share %zu KV heads, %zu to a group\n",
                   ratio(rb->total, b->total), c->n_heads, c->n_kv_heads, c->n_heads / c->n_kv_heads);
        else
            printf("  the latent stores %.2fx less: %s values per token per layer instead of %s\n",
                   ratio(rb->total, b->total), num(memory_shape_values(&r->shape)).s,
                   num(memory_shape_values(&r->ref_shape)).s);
    } else if (c->attention == ATTN_GQA) {
        printf("\nMHA: each of the %zu query heads has its own K,V head; a GQA model with g query heads\n"
               "per KV head would store 1/g of this.\n", c->n_heads);
    }

    if (r->window_positions < r->context) {
        const KvBytes *w = &row->window;
        printf("\nsliding window %s: a ring buffer keeps only the last %s positions per sequence:\n",
               num(c->sliding_window).s, num(r->window_positions).s);
        printf("  total = %s B x %s tokens x %s %s = %s B (%s)\n", num(w->token).s, num(r->window_positions).s,
               num(r->batch).s, seqs, num(w->total).s, human(w->total).s);
    }

    if (!fits(r, b->total) || r->context > c->max_seq_len)
        printf("\n");
    if (!fits(r, b->total))
        printf("note: the total, %s, is more than this machine's memory (%s)\n", human(b->total).s,
               human(r->machine_bytes).s);
    print_notes(r);
}

static void print_table_all(const CalcReport *r)
{
    print_config_line(&r->cfg);
    printf("cache    context %s tokens, batch %s; %s values per token per layer%s\n\n", num(r->context).s,
           num(r->batch).s, num(memory_shape_values(&r->shape)).s,
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
        printf("  %-6s %15s %15s %19s %23s %12s %7.2fx\n", format_name(r->rows[i].f), num(b->token_layer).s,
               num(b->token).s, num(b->layer).s, num(b->total).s, human(b->total).s,
               f16 ? ratio(f16->own.total, b->total) : 0.0);
        any_over |= !fits(r, b->total);
    }
    printf("\n  B/token/layer = ");
    char formula[512];
    shape_formula(formula, sizeof formula, &r->cfg, &r->shape, FMT_F16, 0);
    printf("%s for f16; other formats change the bytes of a row\n", formula);
    printf("  total = B/token x %s tokens x %s %s; vs f16 = f16 total / this total\n", num(r->context).s,
           num(r->batch).s, r->batch == 1 ? "sequence" : "sequences");
    if (r->has_ref && f16)
        printf("  %s: %s B total in f16 (%.2fx the f16 row above)\n",
               r->ref_shape.kind == KV_SHAPE_MHA ? "MHA equivalent" : "decompressed equivalent",
               num(f16->ref.total).s, ratio(f16->ref.total, f16->own.total));
    if (r->window_positions < r->context && f16)
        printf("  sliding window %s: a ring keeps %s B in f16\n", num(r->cfg.sliding_window).s,
               num(f16->window.total).s);
    if (any_over) {
        printf("\nnote: beyond this machine's memory (%s):", human(r->machine_bytes).s);
        for (size_t i = 0; i < r->n_rows; i++)
            if (!fits(r, r->rows[i].own.total))
                printf(" %s", format_name(r->rows[i].f));
        printf("\n");
    }
    print_notes(r);
}

/* --- tsv ------------------------------------------------------------------- */

static void print_tsv(const CalcReport *r)
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
        if (r->has_ref)
            printf("%s\t%zu\t%.4f\t", shape_kind_name(r->ref_shape.kind), row->ref.total,
                   ratio(row->ref.total, row->own.total));
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

/* jansson integers are long long; a byte count beyond that becomes a real. */
static json_t *jsize(size_t v)
{
    return v <= (size_t)LLONG_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

static json_t *json_bytes(const KvBytes *b)
{
    return json_pack("{s:o, s:o, s:o, s:o}", "bytes_per_token_layer", jsize(b->token_layer), "bytes_per_token",
                     jsize(b->token), "bytes_per_layer", jsize(b->layer), "bytes_total", jsize(b->total));
}

static json_t *json_shape(const KvShape *s)
{
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "kind", shape_kind_name(s->kind), "k_rows", jsize(s->k_rows),
                     "k_len", jsize(s->k_len), "v_rows", jsize(s->v_rows), "v_len", jsize(s->v_len),
                     "values_per_token_layer", jsize(memory_shape_values(s)));
}

static json_t *json_config(const Config *c)
{
    json_t *m = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "name", c->name, "attention",
                          c->attention == ATTN_MLA ? "mla" : "gqa", "d_model", jsize(c->d_model), "n_layers",
                          jsize(c->n_layers), "n_heads", jsize(c->n_heads), "n_kv_heads", jsize(c->n_kv_heads),
                          "head_dim", jsize(c->head_dim), "ffn_dim", jsize(c->ffn_dim), "vocab", jsize(c->vocab),
                          "max_seq_len", jsize(c->max_seq_len), "sliding_window", jsize(c->sliding_window));
    if (m && c->attention == ATTN_MLA) {
        json_object_set_new(m, "kv_lora_rank", jsize(c->kv_lora_rank));
        json_object_set_new(m, "qk_rope_dim", jsize(c->qk_rope_dim));
        json_object_set_new(m, "qk_nope_dim", jsize(c->qk_nope_dim));
        json_object_set_new(m, "v_head_dim", jsize(c->v_head_dim));
    }
    return m;
}

static int print_json(const CalcReport *r, Err *e)
{
    json_t *root = json_object(), *rows = json_array();
    if (!root || !rows) {
        json_decref(root);
        json_decref(rows);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    json_object_set_new(root, "model", json_config(&r->cfg));
    json_object_set_new(root, "context", jsize(r->context));
    json_object_set_new(root, "batch", jsize(r->batch));
    json_object_set_new(root, "cached_positions", jsize(r->window_positions));
    json_object_set_new(root, "shape", json_shape(&r->shape));
    json_object_set_new(root, "reference_shape", r->has_ref ? json_shape(&r->ref_shape) : json_null());
    json_object_set_new(root, "machine_memory_bytes", r->machine_bytes ? jsize(r->machine_bytes) : json_null());
    for (size_t i = 0; i < r->n_rows; i++) {
        const CalcRow *row = &r->rows[i];
        char formula[512];
        shape_formula(formula, sizeof formula, &r->cfg, &r->shape, row->f, r->cfg.n_layers);
        json_t *o = json_pack("{s:s}", "format", format_name(row->f)), *own = json_bytes(&row->own);
        if (!o || !own) {
            json_decref(o);
            json_decref(own);
            continue;
        }
        json_object_update(o, own);
        json_decref(own);
        json_object_set_new(o, "formula_per_token", json_string(formula));
        json_object_set_new(o, "fits_in_memory", json_boolean(fits(r, row->own.total)));
        if (r->has_ref) {
            json_t *ref = json_bytes(&row->ref);
            if (ref)
                json_object_set_new(ref, "ratio", json_real(ratio(row->ref.total, row->own.total)));
            json_object_set_new(o, "reference", ref ? ref : json_null());
        }
        if (r->window_positions < r->context)
            json_object_set_new(o, "window_bytes_total", jsize(row->window.total));
        json_array_append_new(rows, o);
    }
    json_object_set_new(root, "formats", rows);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text)
        return err_set(e, ERR_RUNTIME, "out of memory");
    printf("%s\n", text);
    free(text);
    return 0;
}

/* --- --list ---------------------------------------------------------------- */

static int print_list(const CalcOpts *o, Err *e)
{
    char names[4096];
    config_list(names, sizeof names);
    if (!names[0])
        return err_set(e, ERR_RUNTIME, "no models found in data/models (is KVSCOPE_DATA right?)");
    json_t *arr = o->out == OUT_JSON ? json_array() : NULL;
    if (o->out == OUT_JSON && !arr)
        return err_set(e, ERR_RUNTIME, "out of memory");
    if (o->out == OUT_TABLE)
        printf("%-18s %-4s %6s %7s %8s %8s %11s %14s  %s\n", "model", "attn", "layers", "heads", "KV heads",
               "head_dim", "max_seq_len", "f16 B/token", "f16 total at max_seq_len");
    else if (o->out == OUT_TSV)
        printf("model\tattention\tn_layers\tn_heads\tn_kv_heads\thead_dim\tmax_seq_len\tsliding_window\t"
               "f16_bytes_per_token\tf16_bytes_total\n");
    char *save = NULL;
    for (char *name = strtok_r(names, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        Config c;
        Err le = { 0 };
        KvBytes b;
        KvShape s;
        if (config_load(&c, name, &le) < 0 || config_validate(&c, &le) < 0) {
            if (o->out == OUT_TABLE)
                printf("%-18s (cannot read: %s)\n", name, le.msg);
            else if (arr)
                json_array_append_new(arr, json_pack("{s:s, s:s}", "name", name, "error", le.msg));
            continue;
        }
        s = memory_shape(&c);
        if (memory_bytes(&c, &s, FMT_F16, c.max_seq_len, 1, &b, &le) < 0)
            memset(&b, 0, sizeof b);
        const char *attn = c.attention == ATTN_MLA ? "mla" : "gqa";
        if (o->out == OUT_TABLE) {
            printf("%-18s %-4s %6zu %7zu %8zu %8zu %11s %14s  %s\n", name, c.attention == ATTN_MLA ? "MLA"
                   : c.n_kv_heads == c.n_heads ? "MHA" : "GQA", c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim,
                   num(c.max_seq_len).s, num(b.token).s, human(b.total).s);
        } else if (o->out == OUT_TSV) {
            printf("%s\t%s\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\n", name, attn, c.n_layers, c.n_heads,
                   c.n_kv_heads, c.head_dim, c.max_seq_len, c.sliding_window, b.token, b.total);
        } else {
            json_t *m = json_config(&c);
            if (m) {
                json_object_set_new(m, "f16_bytes_per_token", jsize(b.token));
                json_object_set_new(m, "f16_bytes_total", jsize(b.total));
                json_array_append_new(arr, m);
            }
        }
    }
    if (arr) {
        char *text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(arr);
        if (!text)
            return err_set(e, ERR_RUNTIME, "out of memory");
        printf("%s\n", text);
        free(text);
    } else if (o->out == OUT_TABLE) {
        printf("\nMLA models list the decompressed per-head shape; their cache is the latent "
               "(see `kvscope calc --model NAME`).\n");
    }
    return 0;
}

/* --- the command ----------------------------------------------------------- */

int cmd_calc(int argc, char **argv)
{
    CalcOpts o;
    memset(&o, 0, sizeof o);
    o.mo.model = CALC_DEFAULT_MODEL;
    o.out = OUT_TABLE;
    o.elem = CALC_DEFAULT_ELEM;

    int code = EXIT_OK;
    if (parse_options(argc, argv, &o, &code))
        return code;

    Err e = { 0 };
    if (o.list)
        return print_list(&o, &e) < 0 ? cli_fail(&e) : EXIT_OK;

    CalcReport r;
    if (calc_report(&o, &r, &e) < 0)
        return cli_fail(&e);
    switch (o.out) {
    case OUT_TABLE:
        if (r.n_rows == 1)
            print_table_one(&r);
        else
            print_table_all(&r);
        break;
    case OUT_TSV:
        print_tsv(&r);
        break;
    case OUT_JSON:
        if (print_json(&r, &e) < 0)
            return cli_fail(&e);
        break;
    }
    return EXIT_OK;
}
