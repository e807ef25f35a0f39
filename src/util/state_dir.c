/* state_dir.c: the user's state folder (state_dir.h). */
#include "util/state_dir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int state_dir_file(const char *name, char *out, size_t cap)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int n = -1;
    out[0] = '\0';
    if (xdg && xdg[0] == '/')
        n = snprintf(out, cap, "%s/kvscope/%s", xdg, name);
    else if (home && home[0] == '/')
        n = snprintf(out, cap, "%s/.local/state/kvscope/%s", home, name);
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int state_dir_make(const char *file)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", file) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(dir, 0700) < 0 && errno != EEXIST ? -1 : 0;
}
