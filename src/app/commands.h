/* commands.h: the subcommands; each takes argc/argv after its own name
 * (argv[0] is the command name) and returns the process exit code. */
#ifndef KVSCOPE_APP_COMMANDS_H
#define KVSCOPE_APP_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_example(int argc, char **argv);
int cmd_calc(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_lesson(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
