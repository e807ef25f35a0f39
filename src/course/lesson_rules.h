/* lesson_rules.h: what makes a check block worth running, beyond passing.
 *
 * A check proves a figure of the prose only when the engine computed it.
 * The lint (lesson_lint.c) refuses a check that could hardly fail:
 *
 *   1. its command is not an engine command: the subcommand must be one
 *      that computes (run, calc, bench, eval, example, dump, serve, train,
 *      tokenize), not `lesson` or `--help`, `--list`, `--version`;
 *   2. its value reads nothing: the expression has no path into the
 *      output (`8 * 1.4`);
 *   3. every path it reads echoes the input: a path under `model.` or
 *      `config.` (the configuration the command was handed, printed back),
 *      or under calc's `shape.`, `reference_shape.` or `cached_positions`
 *      (the same configuration rearranged: head_dim, the latent's widths,
 *      the smaller of context and window),
 *      or a top-level field named as an option or a --set key of the
 *      command line (`context` with `--context 8192`);
 *   4. its value is a number the command line already states, read back
 *      under its own name: the value equals a number the command gives to
 *      a key (`--context 8192`, `--set sliding_window=6`,
 *      `ring:window=8`), and the value expression reads a field of that
 *      name (`cache.window` expecting 8). A count that merely equals an
 *      input (8 beams holding 8 references) is the engine's, and allowed;
 *   6. its value doubles or halves another check's (below);
 *   7. its value reads back the model's configuration (below).
 *
 * And one that the tolerance hides from (the figure rule's other half):
 *
 *   5. a check that is not `measured` but has a `tol` still has to round to
 *      its figure as written, on the machine that runs the lint: the tol is
 *      there for the learner's machine (another processor sums floats in
 *      another order), not to let the prose state 0.00024 where the engine
 *      prints 0.00025.
 *
 * Nothing here runs a command or prints; each rule fills `why` (a sentence
 * for the lint's FAIL line) and returns 1 when the check breaks it. */
#ifndef KVSCOPE_COURSE_LESSON_RULES_H
#define KVSCOPE_COURSE_LESSON_RULES_H

#include <stddef.h>

#include "course/lesson_doc.h"

/* Rules 1-3, from the block alone. */
int rule_check_static(const CheckSpec *ck, char *why, size_t cap);

/* Rule 4: `actual` is the value the check computed. */
int rule_value_is_input(const CheckSpec *ck, double actual, char *why, size_t cap);

/* Rule 5: `actual` is the value the check computed (it passed its tol). */
int rule_rounds_as_written(const CheckSpec *ck, double actual, char *why, size_t cap);

/* 6. A value that only doubles or halves another check's of the same
 * lesson (same command, the same expression times or over 2): it passes
 * whenever that one does. */
int rule_halves_another(const CheckSpec *ck, const CheckSpec *other, char *why, size_t cap);

/* A number of the model's configuration, as `kvscope calc --model M`
 * prints it (max_seq_len 256). */
typedef struct {
    char name[48];
    double value;
} RuleConfigValue;

/* 7. A read-back of the configuration: the value reads one path and
 * equals a number of the model's configuration or the quotient of two
 * numbers of its command line (8,192 positions over pages of 128: 64
 * pages), or it converts one quantity into another (P * Q / R) and lands on
 * a configuration number (bytes reserved times positions over bytes used:
 * max_seq_len). Single-digit integers are left alone: small counts meet
 * small inputs by chance (2 tokens left in a chunk, 2 layers). `actual` is
 * the value the check computed. */
int rule_reads_back(const CheckSpec *ck, double actual, const RuleConfigValue *cfg, size_t n_cfg, char *why,
                    size_t cap);

#endif
