/* plot_io.c: what every figure's maker shares: the output directory, data
 * and labels files, the machine caption, the scripts and gnuplot itself. */
#include "plot/plot.h"
#include "util/files.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

int plot_prepare_dir(const char *dir, Err *e)
{
    char path[PATH_MAX];
    if (!*dir)
        return err_set(e, ERR_USAGE, "--out: empty directory name");
    if (strlen(dir) >= sizeof path)
        return err_set(e, ERR_USAGE, "--out: path too long");
    strcpy(path, dir);
    /* mkdir -p: each parent in turn, then the directory */
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return err_set(e, ERR_RUNTIME, "--out %s: cannot create %s: %s", dir, path, strerror(errno));
        *p = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return err_set(e, ERR_RUNTIME, "--out %s: cannot create it: %s", dir, strerror(errno));
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(e, ERR_USAGE, "--out %s: exists and is not a directory", dir);
    if (access(path, W_OK | X_OK) != 0)
        return err_set(e, ERR_RUNTIME, "--out %s: cannot write there: %s", dir, strerror(errno));
    return 0;
}

FILE *plot_open(const PlotCtx *ctx, const char *name, Err *e)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", ctx->out_dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        err_set(e, ERR_RUNTIME, "plot: cannot write %s: %s", path, strerror(errno));
    return f;
}

int plot_close(FILE *f, const char *name, Err *e)
{
    if (!f)
        return 0;
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return err_set(e, ERR_RUNTIME, "plot: writing %s failed", name);
    return 0;
}

void plot_gp_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '\n')
            fputs("\\n", f);
        else {
            if (*s == '"' || *s == '\\')
                fputc('\\', f);
            fputc(*s, f);
        }
    }
    fputc('"', f);
}

FILE *plot_labels_open(const PlotCtx *ctx, const char *name, const char *title, const char *caption, Err *e)
{
    char file[128];
    snprintf(file, sizeof file, "%s.labels.gp", name);
    FILE *f = plot_open(ctx, file, e);
    if (!f)
        return NULL;
    fprintf(f, "# %s: written by `kvscope plot %s`; plots/%s.gp loads it\n", file, name, name);
    fputs("title = ", f);
    plot_gp_string(f, title);
    fputs("\ncaption = ", f);
    plot_gp_string(f, caption);
    fputc('\n', f);
    return f;
}

void plot_machine(char *buf, size_t cap)
{
    char model[128] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            /* x86: "model name"; some ARM kernels: "Hardware" or "Model" */
            if (strncmp(line, "model name", 10) && strncmp(line, "Hardware", 8) && strncmp(line, "Model", 5))
                continue;
            const char *colon = strchr(line, ':');
            if (!colon)
                continue;
            colon++;
            while (*colon == ' ' || *colon == '\t')
                colon++;
            snprintf(model, sizeof model, "%s", colon);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
        fclose(f);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(buf, cap, "%s, %ld core%s", *model ? model : "unknown CPU", cores > 0 ? cores : 1,
             cores == 1 ? "" : "s");
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int plot_script_path(const char *name, char *out, size_t cap)
{
    char rel[96];
    snprintf(rel, sizeof rel, "%s.gp", name);
    return files_find("KVSCOPE_PLOTS", "plots", rel, out, cap);
}

int plot_copy_script(const PlotCtx *ctx, const char *name, Err *e)
{
    char src[PATH_MAX], file[128];
    if (plot_script_path(name, src, sizeof src) < 0)
        return err_set(e, ERR_RUNTIME, "plot: cannot find the gnuplot script %s.gp (looked in plots/ beside and "
                       "above the executable and in ./plots; set KVSCOPE_PLOTS to its folder)", name);
    FILE *in = fopen(src, "r");
    if (!in)
        return err_set(e, ERR_RUNTIME, "plot: cannot read %s: %s", src, strerror(errno));
    snprintf(file, sizeof file, "%s.gp", name);
    FILE *out = plot_open(ctx, file, e);
    if (!out) {
        fclose(in);
        return -1;
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    int bad = ferror(in);
    fclose(in);
    if (plot_close(out, file, e) < 0)
        return -1;
    return bad ? err_set(e, ERR_RUNTIME, "plot: reading %s failed", src) : 0;
}

int plot_have_gnuplot(void)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        return 0;
    char dir[PATH_MAX];
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len + sizeof "/gnuplot" < sizeof dir) {
            memcpy(dir, path, len);
            strcpy(dir + len, "/gnuplot");
            if (access(dir, X_OK) == 0 && file_exists(dir))
                return 1;
        }
        path += len + (path[len] == ':');
    }
    return 0;
}

int plot_render(const PlotCtx *ctx, const char *name, const char *term, const char *out, char *errbuf,
                size_t cap, Err *e)
{
    char script[128], data[128];
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(data, sizeof data, "%s.tsv", name);
    errbuf[0] = '\0';
    /* an image left by an earlier run must not pass for this run's */
    char image[PATH_MAX];
    int to_file = strcmp(out, "-") != 0;
    snprintf(image, sizeof image, "%s/%s", ctx->out_dir, out);
    if (to_file && unlink(image) != 0 && errno != ENOENT)
        return err_set(e, ERR_RUNTIME, "plot: cannot replace %s: %s", image, strerror(errno));
    int fd[2];
    if (pipe(fd) != 0)
        return err_set(e, ERR_RUNTIME, "plot: pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return err_set(e, ERR_RUNTIME, "plot: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], STDERR_FILENO);
        close(fd[1]);
        if (chdir(ctx->out_dir) != 0)
            _exit(126);
        char *argv[] = { "gnuplot", "-c", script, data, (char *)out, (char *)term, NULL };
        execvp("gnuplot", argv);
        _exit(127);
    }
    close(fd[1]);
    size_t used = 0;
    char chunk[512];
    ssize_t n;
    while ((n = read(fd[0], chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR)) {
        if (n <= 0)
            continue;
        size_t take = (size_t)n < cap - 1 - used ? (size_t)n : cap - 1 - used;
        memcpy(errbuf + used, chunk, take);
        used += take;
    }
    errbuf[used] = '\0';
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return err_set(e, ERR_RUNTIME, "plot: waiting for gnuplot: %s", strerror(errno));
    /* gnuplot ends an error with the line that names it ("file" line N: what) */
    size_t end = used;
    while (end > 0 && (errbuf[end - 1] == '\n' || errbuf[end - 1] == ' '))
        end--;
    size_t start = end;
    while (start > 0 && errbuf[start - 1] != '\n')
        start--;
    const char *last = errbuf + start;
    int len = (int)(end - start);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (code == 127)
            return err_set(e, ERR_RUNTIME,
                           "plot: could not run gnuplot (install it: sudo apt-get install gnuplot-nox)");
        return err_set(e, ERR_RUNTIME, "plot: gnuplot failed on %s (%s, exit %d): %.*s", script, term, code, len,
                       last);
    }
    /* an empty or broken script exits 0 having drawn nothing: say so */
    if (to_file) {
        struct stat st;
        if (stat(image, &st) != 0 || st.st_size == 0)
            return err_set(e, ERR_RUNTIME, "plot: gnuplot drew nothing into %s from %s", out, script);
    }
    return 0;
}
