/* main.c: kvscope's entry point: choose the subcommand, hand it the rest. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "util/tempfiles.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} Command;

static const Command commands[] = {
    { "view", cmd_view, "the interactive view (the default): step, rewind, play, compare caches" },
    { "run", cmd_run, "generate with and without a KV cache; per-step table and summary" },
    { "example", cmd_example, "the source document's worked example, step by step" },
    { "calc", cmd_calc, "KV cache memory of a model config (per token, per layer, total)" },
    { "dump", cmd_dump, "weights, cache and logits as .npy files, to check in NumPy" },
    { "lesson", cmd_lesson, "lessons whose every figure kvscope recomputes; quizzes; C exercises" },
    { "tokenize", cmd_tokenize, "what a tokenizer makes of a text, token by token; --learn learns a BPE" },
    { "train", cmd_train, "learn a model's weights from a text (a C trainer: backprop and AdamW)" },
    { "eval", cmd_eval, "how much a cache costs a model's predictions on a text (perplexity)" },
    { "serve", cmd_serve, "many requests over one page pool: continuous batching, preemption, prefix hits" },
    { "export", cmd_export, "write a model as a GGUF file (f32, f16, q8_0, q4_0) for llama.cpp or --weights" },
    { "bench", cmd_bench, "this machine's read bandwidth, then attention and matvec against it" },
    { "plot", cmd_plot, "the figures that teach the KV cache: data, gnuplot scripts, images" },
};

static void usage(FILE *f)
{
    fprintf(f, "kvscope %s: see what a transformer's KV cache does, step by step.\n\n"
               "usage: kvscope [COMMAND] [OPTIONS]\n\n"
               "With no command (or only options), kvscope opens the interactive view on the\n"
               "worked example (`kvscope view`); it needs a terminal.\n\n"
               "commands:\n",
            KVSCOPE_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`kvscope COMMAND --help` describes each command's options.\n"
               "Exit status: 0 success, 1 runtime error, 2 usage error.\n");
}

/* Everything a command printed reached standard output, or one line says it
 * did not and the status is 1 (a full disk, /dev/full, a closed pipe with
 * SIGPIPE ignored): data cut short is never a success. */
static int finish_stdout(int rc)
{
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int was = errno;
    if (fclose(stdout) != 0 && !bad) /* the last write can fail at the close (NFS) */
        bad = 1, was = errno;
    if (!bad)
        return rc;
    if (rc == EXIT_OK) { /* a command that failed has said why already */
        char msg[160];
        snprintf(msg, sizeof msg, "writing standard output: %s", was ? strerror(was) : "a write failed");
        cli_error_line(msg);
        rc = EXIT_RUNTIME;
    }
    return rc;
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv)
{
    return finish_stdout(dispatch(argc, argv));
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        char *args[] = { "view", NULL };
        return cmd_view(1, args);
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("kvscope %s\n", KVSCOPE_VERSION);
        return EXIT_OK;
    }
    if (cmd[0] == '-' && cmd[1] == '-') /* `kvscope --model small ...`: the view with options */
        return cmd_view(argc, argv);
    if (strcmp(cmd, "view") != 0) /* the view leaves the terminal's signals to curses */
        tempfiles_catch_signals();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    char msg[512];
    size_t at = (size_t)snprintf(msg, sizeof msg, "unknown command '%.200s' (commands:", cmd);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0] && at < sizeof msg; i++)
        at += (size_t)snprintf(msg + at, sizeof msg - at, "%s %s", i ? "," : "", commands[i].name);
    if (at < sizeof msg)
        snprintf(msg + at, sizeof msg - at, "; see `kvscope --help`)");
    cli_error_line(msg);
    return EXIT_USAGE;
}
