/* lesson_lint.h: the course lint (`kvscope lesson lint`, run by
 * `make check-lessons`). From the manifest it proves that:
 *   - ids (lessons, checks, quiz questions, exercises) are unique, titles
 *     and hints are not empty, every written lesson's file exists and is
 *     numbered as its place in the course, no lesson file is left out of
 *     the manifest, and a lesson that waits has no file yet;
 *   - every check block passes and the figure rule holds (lesson_doc.h);
 *   - every quiz answer can be computed (a choice question has one answer);
 *   - every exercise starter compiles and fails its checker, and every
 *     reference solution compiles and passes it.
 * A waiting lesson whose probe command already succeeds is reported as a
 * note (its engine part has landed; the lesson can be written). */
#ifndef KVSCOPE_COURSE_LESSON_LINT_H
#define KVSCOPE_COURSE_LESSON_LINT_H

#include <stdio.h>

#include "course/lesson_course.h"

/* What the lint tells as it goes (either function may be NULL): step
 * before each command it runs (a check, a quiz answer, an exercise's
 * build), naming it, with the commands done of all; clear before each line
 * it writes to out, so that a progress line drawn on the same terminal can
 * be taken off first. */
typedef struct {
    void (*step)(void *user, const char *what, size_t done, size_t total);
    void (*clear)(void *user);
    void *user;
} LintProgress;

/* Returns the number of problems found (0: the course is sound). progress
 * may be NULL. */
size_t lesson_lint(const Course *c, FILE *out, const LintProgress *progress);

#endif
