/* state_dir.h: the user's state folder, where kvscope keeps what it learns
 * about the learner and the machine (never in the repository):
 *
 *   $XDG_STATE_HOME/kvscope/NAME   (XDG_STATE_HOME must be absolute: the
 *                                   XDG rule ignores a relative one)
 *   ~/.local/state/kvscope/NAME    (otherwise, HOME absolute)
 *
 * Files there: `progress` (lessons, course/lesson_progress.h) and `roofs`
 * (the machine's roofs, sim/roofs.h). */
#ifndef KVSCOPE_UTIL_STATE_DIR_H
#define KVSCOPE_UTIL_STATE_DIR_H

#include <stddef.h>

/* The path of file `name` in the state folder into out (cap bytes); 0, or
 * -1 with out "" when neither variable is an absolute path (or it does not
 * fit). */
int state_dir_file(const char *name, char *out, size_t cap);

/* Create the folders above file path `file` (mkdir -p, mode 0700); 0, or
 * -1 with errno set. */
int state_dir_make(const char *file);

#endif
