#include "util/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int readable(const char *path) /* a file or a folder */
{
    return access(path, R_OK) == 0;
}

int files_find(const char *env_var, const char *folder, const char *rel, char *out, size_t cap)
{
    const char *env = getenv(env_var);
    if (env && *env) {
        snprintf(out, cap, "%s/%s", env, rel);
        return readable(out) ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        static const char *const up[] = { "/../", "/", "/../share/kvscope/" };
        for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
            snprintf(out, cap, "%s%s%s/%s", exe, up[i], folder, rel);
            if (readable(out))
                return 0;
        }
    }
    snprintf(out, cap, "%s/%s", folder, rel);
    return readable(out) ? 0 : -1;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

void files_list(const char *dir, const char *suffix, char *buf, size_t cap)
{
    char names[64][64];
    size_t n = 0, used = 0, sl = strlen(suffix);
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *ent;
    while ((ent = readdir(d)) && n < 64) {
        size_t len = strlen(ent->d_name);
        if (len > sl && len - sl < sizeof names[0] && strcmp(ent->d_name + len - sl, suffix) == 0)
            snprintf(names[n++], sizeof names[0], "%.*s", (int)(len - sl), ent->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_name); /* the same order on every machine */
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", names[i]);
}

int files_open_input(const char *path, Err *e)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int was = errno;
        err_set(e, ERR_RUNTIME, "cannot read '%s': %s", path, strerror(was));
        errno = was;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int was = errno;
        close(fd);
        err_set(e, ERR_RUNTIME, "cannot read '%s': %s", path, strerror(was));
        errno = was;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        return err_set(e, ERR_USAGE, "'%s' is %s, not a file", path,
                       S_ISDIR(st.st_mode)                      ? "a folder"
                       : S_ISFIFO(st.st_mode)                   ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                : "not a regular file");
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK); /* a regular file reads the same either way; plain from here */
    return fd;
}

int files_check_input(const char *path, Err *e)
{
    int fd = files_open_input(path, e);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

FILE *files_fopen_input(const char *path, Err *e)
{
    int fd = files_open_input(path, e);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        err_set(e, ERR_RUNTIME, "cannot read '%s': %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int files_read_text(const char *path, size_t max_bytes, char **out, size_t *len, Err *e)
{
    *out = NULL;
    *len = 0;
    FILE *f = strcmp(path, "-") == 0 ? stdin : files_fopen_input(path, e);
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    int rc = 0;
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n > max_bytes) {
            rc = err_set(e, ERR_USAGE, "'%s' is larger than %zu bytes", path, max_bytes);
            break;
        }
        if (got == 0)
            break;
        if (n == cap) {
            char *bigger = realloc(buf, 2 * cap + 1);
            if (!bigger)
                free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    if (!buf)
        rc = err_set(e, ERR_RUNTIME, "out of memory reading '%s'", path);
    else if (rc == 0 && ferror(f))
        rc = err_set(e, ERR_RUNTIME, "cannot read '%s': %s", path, strerror(errno));
    else if (rc == 0 && n == 0)
        rc = err_set(e, ERR_USAGE, "'%s' is empty", path);
    else if (rc == 0 && memchr(buf, '\0', n))
        rc = err_set(e, ERR_USAGE, "'%s' is not text: a NUL byte at offset %zu", path,
                     (size_t)((char *)memchr(buf, '\0', n) - buf));
    if (f != stdin)
        fclose(f);
    if (rc < 0) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}
