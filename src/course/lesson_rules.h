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
 *      or a top-level field named as an option or a --set key of the
 *      command line (`context` with `--context 8192`);
 *   4. its value is a number the command line already states, read back
 *      under its own name: the value equals a number the command gives to
 *      a key (`--context 8192`, `--set sliding_window=6`,
 *      `ring:window=8`), and the value expression reads a field of that
 *      name (`cache.window` expecting 8). A count that merely equals an
 *      input (8 beams holding 8 references) is the engine's, and allowed.
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

#endif
