/* lesson_progress.h: what the learner has done, kept in the user's state
 * directory, never in the repository:
 *
 *   $XDG_STATE_HOME/kvscope/progress     (XDG_STATE_HOME must be absolute)
 *   ~/.local/state/kvscope/progress      (otherwise)
 *
 * One line per fact, keyed by lesson id so renumbering keeps it:
 *   done ID              the lesson's checks (and exercise) passed
 *   quiz ID RIGHT TOTAL  the best quiz score so far */
#ifndef KVSCOPE_COURSE_LESSON_PROGRESS_H
#define KVSCOPE_COURSE_LESSON_PROGRESS_H

#include <limits.h>
#include <stddef.h>

#include "util/err.h"

#define PROGRESS_MAX 128

typedef struct {
    char id[64];
    int done;
    int quiz_right, quiz_total; /* total 0: never taken */
} ProgressEntry;

typedef struct {
    char path[PATH_MAX]; /* "" when there is no state directory */
    ProgressEntry e[PROGRESS_MAX];
    size_t n;
} Progress;

/* Read the progress file (a missing file is no progress, not an error). */
void progress_load(Progress *p);
/* The entry for lesson id (NULL when none). */
const ProgressEntry *progress_get(const Progress *p, const char *id);
void progress_mark_done(Progress *p, const char *id);
/* Keep the better of the stored score and this one. */
void progress_record_quiz(Progress *p, const char *id, int right, int total);
/* Write it back (creating the directory). ERR_RUNTIME when it cannot. */
int progress_save(const Progress *p, Err *e);

#endif
