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

/* What a run has written, so that a failure takes it back (plot runs on
 * one thread; these are its only state). A file is written under a
 * temporary name beside its own and renamed when it closed without error:
 * its name never holds half a file. The files of the figure being made are
 * listed, to be removed if the figure fails, and so are the folders --out
 * made, to be removed if the run leaves them empty. */
#define MAX_OPEN 8     /* files open at once: a figure's data, labels and script */
#define MAX_WRITTEN 32 /* files one figure writes */
#define MAX_DIRS 16
typedef struct {
    FILE *f;
    char tmp[PATH_MAX], path[PATH_MAX];
} OpenFile;
static OpenFile open_files[MAX_OPEN];
static char *written[MAX_WRITTEN];
static size_t n_written;
static char *made_dirs[MAX_DIRS];
static size_t n_made_dirs;

static void note_made_dir(const char *path)
{
    if (n_made_dirs < MAX_DIRS)
        made_dirs[n_made_dirs] = strdup(path), n_made_dirs += made_dirs[n_made_dirs] != NULL;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0777) == 0) {
        note_made_dir(path);
        return 0;
    }
    return errno == EEXIST ? 0 : -1;
}

/* The temporary name of path: ".NAME.part" in the same folder, so the
 * rename stays on one filesystem. */
static void part_name(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    if (snprintf(out, cap, "%.*s.%s.part", (int)dir_len, path, path + dir_len) >= (int)cap)
        out[0] = '\0'; /* too long to name: the open that follows fails and says so */
}

/* The file is whole: keep it as one of the figure's. */
static void note_written(const char *path)
{
    if (n_written < MAX_WRITTEN)
        written[n_written] = strdup(path), n_written += written[n_written] != NULL;
}

void plot_figure_begin(void)
{
    plot_figure_end();
}

void plot_figure_end(void)
{
    for (size_t i = 0; i < n_written; i++)
        free(written[i]);
    n_written = 0;
}

void plot_figure_abort(void)
{
    for (size_t i = 0; i < MAX_OPEN; i++)
        if (open_files[i].f) {
            fclose(open_files[i].f);
            unlink(open_files[i].tmp);
            open_files[i].f = NULL;
        }
    for (size_t i = 0; i < n_written; i++)
        unlink(written[i]);
    plot_figure_end();
}

void plot_remove_empty_dirs(void)
{
    while (n_made_dirs > 0) { /* deepest first; rmdir leaves a folder that is not empty */
        rmdir(made_dirs[--n_made_dirs]);
        free(made_dirs[n_made_dirs]);
    }
}

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
    snprintf(o->path, sizeof o->path, "%s/%s", ctx->out_dir, name);
    part_name(o->path, o->tmp, sizeof o->tmp);
    if (!(o->f = fopen(o->tmp, "w")))
        err_set(e, ERR_RUNTIME, "plot: cannot write %s: %s", o->path, strerror(errno));
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
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (!o) /* not plot_open's: nothing to rename */
        return bad ? err_set(e, ERR_RUNTIME, "plot: writing %s failed", name) : 0;
    o->f = NULL;
    if (bad || !e) { /* a failed write, or the caller is giving up: no half file stays */
        int was = errno;
        unlink(o->tmp);
        return bad ? err_set(e, ERR_RUNTIME, "plot: writing %s failed: %s", o->path, strerror(was)) : 0;
    }
    if (rename(o->tmp, o->path) != 0) {
        err_set(e, ERR_RUNTIME, "plot: cannot rename %s to %s: %s", o->tmp, o->path, strerror(errno));
        unlink(o->tmp);
        return -1;
    }
    note_written(o->path);
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
    const char *part_base = strrchr(part, '/') ? strrchr(part, '/') + 1 : part;
    if (to_file && unlink(part) != 0 && errno != ENOENT)
        return err_set(e, ERR_RUNTIME, "plot: cannot replace %s: %s", part, strerror(errno));
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
        char *argv[] = { "gnuplot", "-c", script, data, (char *)(to_file ? part_base : out), (char *)term, NULL };
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
        if (to_file)
            unlink(part);
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
    if (stat(part, &st) != 0 || st.st_size == 0) {
        unlink(part);
        return err_set(e, ERR_RUNTIME, "plot: gnuplot drew nothing into %s from %s", out, script);
    }
    if (!image_complete(part, term)) {
        unlink(part);
        return err_set(e, ERR_RUNTIME, "plot: gnuplot's %s is cut short (%lld bytes, no end of %s; is the disk "
                       "full?)", out, (long long)st.st_size, term);
    }
    if (rename(part, image) != 0) {
        err_set(e, ERR_RUNTIME, "plot: cannot rename %s to %s: %s", part, image, strerror(errno));
        unlink(part);
        return -1;
    }
    note_written(image);
    return 0;
}
