/* err.h: errors returned, never printed, below the app layer.
 *
 * A function that can fail takes an Err * last, fills it on failure and
 * returns -1 (or NULL); the caller decides whether to print. Passing a NULL
 * Err is allowed: the message is then dropped. */
#ifndef KVSCOPE_UTIL_ERR_H
#define KVSCOPE_UTIL_ERR_H

typedef enum {
    ERR_NONE = 0,
    ERR_USAGE,   /* the user's input is wrong: bad flag, spec, value (exit 2) */
    ERR_RUNTIME, /* the input is fine but the work failed: memory, file I/O (exit 1) */
} ErrKind;

typedef struct {
    ErrKind kind;
    char msg[512];
} Err;

/* Fill e (if not NULL) with a printf-style message; always returns -1 so a
 * caller can write `return err_set(e, ERR_USAGE, "...")`. */
int err_set(Err *e, ErrKind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix an existing message with more context: "ctx: old message". */
int err_wrap(Err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
