/* lesson_exec.h: run the commands lessons name, and find the course.
 *
 * A check's command is a kvscope command line ("kvscope run --tokens 4 ...");
 * it runs as this very executable, without a shell, its output captured.
 * An exercise is compiled by the C compiler through /bin/sh (for the
 * `$(pkg-config ...)` in its command line). Paths shown to the learner are
 * relative to the current directory; absolute ones are only used inside. */
#ifndef KVSCOPE_COURSE_LESSON_EXEC_H
#define KVSCOPE_COURSE_LESSON_EXEC_H

#include <stddef.h>

#include "util/err.h"

typedef struct {
    char *out;   /* stdout, NUL-terminated (caller frees) */
    char *err;   /* stderr, NUL-terminated (caller frees) */
    int status;  /* exit status; 128 + signal when killed by one */
} ExecResult;

void exec_result_free(ExecResult *r);

/* Run `cmdline`, which must start with the word "kvscope", as this
 * executable. Quotes ('...' and "...") group words; no other shell syntax.
 * Returns 0 when it ran (whatever its status), -1 with e set when it could
 * not start or the line is malformed (ERR_USAGE). */
int exec_kvscope(const char *cmdline, ExecResult *r, Err *e);

/* Run a command through /bin/sh -c, stdout and stderr captured together in
 * r->out, with extra environment (NAME=VALUE, NULL-terminated, may be NULL). */
int exec_shell(const char *cmdline, char *const *env_extra, ExecResult *r, Err *e);

/* Split a command line into words (in place in buf, pointers into it).
 * Returns the number of words, or -1 with e set on an unterminated quote or
 * too many words. */
int exec_split(char *buf, char **argv, size_t cap, Err *e);

/* This executable's directory (absolute), into out. */
int exec_self_dir(char *out, size_t cap);

/* The course: the directory that holds manifest.json. $KVSCOPE_LESSONS,
 * else lessons/ beside or up to three levels above this executable, else
 * ./lessons. Fills dir (absolute) and returns 0, or -1 with e set. */
int exec_find_course(char *dir, size_t cap, Err *e);

/* `path` (absolute) as a user pastes it from the current directory:
 * relative, "lessons/exercises/window.c", "../lessons/...", when the two
 * share a directory below the root; else whole (an installed course seen
 * from a home directory: no "../../../usr/..."). A path that is not
 * absolute, or cannot be resolved, is copied as it is. */
void exec_display_path(const char *path, char *out, size_t cap);

/* Quote a word for /bin/sh ('...'), into out. */
void exec_sh_quote(const char *word, char *out, size_t cap);

#endif
