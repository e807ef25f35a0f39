#include "app/cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "util/escape.h"
#include "util/parse.h"

const char cli_model_help[] =
    "  --model NAME        model in data/models (or a path to an .ini); see `kvscope calc --list`\n"
    "  --set KEY=VALUE     override one config key (repeatable), e.g. --set n_layers=2\n"
    "  --shared            one set of layer weights for every layer, vocab capped at 4096:\n"
    "                      runs a real model's shape in little memory, same bytes per step\n"
    "  --isa ISA           kernels: auto (default: the best this CPU runs; KVSCOPE_ISA overrides) or\n"
    "                      one this build has: " KERNELS_BUILT "\n"
    "  --weights PATH      a GGUF or llama2.c checkpoint, or a kvscope weights file (.kvw, its\n"
    "                      tokenizer named in PATH.json beside it): its shape and weights instead\n"
    "                      of --model's\n"
    "  --allow-nan         load a checkpoint whose weights or block scales hold NaN or infinity\n"
    "                      (refused by default, naming the tensor: its logits would be NaN)\n";

const char cli_int_dot_help[] =
    "  --int-dot[=ROUND]   integer dots, as llama.cpp computes them, everywhere: a checkpoint's\n"
    "                      (--weights) q8_0 and q4_0 matrices against the activation rounded to\n"
    "                      q8_0 (the default without this flag too), and a q8_0, q4_0, int4 or\n"
    "                      fp4 cache's keys (+quant:k=...) against the query rounded to q8_0, and\n"
    "                      (flash) a q4_0, int4 or fp4 cache's values added with 16-bit integer\n"
    "                      weights (faster; the rounding changes the logits slightly). ROUND:\n"
    "                      even (the default: as llama.cpp's x86 CPU path, x * 127/absmax, ties\n"
    "                      to even) or ref (as ggml's reference quantizer, ties away from zero)\n"
    "  --int-dot=off       the exact path: the checkpoint's matrices and the cache's keys against\n"
    "                      the f32 activation, no rounding (slower)\n";

const char cli_threads_help[] =
    "  --threads N         threads for the caches' passes, each cache on one (default: the CPUs\n"
    "                      this process may use; 1: none besides this one); the figures are the\n"
    "                      same bytes for every N\n";

void cli_error_line(const char *msg)
{
    char safe[4 * sizeof ((Err *)0)->msg]; /* room for every byte escaped */
    fprintf(stderr, "kvscope: %s\n", escape_controls(safe, sizeof safe, msg));
}

int cli_fail(const Err *e)
{
    cli_error_line(e->msg);
    return e->kind == ERR_USAGE ? EXIT_USAGE : EXIT_RUNTIME;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    char msg[sizeof ((Err *)0)->msg];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n >= 0)
        snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (see `kvscope %s --help`)", cmd);
    cli_error_line(msg);
    return EXIT_USAGE;
}

void cli_options_begin(void)
{
    opterr = 0; /* the caller prints errors, once, in kvscope's words */
    optind = 1;
}

int cli_next_option(int argc, char **argv, const struct option *longopts, const char *cmd, const char **name,
                    Err *e)
{
    int idx;
    const int c = getopt_long(argc, argv, "h", longopts, &idx);
    if (c == -1)
        return CLI_DONE;
    if (c == 'h')
        return CLI_HELP;
    if (c == '?')
        return err_set(e, ERR_USAGE, "%s: unknown or incomplete option '%s' (see `kvscope %s --help`)", cmd,
                       argv[optind - 1], cmd);
    *name = longopts[idx].name;
    return CLI_OPTION;
}

int cli_model_option(ModelOpts *mo, const char *opt, const char *arg, Err *e)
{
    if (strcmp(opt, "model") == 0) {
        mo->model = arg;
    } else if (strcmp(opt, "isa") == 0) {
        mo->isa = arg;
    } else if (strcmp(opt, "weights") == 0) {
        mo->weights = arg;
    } else if (strcmp(opt, "shared") == 0) {
        mo->shared = 1;
    } else if (strcmp(opt, "allow-nan") == 0) {
        mo->allow_nan = 1;
    } else if (strcmp(opt, "int-dot") == 0) {
        if (!arg || strcmp(arg, "even") == 0)
            mo->int_dot = INT_DOT_EVEN;
        else if (strcmp(arg, "ref") == 0)
            mo->int_dot = INT_DOT_REF;
        else if (strcmp(arg, "off") == 0)
            mo->int_dot = INT_DOT_OFF;
        else
            return err_set(e, ERR_USAGE, "--int-dot=%s: 'even' (llama.cpp's x86 rounding), 'ref' (ggml's reference) "
                           "or 'off' (the exact path)", arg);
        mo->int_dot_set = 1;
    } else if (strcmp(opt, "set") == 0) {
        if (!strchr(arg, '='))
            return err_set(e, ERR_USAGE, "--set: '%s' is not KEY=VALUE", arg);
        if (mo->n_sets == sizeof mo->sets / sizeof mo->sets[0])
            return err_set(e, ERR_USAGE, "--set: at most %zu overrides", sizeof mo->sets / sizeof mo->sets[0]);
        mo->sets[mo->n_sets++] = arg;
    } else {
        return 0;
    }
    return 1;
}

const char cli_prompt_help[] =
    "  --prompt TEXT       the prompt as text, through the model's tokenizer (default, for\n"
    "                      a trained model: a verse of its held-out text that repeats itself)\n"
    "  --prompt-ids IDS    token ids instead, e.g. 0,1,2; a batch: 1,2,3;4,5,6 (equal lengths)\n"
    "  --prompt-len N      N random token ids per sequence instead (default 8, for a model\n"
    "                      with random weights)\n"
    "  --prompt-seed S     seed of those random ids (default 1; gsl mt19937)\n"
    "  --batch B           sequences generated together (default 1)\n";

int cli_prompt_option(PromptOpts *po, const char *opt, const char *arg, Err *e)
{
    if (strcmp(opt, "prompt") == 0) {
        po->text = arg;
        return 1;
    }
    if (strcmp(opt, "prompt-ids") == 0) {
        po->ids = arg;
        return 1;
    }
    if (strcmp(opt, "prompt-len") == 0)
        return parse_size(arg, "--prompt-len", &po->len, e) < 0 ? -1 : 1;
    if (strcmp(opt, "batch") == 0)
        return parse_size(arg, "--batch", &po->batch, e) < 0 ? -1 : 1;
    if (strcmp(opt, "prompt-seed") == 0) {
        unsigned long long v;
        if (parse_u64(arg, "--prompt-seed", &v, e) < 0)
            return -1;
        po->seed = v;
        return 1;
    }
    return 0;
}


int cli_generation_option(GenOptions *go, AttendAlgo *attend, const char *opt, const char *arg, Err *e)
{
    int rc = 0;
    if (strcmp(opt, "tokens") == 0) {
        rc = parse_size(arg, "--tokens", &go->n_generate, e);
    } else if (strcmp(opt, "chunk") == 0) {
        rc = parse_size(arg, "--chunk", &go->chunk, e);
    } else if (strcmp(opt, "temperature") == 0) {
        rc = parse_double(arg, "--temperature", &go->temperature, e);
        if (rc == 0 && go->temperature < 0)
            rc = err_set(e, ERR_USAGE, "--temperature: must be 0 (greedy) or more, got %s", arg);
    } else if (strcmp(opt, "top-k") == 0) {
        rc = parse_size(arg, "--top-k", &go->top_k, e);
    } else if (strcmp(opt, "sample-seed") == 0) {
        unsigned long long v;
        rc = parse_u64(arg, "--sample-seed", &v, e);
        go->sample_seed = v;
    } else if (strcmp(opt, "attention") == 0) {
        if (attend_algo_parse(arg, attend) < 0)
            rc = err_set(e, ERR_USAGE, "--attention: '%s' is not one of flash, naive, materialize", arg);
    } else {
        return 0;
    }
    return rc < 0 ? -1 : 1;
}
