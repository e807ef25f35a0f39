/* outfile.c: write through a temporary, rename at the end (outfile.h). */
#include "util/outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/tempfiles.h"

/* What a non-regular file is, for the message. */
static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a folder";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

int outfile_target(const char *path, char *resolved, size_t cap, Err *e)
{
    struct stat st;
    if (!*path)
        return err_set(e, ERR_USAGE, "an empty output path");
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode)) { /* new, or a file to replace */
        if (snprintf(resolved, cap, "%s", path) >= (int)cap)
            return err_set(e, ERR_USAGE, "'%.200s...': path too long", path);
        return 0;
    }
    if (!S_ISLNK(st.st_mode))
        return err_set(e, ERR_USAGE, "'%s' is %s, not a file kvscope may replace", path, kind_of(st.st_mode));
    if (stat(path, &st) != 0)
        return err_set(e, ERR_USAGE, "'%s' is a symlink to nothing (%s); write to its target by name", path,
                       strerror(errno));
    if (!S_ISREG(st.st_mode))
        return err_set(e, ERR_USAGE, "'%s' is a symlink to %s, not a file kvscope may replace", path,
                       kind_of(st.st_mode));
    char *real = realpath(path, NULL);
    if (!real)
        return err_set(e, ERR_RUNTIME, "'%s': cannot follow the symlink: %s", path, strerror(errno));
    int too_long = snprintf(resolved, cap, "%s", real) >= (int)cap;
    free(real);
    return too_long ? err_set(e, ERR_USAGE, "'%.200s...': its target's path is too long", path) : 0;
}

int outfile_open(OutFile *o, const char *path, Err *e)
{
    memset(o, 0, sizeof *o);
    if (outfile_target(path, o->path, sizeof o->path, e) < 0)
        return -1;
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp", o->path);
    o->reg = tempfiles_add(TEMP_FILE, o->tmp, NULL) + 1; /* before it exists: a signal never misses it */
    o->f = fopen(o->tmp, "wb");
    if (!o->f) {
        err_set(e, ERR_RUNTIME, "cannot write '%s': %s", o->tmp, strerror(errno));
        tempfiles_forget(o->reg - 1);
        o->reg = 0;
        o->tmp[0] = '\0';
        return -1;
    }
    return 0;
}

int outfile_commit(OutFile *o, Err *e)
{
    if (!o->f)
        return err_set(e, ERR_RUNTIME, "'%s': not open for writing", o->path);
    errno = 0;
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int was = errno;
    if (fclose(o->f) != 0 && !bad)
        bad = 1, was = errno;
    o->f = NULL;
    if (bad) {
        outfile_abort(o);
        return err_set(e, ERR_RUNTIME, "cannot write '%s': %s", o->path,
                       was ? strerror(was) : "a write failed (disk full?)");
    }
    if (rename(o->tmp, o->path) != 0) {
        err_set(e, ERR_RUNTIME, "cannot rename '%s' into place: %s", o->tmp, strerror(errno));
        outfile_abort(o);
        return -1;
    }
    tempfiles_forget(o->reg - 1);
    o->reg = 0;
    o->tmp[0] = '\0';
    return 0;
}

void outfile_abort(OutFile *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
    tempfiles_forget(o->reg - 1);
    o->reg = 0;
    o->tmp[0] = '\0';
}
