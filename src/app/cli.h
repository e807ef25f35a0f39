/* cli.h: what every subcommand shares: exit codes, error lines, the model
 * options (--model, --set, --isa) and output formats. The app layer is the
 * only one that prints errors and decides exit codes. */
#ifndef KVSCOPE_APP_CLI_H
#define KVSCOPE_APP_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "util/err.h"

#define KVSCOPE_VERSION "0.1.0"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* A numeric macro's value as a string literal, for help text that must say
 * what the engine uses (CLI_STR(ATTEND_TILE) -> "1024"). */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

typedef enum { OUT_TABLE, OUT_TSV, OUT_JSON } OutFormat;

/* Print "kvscope: <message>" to stderr; return the exit code for e's kind. */
int cli_fail(const Err *e);
/* Print a usage error line with a pointer to --help; returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int cli_parse_format(const char *text, OutFormat *out, Err *e);

/* Long options of `kvscope <cmd>`, one at a time: getopt_long over longopts,
 * which maps --help to 'h'. Call cli_options_begin() before the first.
 * cli_next_option returns CLI_OPTION with *name set (its value in optarg),
 * CLI_HELP, CLI_DONE at the first argument that is not an option (optind
 * indexes it), or -1 with e set: an unknown option or one missing its value. */
struct option;
enum { CLI_DONE = 0, CLI_OPTION = 1, CLI_HELP = 2 };
void cli_options_begin(void);
int cli_next_option(int argc, char **argv, const struct option *longopts, const char *cmd, const char **name,
                    Err *e);

/* The options that choose and shape a model. */
typedef struct {
    const char *model;  /* name in data/models, or an .ini path; default set by the command */
    const char *isa;    /* kernels: ref, auto (NULL = auto) */
    const char *sets[32];
    size_t n_sets;
    int shared;         /* --shared: one set of layer weights for all layers, vocab capped */
} ModelOpts;

/* Help text lines for the model options, for each command's --help. */
extern const char cli_model_help[];

/* Take one model option (--model, --set, --isa, --shared) if opt is one;
 * returns 1 when taken, 0 when opt is not a model option, -1 on error. */
int cli_model_option(ModelOpts *mo, const char *opt, const char *arg, Err *e);

/* Load and validate the config the options name (with --set applied). */
int cli_load_config(const ModelOpts *mo, Config *cfg, Err *e);

/* Fail (ERR_USAGE) when `bytes` of `what` exceed this machine's memory. */
int cli_check_memory(size_t bytes, const char *what, Err *e);

/* Config, memory check (weights + extra_bytes) and weights, in one go. */
int cli_load_model(const ModelOpts *mo, size_t extra_bytes, Model *m, Err *e);

/* Parse "1,2,3" into ids (at most cap); each must be a whole number. */
int cli_parse_tokens(const char *text, int *ids, size_t cap, size_t *n, Err *e);

/* The prompt options: explicit ids ("1,2,3", or "1,2;3,4" for a batch of
 * two), or a length of seeded random ids (a different prompt per sequence). */
typedef struct {
    const char *ids;    /* --prompt */
    size_t len;         /* --prompt-len (used when ids is NULL) */
    size_t batch;       /* --batch; with ids, a single prompt is repeated */
    uint64_t seed;      /* --prompt-seed */
} PromptOpts;

extern const char cli_prompt_help[];
/* Take --prompt, --prompt-len, --batch, --prompt-seed: 1 taken, 0 not, -1 error. */
int cli_prompt_option(PromptOpts *po, const char *opt, const char *arg, Err *e);

/* Build the prompts: *out is [*batch][*len] ids below cfg->vocab (caller frees). */
int cli_make_prompt(const PromptOpts *po, const Config *cfg, int **out, size_t *batch, size_t *len, Err *e);

/* Human-readable bytes ("1.50 MiB") into buf. */
const char *cli_bytes(char *buf, size_t cap, double bytes);

#endif
