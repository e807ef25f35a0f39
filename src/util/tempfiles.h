/* tempfiles.h: the temporaries a command has made, and what to do with each
 * if the command is killed by a signal before it is done (Ctrl-C, SIGTERM,
 * a closed terminal or pipe), so that it leaves what was there before.
 *
 * The layer that makes a temporary registers it and forgets it once it is
 * renamed or removed; the app catches the signals. On a signal the handler
 * undoes the registered entries, newest first, with async-signal-safe calls
 * only (unlink, rmdir, rename), then dies of the signal as it would have. */
#ifndef KVSCOPE_UTIL_TEMPFILES_H
#define KVSCOPE_UTIL_TEMPFILES_H

typedef enum {
    TEMP_FILE,    /* unlink it */
    TEMP_DIR,     /* rmdir it (it is empty by then: its files were registered after it) */
    TEMP_TREE,    /* remove the folder and the files in it (one level) */
    TEMP_RESTORE, /* rename the saved copy `path` back to `to` */
} TempKind;

/* Register path (and for TEMP_RESTORE the name it goes back to). Returns an
 * id for tempfiles_forget, or -1 when out of memory (the temporary is then
 * not cleaned on a signal; the command runs on). */
int tempfiles_add(TempKind kind, const char *path, const char *to);

/* The entry is done with (renamed into place or removed): a signal no
 * longer touches it. A negative id is ignored. */
void tempfiles_forget(int id);

/* Forget the entries from id `from` on (a run that ended well). */
void tempfiles_forget_from(int from);

/* Undo the entries from id `from` on, newest first, as the signal handler
 * would, and forget them: a failed command's way back. */
void tempfiles_undo_from(int from);

/* The id the next entry gets (for tempfiles_undo_from). */
int tempfiles_mark(void);

/* Catch SIGINT, SIGTERM, SIGHUP and SIGPIPE (each one only if its action is
 * still the default: an ignored SIGHUP stays ignored). */
void tempfiles_catch_signals(void);

/* The handler itself, for a command that catches a signal of its own (train's
 * Ctrl-C) and hands it back later. */
void tempfiles_on_signal(int sig);

#endif
