/* lesson_run.h: run what a lesson asks the engine: its check blocks, the
 * computation behind a quiz answer, and the build and run of an exercise.
 * Nothing here prints; outcomes carry what the caller shows. */
#ifndef KVSCOPE_COURSE_LESSON_RUN_H
#define KVSCOPE_COURSE_LESSON_RUN_H

#include <stddef.h>

#include "course/lesson_course.h"
#include "course/lesson_doc.h"
#include "util/err.h"

typedef struct {
    int pass;
    int have_value;      /* the command ran and the value was read */
    double actual;
    char actual_text[64];   /* actual at the precision of the expect ("3.88") */
    char problem[512];   /* why there is no value: the command failed, the path matched nothing... */
} CheckOutcome;

/* Forget the remembered output of cmd, so that the next check runs it
 * afresh (a measured figure, tried again). */
void run_forget(const char *cmd);

/* Run a check block's command, read its value, compare with its expect.
 * Returns -1 (e set, ERR_USAGE) only when the block itself is malformed
 * (bad expect, tolerance or expression); a failing command is a failed
 * check, described in o->problem. */
int run_check(const CheckSpec *c, CheckOutcome *o, Err *e);

/* Compute the answer to a quiz question by running kvscope. Numeric
 * questions set *value; choice questions set *choice (an index into
 * q->choices) and *value (its value). `how` receives the command(s), for the
 * learner. Fails (ERR_RUNTIME) when a command fails, or (choice) when no
 * single choice has the extreme value. */
int run_quiz_answer(const QuizQuestion *q, double *value, int *choice, char *how, size_t how_cap, Err *e);

/* Does a learner's typed answer match? (numbers: the question's tolerance;
 * choices: the name or its letter a, b, c ...). */
int quiz_answer_matches(const QuizQuestion *q, const char *typed, double value, int choice);

/* The number a typed answer begins with ("15,150", "52.4x", "275 rows")
 * into *v: 0, or -1 when it begins with none. */
int quiz_answer_number(const char *typed, double *v);

typedef struct {
    int compiled;
    int passed;
    char *output;          /* compiler messages, or the checker's output (caller frees) */
    char build_cmd[2048];  /* the build as the learner would type it, relative paths */
} ExerciseOutcome;

/* Compile `learner_file` (a path as given) with the exercise's checker and
 * the library, run it, and report. Returns -1 (e set) only when nothing
 * could be tried (no compiler, no library, the file does not exist). */
int run_exercise(const Course *c, const Exercise *x, const char *learner_file, ExerciseOutcome *o, Err *e);
void exercise_outcome_free(ExerciseOutcome *o);

#endif
