/* app/: the commands. main() picks one; each cmd_*.c parses its words,
 * calls the rooms below (report, plot, course, sim and the engine) and
 * prints. This is the only layer that prints errors and decides exit codes;
 * the interactive view's screens live beside it in ui/.
 *
 * cli.h: what every subcommand shares: exit codes, error lines, the option
 * loop and the words of the model and prompt options (sim/setup.h). */
#ifndef KVSCOPE_APP_CLI_H
#define KVSCOPE_APP_CLI_H

#include "kernels/kernels.h"
#include "model/generate.h"
#include "sim/setup.h"
#include "util/err.h"
#include "util/human.h"

#include "util/version.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Print "kvscope: <msg>" to stderr, its control bytes escaped (util/escape.h):
 * a message quotes what the user typed, which must not drive the terminal. */
void cli_error_line(const char *msg);
/* Print e's message as an error line; return the exit code for e's kind. */
int cli_fail(const Err *e);
/* Print a usage error line with a pointer to --help; returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

/* Help text lines for the model options, for each command's --help. */
extern const char cli_model_help[];
extern const char cli_int_dot_help[]; /* --int-dot, for the commands that take it */
extern const char cli_threads_help[]; /* --threads, for the commands whose passes run side by side */

/* Take one model option (--model, --set, --isa, --shared) if opt is one;
 * returns 1 when taken, 0 when opt is not a model option, -1 on error. */
int cli_model_option(ModelOpts *mo, const char *opt, const char *arg, Err *e);

extern const char cli_prompt_help[];
/* Take --prompt, --prompt-len, --batch, --prompt-seed: 1 taken, 0 not, -1 error. */
int cli_prompt_option(PromptOpts *po, const char *opt, const char *arg, Err *e);

/* Take one generation option (--tokens, --chunk, --temperature, --top-k,
 * --sample-seed) into go, or --attention into attend: 1 taken, 0 not, -1
 * error. */
int cli_generation_option(GenOptions *go, AttendAlgo *attend, const char *opt, const char *arg, Err *e);

#endif
