/* cmd_calc.c: `kvscope calc`, the KV cache memory of a model config.
 *
 * Every figure comes from model/memory.h, computed from the config and the
 * element format; this file reads the options, fills a CalcReport and hands
 * it to calc_report.c (table, tsv, json) or runs calc_list.c (--list). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/calc_list.h"
#include "report/calc_report.h"
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
            "  --format FMT        table (default), tsv or json; json's byte counts are exact\n"
            "                      integers, even above 2^63 (read them as 64-bit unsigned or\n"
            "                      arbitrary-precision, not as doubles)\n"
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
            cli_model_help, format_row_names);
}

/* One long option into o: 0 when taken (or not calc's), -1 with e set. */
static int take_option(CalcOpts *o, const char *name, const char *arg, Err *e)
{
    int taken = cli_model_option(&o->mo, name, arg, e);
    if (taken)
        return taken < 0 ? -1 : 0;
    int rc = 0;
    if (strcmp(name, "context") == 0) {
        rc = parse_size(arg, "--context", &o->context, e);
    } else if (strcmp(name, "batch") == 0) {
        rc = parse_size(arg, "--batch", &o->batch, e);
    } else if (strcmp(name, "elem") == 0) {
        /* the code formats need per-channel scales a row count cannot give */
        if (format_parse(arg, &o->elem) < 0 || format_is_per_channel(o->elem))
            rc = err_set(e, ERR_USAGE, "--elem: '%s' is not one of %s", arg, format_row_names);
        o->elem_set = 1;
    } else if (strcmp(name, "all-formats") == 0) {
        o->all_formats = 1;
    } else if (strcmp(name, "list") == 0) {
        o->list = 1;
    } else if (strcmp(name, "format") == 0) {
        rc = out_format_parse(arg, &o->out, e);
    }
    return rc < 0 ? -1 : 0;
}

/* Returns 0 to go on, or 1 to stop with *code: after --help (0, usage
 * printed) or an error (2 or 1, its one line printed). */
static int parse_options(int argc, char **argv, CalcOpts *o, int *code)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 }, { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },   { "shared", no_argument, 0, 0 },
        { "allow-nan", no_argument, 0, 0 },
        { "weights", required_argument, 0, 0 },
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
        if (take_option(o, longopts[idx].name, optarg, &e) < 0) {
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
    /* the comparison may pass 2^64 bytes where the model's own cache does
     * not (an MHA equivalent is n_heads / n_kv_heads times larger): only
     * that figure is then left uncounted */
    Err ref_e = { 0 };
    row->ref_counted = r->has_ref && memory_bytes(&r->cfg, &r->ref_shape, f, r->context, r->batch, &row->ref,
                                                  &ref_e) == 0;
    if (r->window_positions < r->context &&
        memory_bytes(&r->cfg, &r->shape, f, r->window_positions, r->batch, &row->window, e) < 0)
        return -1;
    return 0;
}

static int calc_report(const CalcOpts *o, CalcReport *r, Err *e)
{
    memset(r, 0, sizeof *r);
    if (setup_load_config(&o->mo, &r->cfg, e) < 0)
        return -1;
    r->context = o->context ? o->context : r->cfg.max_seq_len;
    r->batch = o->batch ? o->batch : 1;
    r->window_positions = memory_cached_positions(&r->cfg, r->context);
    r->shape = memory_shape(&r->cfg);
    r->has_ref = memory_shape_reference(&r->cfg, &r->ref_shape) == 0;
    r->machine_bytes = sysmem_physical_bytes();
    if (!o->all_formats) {
        Format f = o->elem_set ? o->elem : CALC_DEFAULT_ELEM;
        if (calc_row(r, f, &r->rows[r->n_rows++], e) < 0)
            return err_wrap(e, "%s", format_name(f));
        return 0;
    }
    /* every format whose total a size_t counts; the others are named */
    for (int f = 0; f < FMT_ROW_COUNT; f++) {
        if (calc_row(r, (Format)f, &r->rows[r->n_rows], e) == 0)
            r->n_rows++;
        else
            r->uncounted[r->n_uncounted++] = (Format)f;
    }
    return r->n_rows ? 0 : -1;
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
        return calc_print_list(o.out, &e) < 0 ? cli_fail(&e) : EXIT_OK;

    CalcReport r;
    if (calc_report(&o, &r, &e) < 0)
        return cli_fail(&e);
    switch (o.out) {
    case OUT_TABLE:
        calc_print_table(&r);
        break;
    case OUT_TSV:
        calc_print_tsv(&r);
        break;
    case OUT_JSON:
        if (calc_print_json(&r, &e) < 0)
            return cli_fail(&e);
        break;
    }
    return EXIT_OK;
}
