/* cmd_tokenize.c: `kvscope tokenize`: what a tokenizer makes of a text (or
 * ids), token by token; and `--learn`, which learns a BPE's merges. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/progress_line.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "report/out_format.h"
#include "sim/setup.h"
#include "text/bpe.h"
#include "text/tokenizer.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/outfile.h"
#include "util/parse.h"

#define DEFAULT_TOKENIZER "kjv-bpe"
#define MAX_TEXT_BYTES ((size_t)64 << 20)

typedef struct {
    const char *tokenizer, *model, *weights, *ids, *text_file, *out;
    int learn;
    int quiet;          /* --quiet: no progress line (--learn) */
    size_t vocab;
    OutFormat fmt;
} TokOpts;

static void help(void)
{
    printf("usage: kvscope tokenize [OPTIONS] TEXT       (- reads standard input)\n"
           "       kvscope tokenize --ids 1,2,3 [OPTIONS]\n"
           "       kvscope tokenize --learn --text FILE --vocab N --out FILE\n\n"
           "Show what a tokenizer makes of a text: each token's id, its bytes and its piece\n"
           "(a space inside a piece shown as \u2423, control bytes escaped), then the count and\n"
           "the bytes per token. With --ids, the text those ids stand for.\n\n"
           "options:\n"
           "  --tokenizer NAME    bytes, a merges file in data/tokenizer/ (default " DEFAULT_TOKENIZER "),\n"
           "                      or a path to one\n"
           "  --model NAME        the tokenizer that model names instead\n"
           "  --weights PATH      the tokenizer a checkpoint carries (GGUF 'llama' or 'gpt2', also\n"
           "                      a GGUF of the vocabulary alone; llama2.c's tokenizer.bin beside it)\n"
           "  --ids IDS           decode these ids (comma-separated) instead of encoding\n"
           "  --format F          table (default), tsv (a row per token) or json\n"
           "  --learn             learn a byte-level BPE from --text: merges of the most frequent\n"
           "                      adjacent pair inside words, until --vocab ids; written to --out\n"
           "  --text FILE         the training text of --learn\n"
           "  --vocab N           ids of the learnt BPE, 256 (the bytes) to %d\n"
           "  --out FILE          where --learn writes the merges\n"
           "%s\n"
           "example: kvscope tokenize 'In the beginning God created the heaven'\n",
           BPE_MAX_VOCAB, progress_line_help);
}

static int parse_options(int argc, char **argv, TokOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "tokenizer", required_argument, 0, 0 }, { "model", required_argument, 0, 0 },
        { "ids", required_argument, 0, 0 },       { "format", required_argument, 0, 0 },
        { "learn", no_argument, 0, 0 },           { "text", required_argument, 0, 0 },
        { "vocab", required_argument, 0, 0 },     { "out", required_argument, 0, 0 },
        { "weights", required_argument, 0, 0 },   { "help", no_argument, 0, 'h' },
        { "quiet", no_argument, 0, 0 },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "tokenize", &name, e)) == CLI_OPTION) {
        int rc = 0;
        if (strcmp(name, "tokenizer") == 0)
            o->tokenizer = optarg;
        else if (strcmp(name, "model") == 0)
            o->model = optarg;
        else if (strcmp(name, "weights") == 0)
            o->weights = optarg;
        else if (strcmp(name, "ids") == 0)
            o->ids = optarg;
        else if (strcmp(name, "format") == 0)
            rc = out_format_parse(optarg, &o->fmt, e);
        else if (strcmp(name, "learn") == 0)
            o->learn = 1;
        else if (strcmp(name, "quiet") == 0)
            o->quiet = 1;
        else if (strcmp(name, "text") == 0)
            o->text_file = optarg;
        else if (strcmp(name, "vocab") == 0)
            rc = parse_size(optarg, "--vocab", &o->vocab, e);
        else if (strcmp(name, "out") == 0)
            o->out = optarg;
        if (rc < 0)
            return -1;
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (o->learn) {
        if (!o->text_file || !o->vocab || !o->out)
            return err_set(e, ERR_USAGE, "tokenize --learn needs --text FILE, --vocab N and --out FILE");
        if (optind < argc)
            return err_set(e, ERR_USAGE, "tokenize --learn: unexpected argument '%s'", argv[optind]);
        return 0;
    }
    if (!!o->tokenizer + !!o->model + !!o->weights > 1)
        return err_set(e, ERR_USAGE, "tokenize: one of --tokenizer, --model and --weights");
    if (o->ids && optind < argc)
        return err_set(e, ERR_USAGE, "tokenize: --ids or a TEXT, not both");
    if (!o->ids && optind + 1 != argc)
        return err_set(e, ERR_USAGE, "tokenize: one TEXT (or - for standard input) expected (see `kvscope tokenize "
                       "--help`)");
    return 0;
}

static int open_tokenizer(const TokOpts *o, Tokenizer **t, Err *e)
{
    if (!o->model && !o->weights)
        return tokenizer_open(t, o->tokenizer ? o->tokenizer : DEFAULT_TOKENIZER, e);
    Config cfg;
    if (o->model ? config_load(&cfg, o->model, e) < 0 : config_from_checkpoint(&cfg, o->weights, e) < 0) {
        /* a GGUF of a vocabulary alone is no model, but its tokenizer reads */
        Err alone = { 0 };
        return o->weights && checkpoint_vocab_tokenizer(o->weights, t, &alone) == 0 ? 0 : -1;
    }
    if (!cfg.tokenizer[0])
        return err_set(e, ERR_USAGE, "model '%s' has no tokenizer: its tokens are ids%s%s", cfg.name,
                       cfg.tokenizer_note[0] ? "; " : "", cfg.tokenizer_note);
    return setup_tokenizer(&cfg, t, e);
}

/* "1,2,3" into ids below the tokenizer's vocabulary. */
static int parse_ids(const char *text, const Tokenizer *t, int **ids, size_t *n, Err *e)
{
    size_t cap = strlen(text) / 2 + 1;
    *ids = malloc(cap * sizeof **ids);
    *n = 0;
    if (!*ids)
        return err_set(e, ERR_RUNTIME, "out of memory");
    for (const char *p = text; *p;) {
        char buf[32];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof buf)
            return err_set(e, ERR_USAGE, "--ids: '%s' is not a comma-separated list of ids", text);
        memcpy(buf, p, len);
        buf[len] = '\0';
        size_t v;
        if (parse_size0(buf, "--ids", &v, e) < 0)
            return -1;
        if (v >= tokenizer_vocab(t))
            return err_set(e, ERR_USAGE, "--ids: %zu is outside tokenizer '%s''s ids 0..%zu", v, tokenizer_name(t),
                           tokenizer_vocab(t) - 1);
        (*ids)[(*n)++] = (int)v;
        p += len + (p[len] == ',');
    }
    if (*n == 0)
        return err_set(e, ERR_USAGE, "--ids: no ids given");
    return 0;
}

static void print_tokens(const TokOpts *o, const Tokenizer *t, const int *ids, size_t n)
{
    size_t bytes = 0;
    char shown[256];
    json_t *arr = o->fmt == OUT_JSON ? json_array() : NULL;
    if (o->fmt == OUT_TABLE)
        printf("%5s %6s %5s  %s\n", "#", "id", "bytes", "piece");
    else if (o->fmt == OUT_TSV)
        printf("index\tid\tbytes\tpiece\n");
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const unsigned char *piece = tokenizer_piece(t, ids[i], &len);
        tokenizer_show(piece, len, 1, shown, sizeof shown);
        bytes += len;
        if (o->fmt == OUT_TABLE)
            printf("%5zu %6d %5zu  %s\n", i, ids[i], len, shown);
        else if (o->fmt == OUT_TSV)
            printf("%zu\t%d\t%zu\t%s\n", i, ids[i], len, shown);
        else
            json_array_append_new(arr, json_pack("{s:i, s:I, s:s}", "id", ids[i], "bytes", (json_int_t)len, "piece",
                                                 shown));
    }
    if (o->fmt == OUT_TABLE)
        printf("tokenizer %s (%zu ids): %zu bytes in %zu tokens, %.2f bytes per token\n", tokenizer_name(t),
               tokenizer_vocab(t), bytes, n, n ? (double)bytes / (double)n : 0.0);
    if (arr) {
        json_t *root = json_pack("{s:s, s:I, s:I, s:I, s:o}", "tokenizer", tokenizer_name(t), "vocab",
                                 (json_int_t)tokenizer_vocab(t), "bytes", (json_int_t)bytes, "tokens",
                                 (json_int_t)n, "pieces", arr);
        json_dumpf(root, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(root);
    }
}

static void learn_progress(void *user, size_t done, size_t total)
{
    progress_line_count(user, done, total);
}

static int learn(const TokOpts *o, Err *e)
{
    char *text, resolved[PATH_MAX];
    size_t len;
    if (outfile_target(o->out, resolved, sizeof resolved, e) < 0) /* before the learning */
        return err_wrap(e, "--out");
    if (files_read_text(o->text_file, MAX_TEXT_BYTES, &text, &len, e) < 0)
        return -1;
    Bpe b;
    double t0 = clock_seconds();
    ProgressLine line;
    progress_line_init(&line, o->quiet);
    progress_line_begin(&line, "kvscope tokenize --learn", "merge");
    int rc = bpe_learn(&b, (const unsigned char *)text, len, o->vocab, learn_progress, &line, e);
    progress_line_end(&line);
    if (rc == 0)
        rc = bpe_save(&b, o->out, e);
    if (rc == 0)
        printf("learnt %zu merges from %zu bytes of %s in %.2f s: a vocabulary of %zu ids, written to %s\n",
               b.vocab - 256, len, o->text_file, clock_seconds() - t0, b.vocab, o->out);
    bpe_free(&b);
    free(text);
    return rc;
}

/* 1 when standard input ends before its first byte (an empty text is
 * tokenized into no ids; files_read_text refuses empty files) */
static int stdin_is_empty(void)
{
    int c = getc(stdin);
    return c == EOF || ungetc(c, stdin) == EOF;
}

int cmd_tokenize(int argc, char **argv)
{
    TokOpts o = { 0 };
    Err e = { 0 };
    int pr = parse_options(argc, argv, &o, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);
    if (o.learn)
        return learn(&o, &e) < 0 ? cli_fail(&e) : EXIT_OK;
    Tokenizer *t;
    if (open_tokenizer(&o, &t, &e) < 0)
        return cli_fail(&e);
    int *ids = NULL;
    size_t n = 0;
    char *text = NULL;
    size_t len = 0;
    int rc;
    if (o.ids)
        rc = parse_ids(o.ids, t, &ids, &n, &e);
    else if (strcmp(argv[optind], "-") == 0 && !stdin_is_empty())
        rc = files_read_text("-", MAX_TEXT_BYTES, &text, &len, &e);
    else if (strcmp(argv[optind], "-") == 0 || !*argv[optind])
        rc = (text = strdup("")) ? 0 : err_set(&e, ERR_RUNTIME, "out of memory"); /* no ids, as llama.cpp */
    else
        rc = (text = strdup(argv[optind])) ? (len = strlen(text), 0) : err_set(&e, ERR_RUNTIME, "out of memory");
    if (rc == 0 && text)
        rc = tokenizer_encode(t, text, len, &ids, &n, &e);
    if (rc == 0)
        print_tokens(&o, t, ids, n);
    free(ids);
    free(text);
    tokenizer_free(t);
    return rc < 0 ? cli_fail(&e) : EXIT_OK;
}
