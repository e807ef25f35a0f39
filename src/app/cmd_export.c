/* cmd_export.c: `kvscope export --gguf OUT`: write a kvscope model (a
 * trained, synthetic or --shared one, or a loaded checkpoint) as a GGUF
 * `llama` file that llama.cpp and `--weights` read. model/gguf_export.c
 * decides the tensors; this file reads the options and reports. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/progress_line.h"
#include "model/checkpoint.h"
#include "util/outfile.h"

#define DEFAULT_MODEL "tiny"

typedef struct {
    ModelOpts mo;
    const char *out;
    Format fmt;
    int quiet;          /* --quiet: no progress line */
} ExportOpts;

static void help(void)
{
    printf("usage: kvscope export --gguf OUT [--type f32|f16|q8_0|q4_0] [MODEL OPTIONS]\n\n"
           "Write a model as a GGUF v3 file of architecture `llama` (metadata and tensors,\n"
           "aligned to 32 bytes), written to OUT.tmp and renamed, so a failed export leaves\n"
           "no half file. Norms stay f32; every matrix is written in --type, quantized by\n"
           "kvscope's own codecs (the q8_0/q4_0 bytes are the ones its caches store); a\n"
           "matrix whose rows are not whole 32-value blocks stays f32 (the summary counts\n"
           "them). Shared layers are written out once per layer.\n\n"
           "A model with a byte-level tokenizer (bytes, or a BPE such as kjv-bpe) carries\n"
           "it as llama.cpp's 'gpt2' vocabulary (pre-tokenizer 'gpt-2', no BOS added): tokens\n"
           "in GPT-2's byte alphabet, its merges in rank order, then <|endoftext|>, a control\n"
           "token llama.cpp takes as EOS and end of generation (one id more, its rows zeros,\n"
           "when the tokenizer fills the vocabulary). kvscope splits text as GPT-2's pattern\n"
           "does, as llama.cpp does for 'gpt-2'. The vocabulary\n"
           "a checkpoint carries (--weights: a GGUF's 'llama' one, a llama2.c tokenizer.bin)\n"
           "is written as GGUF's 'llama' model. A model on ids only carries the bytes (ids\n"
           "0..255 as the bytes, the rest unused), so llama.cpp loads every export.\n\n"
           "options:\n"
           "  --gguf OUT          the file to write\n"
           "  --type TYPE         matrices in f32 (default), f16, q8_0 or q4_0\n"
           "%s"
           "model (default %s):\n%s\n"
           "example: kvscope export --model tiny --gguf tiny-q8.gguf --type q8_0\n"
           "         kvscope run --weights tiny-q8.gguf --compare\n",
           progress_line_help, DEFAULT_MODEL, cli_model_help);
}

/* 1: --help; 0: options in o; -1: error in e. */
static int parse_options(int argc, char **argv, ExportOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },   { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },     { "shared", no_argument, 0, 0 },
        { "allow-nan", no_argument, 0, 0 },
        { "weights", required_argument, 0, 0 }, { "gguf", required_argument, 0, 0 },
        { "type", required_argument, 0, 0 },    { "help", no_argument, 0, 'h' },
        { "quiet", no_argument, 0, 0 },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "export", &name, e)) == CLI_OPTION) {
        int taken = cli_model_option(&o->mo, name, optarg, e);
        if (taken < 0)
            return -1;
        if (taken)
            continue;
        if (strcmp(name, "quiet") == 0) {
            o->quiet = 1;
        } else if (strcmp(name, "gguf") == 0) {
            if (!*optarg)
                return err_set(e, ERR_USAGE, "export: --gguf needs a file name");
            o->out = optarg;
        } else if (strcmp(name, "type") == 0) {
            if (format_parse(optarg, &o->fmt) < 0 ||
                (o->fmt != FMT_F32 && o->fmt != FMT_F16 && o->fmt != FMT_Q8_0 && o->fmt != FMT_Q4_0))
                return err_set(e, ERR_USAGE, "export: --type '%s'; GGUF tensors are f32, f16, q8_0 or q4_0", optarg);
        }
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (optind < argc)
        return err_set(e, ERR_USAGE, "export: unexpected argument '%s' (see `kvscope export --help`)", argv[optind]);
    if (!o->out)
        return err_set(e, ERR_USAGE, "export: --gguf OUT is required (see `kvscope export --help`)");
    char resolved[PATH_MAX];
    if (outfile_target(o->out, resolved, sizeof resolved, e) < 0) /* before the model is made */
        return err_wrap(e, "export: --gguf");
    return 0;
}

/* What the file carries of tok (NULL: none). */
static void print_tokenizer(const Tokenizer *tok)
{
    const int (*merges)[2];
    size_t n_merges;
    if (!tok) {
        printf("no tokenizer (under 256 ids: not even the bytes)\n");
        return;
    }
    const char *name = strcmp(tokenizer_name(tok), CHECKPOINT_TOKENIZER) ? tokenizer_name(tok) : "of the checkpoint";
    if (tokenizer_byte_level(tok, &merges, &n_merges))
        printf("tokenizer %s as 'gpt2' (%zu ids, %zu merges)\n", name, tokenizer_vocab(tok), n_merges);
    else
        printf("tokenizer %s as 'llama' (%zu tokens)\n", name, tokenizer_vocab(tok));
}

static void on_tensor(void *user, size_t done, size_t total)
{
    progress_line_count(user, done, total);
}

int cmd_export(int argc, char **argv)
{
    ExportOpts o = { .mo.model = DEFAULT_MODEL, .fmt = FMT_F32 };
    Err e = { 0 };
    int p = parse_options(argc, argv, &o, &e);
    if (p > 0) {
        help();
        return EXIT_OK;
    }
    if (p < 0)
        return cli_fail(&e);
    Model m;
    ExportInfo info;
    ProgressLine line;
    progress_line_init(&line, o.quiet);
    progress_line_begin(&line, "kvscope export: the model", NULL);
    if (setup_load_model(&o.mo, 0, &m, &e) < 0) {
        progress_line_end(&line);
        return cli_fail(&e);
    }
    Tokenizer *tok = NULL;
    int rc = setup_tokenizer(&m.cfg, &tok, &e);
    /* a model on ids alone carries the bytes: llama.cpp loads no file
     * without a tokenizer, and ids 0..255 read as bytes are one */
    if (rc == 0 && !tok && m.cfg.vocab >= 256)
        rc = tokenizer_open(&tok, "bytes", &e);
    /* the writer encodes from f32, so a stored matrix re-encodes to its own bytes */
    if (rc == 0)
        rc = model_dequantize(&m, &e);
    progress_line_begin(&line, "kvscope export", "tensor");
    if (rc == 0)
        rc = model_export_gguf(&m, tok, o.out, o.fmt, &info, on_tensor, &line, &e);
    progress_line_end(&line);
    if (rc == 0) {
        char size[32];
        printf("wrote %s: model %s (%s), %zu layers, %zu tensors, matrices in %s", o.out, m.cfg.name, m.source,
               m.cfg.n_layers, info.n_tensors, format_name(o.fmt));
        if (info.n_as_f32)
            printf(" (%zu kept in f32: rows not whole blocks)", info.n_as_f32);
        printf(", %s; ", human_bytes(size, sizeof size, (double)info.file_bytes));
        print_tokenizer(tok);
    }
    tokenizer_free(tok);
    model_free(&m);
    return rc < 0 ? cli_fail(&e) : EXIT_OK;
}
