/* lesson_quiz.h: a written lesson's quiz, asked on stdin and graded by
 * answers kvscope computes (course/lesson_run.h). */
#ifndef KVSCOPE_APP_LESSON_QUIZ_H
#define KVSCOPE_APP_LESSON_QUIZ_H

#include "course/lesson_course.h"

/* Ask every question of l (a written lesson), grade, record the score.
 * Returns the process exit code. */
int lesson_quiz(const Lesson *l);

#endif
