/* outfile.h: an output file that is whole or absent. It is written under a
 * temporary name beside its target (PATH.tmp), registered with tempfiles so
 * a signal removes it, and renamed over the target only once every byte is
 * written and the file closed without error.
 *
 * The target rule (README, "The commands"): a target that exists must be a
 * regular file, or a symlink to one, whose target file is then replaced
 * (the link stays); a folder, device, FIFO, socket or a symlink to nothing
 * is refused as bad input. */
#ifndef KVSCOPE_UTIL_OUTFILE_H
#define KVSCOPE_UTIL_OUTFILE_H

#include <stdio.h>

#include "util/err.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct {
    FILE *f;                  /* open while writing; NULL before and after */
    char path[PATH_MAX];      /* the file replaced: the target, or what its symlink names */
    char tmp[PATH_MAX + 8];   /* path + ".tmp" */
    int reg;                  /* tempfiles id of tmp + 1; 0: none */
} OutFile;

/* Check that path may be replaced and put the file to write in resolved
 * (cap bytes): path itself, or a symlink's target. ERR_USAGE, one line, when
 * it is not a regular file or names one that cannot be; 0 when it does not
 * exist yet. */
int outfile_target(const char *path, char *resolved, size_t cap, Err *e);

/* Check the target (outfile_target) and create its temporary, open for
 * writing in binary mode: o->f. ERR_RUNTIME when it cannot be created. */
int outfile_open(OutFile *o, const char *path, Err *e);

/* Flush, close and rename into place. On any failure (a write that failed
 * earlier too) the temporary is removed, the target left as it was, and
 * ERR_RUNTIME names the path and the system's reason. */
int outfile_commit(OutFile *o, Err *e);

/* Give up: close and remove the temporary. Safe on a zeroed, committed or
 * aborted OutFile. */
void outfile_abort(OutFile *o);

#endif
