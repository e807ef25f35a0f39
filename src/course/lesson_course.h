/* course/: the lessons' engine behind `kvscope lesson`: the manifest, the
 * Markdown and its fenced checks, values and their rounding, quizzes,
 * exercises compiled against the library, progress and the course lint.
 * Checks run the kvscope binary itself, as a learner would, so this room
 * uses only util/; it returns errors and leaves the words to app/.
 *
 * lesson_course.h: the course manifest (lessons/manifest.json).
 *
 * One manifest drives the runner and the lint: it lists the lessons in the
 * order a learner takes them (a lesson's number is its place in the list),
 * each with its Markdown file, its quiz questions and its exercise, or, for
 * a lesson not written yet, the engine part it waits for. The format is
 * described in lessons/README.md. Strings point into the parsed JSON, which
 * the Course owns. */
#ifndef KVSCOPE_COURSE_LESSON_COURSE_H
#define KVSCOPE_COURSE_LESSON_COURSE_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

#include "util/err.h"

typedef struct {
    const char *id;
    const char *ask;
    const char *run;     /* a kvscope command; in a choice question it holds {choice} */
    const char *value;   /* expression over its output (lesson_value.h) */
    const char *tol;     /* "" = exact for integers, 1% otherwise */
    const char *unit;    /* shown after the answer prompt ("" when none) */
    const char *hint;
    const char *choices[8]; /* a choice question: the answer is the choice whose value is picked */
    size_t n_choices;
    const char *pick;    /* "max" or "min" */
} QuizQuestion;

typedef struct {
    int present;
    const char *id;
    const char *title;
    const char *starter;  /* relative to the course directory */
    const char *solution;
    const char *harness;  /* the checker's main(), compiled with the learner's file */
    const char *hint;
    /* Wrong solutions, each a usual mistake: the lint proves its check fails
     * and that the checker's output names the mistake (contains `says`). */
    const char *wrong[8], *wrong_says[8];
    size_t n_wrong;
} Exercise;

typedef struct {
    size_t number;        /* 1-based place in the course */
    const char *id;
    const char *title;
    const char *file;     /* NULL for a lesson that waits */
    const char *sources;  /* "teaching notes, Marlin design": the source documents it teaches */
    const char *waiting_for; /* the engine part a lesson not yet written waits for */
    const char *probe;    /* a kvscope command that succeeds once that part exists */
    QuizQuestion *quiz;
    size_t n_quiz;
    Exercise ex;
} Lesson;

typedef struct {
    char dir[PATH_MAX];   /* the course directory (absolute; never printed) */
    char root[PATH_MAX];  /* the repository: its parent */
    json_t *json;
    Lesson *lessons;
    size_t n;
} Course;

/* Find and load the course (lesson_exec.h: exec_find_course). Structural
 * problems (a missing field, a wrong type) fail here with ERR_RUNTIME; the
 * lint checks the rest. */
int course_load(Course *c, Err *e);
void course_free(Course *c);

/* A lesson by number ("3", "03") or id ("memory-math"); NULL when none
 * (e names the known ones, ERR_USAGE). */
const Lesson *course_find(const Course *c, const char *key, Err *e);

/* Absolute path of a course-relative file, into out. */
void course_path(const Course *c, const char *rel, char *out, size_t cap);

#endif
