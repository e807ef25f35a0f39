/* lesson_exec.c: child processes for checks and exercises, and paths. */
#include "course/lesson_exec.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The longest a command may run (SIGALRM survives exec and ends it). */
#define CHILD_SECONDS 900

void exec_result_free(ExecResult *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* A growing text buffer. */
typedef struct {
    char *p;
    size_t n, cap;
} Buf;

static int buf_add(Buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

/* Read both pipes to their ends (either may fill first), then wait. */
static int collect(pid_t pid, int fd_out, int fd_err, ExecResult *r, Err *e)
{
    Buf bo = { 0 }, be = { 0 };
    if (buf_add(&bo, "", 0) < 0 || buf_add(&be, "", 0) < 0) {
        free(bo.p);
        free(be.p);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    struct pollfd fds[2] = { { .fd = fd_out, .events = POLLIN }, { .fd = fd_err, .events = POLLIN } };
    int open_fds = fd_err >= 0 ? 2 : 1;
    if (fd_err < 0)
        fds[1].fd = -1;
    char chunk[8192];
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n > 0) {
                if (buf_add(i ? &be : &bo, chunk, (size_t)n) < 0)
                    n = 0;
            }
            if (n <= 0 && !(n < 0 && errno == EINTR)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    r->out = bo.p;
    r->err = be.p;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 0;
}

static int spawn(const char *path, char *const argv[], char *const *env_extra, int merge, ExecResult *r, Err *e)
{
    int po[2], pe[2] = { -1, -1 };
    if (pipe(po) < 0 || (!merge && pipe(pe) < 0))
        return err_set(e, ERR_RUNTIME, "pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return err_set(e, ERR_RUNTIME, "fork: %s", strerror(errno));
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY); /* a quiz's answers are on our stdin: not theirs */
        if (devnull >= 0) {
            dup2(devnull, 0);
            close(devnull);
        }
        alarm(CHILD_SECONDS); /* a command that hangs must not hang the lint */
        dup2(po[1], 1);
        dup2(merge ? po[1] : pe[1], 2);
        close(po[0]);
        close(po[1]);
        if (!merge) {
            close(pe[0]);
            close(pe[1]);
        }
        for (size_t i = 0; env_extra && env_extra[i]; i++)
            putenv(env_extra[i]);
        execv(path, argv);
        fprintf(stderr, "kvscope: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    if (!merge)
        close(pe[1]);
    return collect(pid, po[0], merge ? -1 : pe[0], r, e);
}

int exec_split(char *buf, char **argv, size_t cap, Err *e)
{
    size_t n = 0;
    char *r = buf, *w = buf;
    for (;;) {
        while (*r == ' ' || *r == '\t' || *r == '\n')
            r++;
        if (!*r)
            break;
        if (n + 1 >= cap)
            return err_set(e, ERR_USAGE, "command line has too many words");
        argv[n++] = w;
        while (*r && *r != ' ' && *r != '\t' && *r != '\n') {
            if (*r == '\'' || *r == '"') {
                char q = *r++;
                while (*r && *r != q)
                    *w++ = *r++;
                if (!*r)
                    return err_set(e, ERR_USAGE, "command line has an unterminated %c quote", q);
                r++;
            } else {
                *w++ = *r++;
            }
        }
        int at_end = *r == '\0';
        *w++ = '\0'; /* w <= r: this overwrites at most the separator at r */
        if (at_end)
            break;
        r++;
    }
    argv[n] = NULL;
    return (int)n;
}

int exec_kvscope(const char *cmdline, ExecResult *r, Err *e)
{
    memset(r, 0, sizeof *r);
    char *buf = strdup(cmdline);
    char *argv[128];
    if (!buf)
        return err_set(e, ERR_RUNTIME, "out of memory");
    int n = exec_split(buf, argv, sizeof argv / sizeof argv[0], e);
    if (n < 0 || n == 0 || strcmp(argv[0], "kvscope") != 0) {
        free(buf);
        return n < 0 ? -1 : err_set(e, ERR_USAGE, "a command must start with 'kvscope': '%s'", cmdline);
    }
    /* the running image itself, even if the file was rebuilt meanwhile */
    const char *self = "/proc/self/exe";
    int rc = spawn(self, argv, NULL, 0, r, e);
    free(buf);
    return rc;
}

int exec_shell(const char *cmdline, char *const *env_extra, ExecResult *r, Err *e)
{
    memset(r, 0, sizeof *r);
    char *argv[] = { "sh", "-c", (char *)cmdline, NULL };
    return spawn("/bin/sh", argv, env_extra, 1, r, e);
}

int exec_self_dir(char *out, size_t cap)
{
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return -1;
    self[len] = '\0';
    char *deleted = strstr(self, " (deleted)"); /* rebuilt while running: the path still holds */
    if (deleted && deleted[10] == '\0')
        *deleted = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    snprintf(out, cap, "%s", self);
    return 0;
}

static int has_manifest(const char *dir)
{
    char p[PATH_MAX + 64];
    struct stat st;
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int absolute(const char *path, char *out, size_t cap)
{
    char buf[PATH_MAX];
    if (!realpath(path, buf))
        return -1;
    snprintf(out, cap, "%s", buf);
    return 0;
}

int exec_find_course(char *dir, size_t cap, Err *e)
{
    const char *env = getenv("KVSCOPE_LESSONS");
    if (env && *env) {
        if (has_manifest(env) && absolute(env, dir, cap) == 0)
            return 0;
        return err_set(e, ERR_RUNTIME, "KVSCOPE_LESSONS names a directory without manifest.json");
    }
    char self[PATH_MAX], cand[PATH_MAX + 32];
    if (exec_self_dir(self, sizeof self) == 0) {
        static const char *const up[] = { "/lessons", "/../lessons", "/../../lessons", "/../../../lessons",
                                           "/../share/kvscope/lessons" /* make install */ };
        for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
            snprintf(cand, sizeof cand, "%s%s", self, up[i]);
            if (has_manifest(cand) && absolute(cand, dir, cap) == 0)
                return 0;
        }
    }
    if (has_manifest("lessons") && absolute("lessons", dir, cap) == 0)
        return 0;
    return err_set(e, ERR_RUNTIME, "cannot find the lessons (lessons/manifest.json beside the executable or in "
                   "the current directory; KVSCOPE_LESSONS names another place)");
}

void exec_display_path(const char *path, char *out, size_t cap)
{
    char cwd[PATH_MAX], abs_path[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || path[0] != '/' || !realpath(path, abs_path)) {
        snprintf(out, cap, "%s", path);
        return;
    }
    /* common prefix on whole components */
    size_t i = 0, last = 0;
    while (cwd[i] && abs_path[i] && cwd[i] == abs_path[i]) {
        if (cwd[i] == '/')
            last = i;
        i++;
    }
    if (!cwd[i] && (abs_path[i] == '/' || !abs_path[i]))
        last = i;
    if (last == 0) { /* only the root in common: a path up to it and down again reads oddly; this one pastes */
        snprintf(out, cap, "%s", strcmp(cwd, "/") == 0 ? abs_path + 1 : abs_path);
        return;
    }
    size_t ups = 0;
    for (const char *p = cwd + last; *p; p++)
        if (*p == '/')
            ups++;
    size_t k = 0;
    out[0] = '\0';
    for (size_t u = 0; u < ups && k + 4 < cap; u++)
        k += (size_t)snprintf(out + k, cap - k, "../");
    const char *rest = abs_path + last;
    if (*rest == '/')
        rest++;
    snprintf(out + k, cap - k, "%s", *rest ? rest : ".");
    if (!*rest && k) /* a parent directory: "../" -> ".." */
        out[k - 1] = '\0';
}

void exec_sh_quote(const char *word, char *out, size_t cap)
{
    int plain = *word != '\0';
    for (const char *p = word; *p; p++)
        if (!(isalnum((unsigned char)*p) || strchr("/._-+=:,", *p)))
            plain = 0;
    if (plain) {
        snprintf(out, cap, "%s", word);
        return;
    }
    size_t k = 0;
    if (k + 1 < cap)
        out[k++] = '\'';
    for (const char *p = word; *p && k + 5 < cap; p++) {
        if (*p == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *p;
        }
    }
    if (k + 1 < cap)
        out[k++] = '\'';
    out[k] = '\0';
}
