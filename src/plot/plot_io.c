/* plot_io.c: what every figure's maker shares: the output directory, data
 * and labels files, the machine caption, the scripts and gnuplot itself. */
#include "plot/plot.h"
#include "util/files.h"
#include "util/tempfiles.h"

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

/* What a run has put in place, so that a failure or a signal takes it
 * back (plot runs on one thread; these are its only state). A file is
 * written under a temporary name beside its own (".NAME.part") and renamed
 * when it closed without error: its name never holds half a file. The file
 * it replaces is first kept as ".NAME.old" (a hard link, so NAME is never
 * missing), to be renamed back if the run fails, removed when it succeeds. */
#define MAX_OPEN 8 /* files open at once: a figure's data, labels and script */
typedef struct {
    FILE *f;
    char tmp[PATH_MAX], path[PATH_MAX];
    int reg; /* tempfiles id of tmp */
} OpenFile;
static OpenFile open_files[MAX_OPEN];
static int run_mark = -1; /* the run's first tempfiles entry */
#define MAX_KEPT 256
static char *kept[MAX_KEPT]; /* the ".old" copies, removed at the commit */
static size_t n_kept;

static void run_start(void)
{
    if (run_mark < 0)
        run_mark = tempfiles_mark();
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0777) == 0) {
        tempfiles_add(TEMP_DIR, path, NULL); /* removed if the run fails (rmdir: only when empty) */
        return 0;
    }
    return errno == EEXIST ? 0 : -1;
}

/* The hidden name of path with a suffix (".part", ".old") in the same
 * folder, so that renames stay on one filesystem. */
static void hidden_name(const char *path, const char *suffix, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    if (snprintf(out, cap, "%.*s.%s%s", (int)dir_len, path, path + dir_len, suffix) >= (int)cap)
        out[0] = '\0'; /* too long to name: the open that follows fails and says so */
}

static void part_name(const char *path, char *out, size_t cap)
{
    hidden_name(path, ".part", out, cap);
}

/* Rename the whole temporary `part` to `path`, keeping what path held so
 * that the run can put it back. */
static int put_in_place(const char *part, const char *path, Err *e)
{
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return err_set(e, ERR_USAGE, "plot: %s is there and is not a file kvscope may replace", path);
        char old[PATH_MAX];
        hidden_name(path, ".old", old, sizeof old);
        char *copy = n_kept < MAX_KEPT ? strdup(old) : NULL;
        unlink(old);
        if (!copy || link(path, old) != 0) {
            free(copy);
            return err_set(e, ERR_RUNTIME, "plot: cannot keep a copy of %s while it is replaced: %s", path,
                           copy ? strerror(errno) : "too many files");
        }
        kept[n_kept++] = copy;
        tempfiles_add(TEMP_RESTORE, old, path);
    } else {
        tempfiles_add(TEMP_FILE, path, NULL); /* new: removed if the run fails */
    }
    if (rename(part, path) != 0)
        return err_set(e, ERR_RUNTIME, "plot: cannot rename %s to %s: %s", part, path, strerror(errno));
    return 0;
}

void plot_run_commit(void)
{
    for (size_t i = 0; i < n_kept; i++) {
        unlink(kept[i]);
        free(kept[i]);
    }
    n_kept = 0;
    if (run_mark >= 0)
        tempfiles_forget_from(run_mark);
    run_mark = -1;
}

void plot_run_abort(void)
{
    for (size_t i = 0; i < MAX_OPEN; i++)
        if (open_files[i].f) {
            fclose(open_files[i].f);
            open_files[i].f = NULL;
        }
    if (run_mark >= 0)
        tempfiles_undo_from(run_mark); /* the parts, the run's new files and folders; the copies put back */
    for (size_t i = 0; i < n_kept; i++)
        free(kept[i]);
    n_kept = 0;
    run_mark = -1;
}

int plot_prepare_dir(const char *dir, Err *e)
{
    char path[PATH_MAX];
    run_start();
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
        if (make_dir(path) != 0)
            return err_set(e, ERR_RUNTIME, "--out %s: cannot create %s: %s", dir, path, strerror(errno));
        *p = '/';
    }
    if (make_dir(path) != 0)
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
    OpenFile *o = NULL;
    for (size_t i = 0; i < MAX_OPEN && !o; i++)
        if (!open_files[i].f)
            o = &open_files[i];
    if (!o) {
        err_set(e, ERR_RUNTIME, "plot: more than %d files open at once", MAX_OPEN);
        return NULL;
    }
    run_start();
    snprintf(o->path, sizeof o->path, "%s/%s", ctx->out_dir, name);
    part_name(o->path, o->tmp, sizeof o->tmp);
    o->reg = tempfiles_add(TEMP_FILE, o->tmp, NULL);
    if (!(o->f = fopen(o->tmp, "w"))) {
        err_set(e, ERR_RUNTIME, "plot: cannot write %s: %s", o->path, strerror(errno));
        tempfiles_forget(o->reg);
    }
    return o->f;
}

int plot_close(FILE *f, const char *name, Err *e)
{
    if (!f)
        return 0;
    OpenFile *o = NULL;
    for (size_t i = 0; i < MAX_OPEN && !o; i++)
        if (open_files[i].f == f)
            o = &open_files[i];
    errno = 0;
    int bad = fflush(f) != 0 || ferror(f);
    int was = errno;
    if (fclose(f) != 0 && !bad)
        bad = 1, was = errno;
    if (!o) /* not plot_open's: nothing to rename */
        return bad ? err_set(e, ERR_RUNTIME, "plot: writing %s failed", name) : 0;
    o->f = NULL;
    int rc = 0;
    if (bad || !e) /* a failed write, or the caller is giving up: no half file stays */
        rc = bad ? err_set(e, ERR_RUNTIME, "plot: writing %s failed: %s", o->path,
                           was ? strerror(was) : "a write failed") : 0;
    else
        rc = put_in_place(o->tmp, o->path, e);
    unlink(o->tmp); /* gone already when it was put in place */
    tempfiles_forget(o->reg);
    return rc;
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

/* Whether the image at path ends as a whole file of its format does: a PNG
 * with its IEND chunk (name and CRC), an SVG with its closing tag. */
static int image_complete(const char *path, const char *term)
{
    static const unsigned char png_end[8] = { 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
    unsigned char tail[64];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    long from = len > (long)sizeof tail ? len - (long)sizeof tail : 0;
    size_t n = len >= 0 && fseek(f, from, SEEK_SET) == 0 ? fread(tail, 1, sizeof tail, f) : 0;
    fclose(f);
    if (strcmp(term, "png") == 0)
        return n >= sizeof png_end && memcmp(tail + n - sizeof png_end, png_end, sizeof png_end) == 0;
    if (strcmp(term, "svg") == 0) {
        while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == ' ' || tail[n - 1] == '\r'))
            n--;
        return n >= 6 && memcmp(tail + n - 6, "</svg>", 6) == 0;
    }
    return n > 0;
}

/* Run gnuplot on the figure's script, drawing into part (or to stdout when
 * out is "-"), and check the image is whole. */
static int render_into(const PlotCtx *ctx, const char *script, const char *data, const char *term,
                       const char *out, int to_file, const char *part, char *errbuf, size_t cap, Err *e)
{
    const char *part_base = strrchr(part, '/') ? strrchr(part, '/') + 1 : part;
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
        char *argv[] = { "gnuplot", "-c", (char *)script, (char *)data, (char *)(to_file ? part_base : out),
                         (char *)term, NULL };
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
    if (!to_file)
        return 0;
    /* an empty or broken script exits 0 having drawn nothing, and gnuplot
     * exits 0 when the disk fills under it: an image must end as its format
     * ends before it takes its name */
    struct stat st;
    if (stat(part, &st) != 0 || st.st_size == 0)
        return err_set(e, ERR_RUNTIME, "plot: gnuplot drew nothing into %s from %s", out, script);
    if (!image_complete(part, term))
        return err_set(e, ERR_RUNTIME, "plot: gnuplot's %s is cut short (%lld bytes, no end of %s; is the disk "
                       "full?)", out, (long long)st.st_size, term);
    return 0;
}

int plot_render(const PlotCtx *ctx, const char *name, const char *term, const char *out, char *errbuf,
                size_t cap, Err *e)
{
    char script[128], data[128];
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(data, sizeof data, "%s.tsv", name);
    errbuf[0] = '\0';
    /* gnuplot draws into a temporary name, renamed once the image is whole:
     * an image left by an earlier run is replaced only by a complete one */
    char image[PATH_MAX], part[PATH_MAX];
    int to_file = strcmp(out, "-") != 0;
    snprintf(image, sizeof image, "%s/%s", ctx->out_dir, out);
    part_name(image, part, sizeof part);
    if (to_file && unlink(part) != 0 && errno != ENOENT)
        return err_set(e, ERR_RUNTIME, "plot: cannot replace %s: %s", part, strerror(errno));
    int part_reg = to_file ? tempfiles_add(TEMP_FILE, part, NULL) : -1; /* a signal removes gnuplot's half image */
    int rc = render_into(ctx, script, data, term, out, to_file, part, errbuf, cap, e);
    if (rc == 0 && to_file)
        rc = put_in_place(part, image, e);
    if (to_file)
        unlink(part); /* gone already when it was put in place */
    tempfiles_forget(part_reg);
    return rc;
}
