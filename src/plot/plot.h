/* plot/: the figure factory behind `kvscope plot` and `make plots`. Makers
 * run the engine (sim/, model/, kv/, kernels/) and write data files and
 * gnuplot scripts; they may use sim/ and everything below it, never the
 * terminal, and they return errors instead of printing them.
 *
 * plot.h: `kvscope plot`'s figures, and what their makers share.
 *
 * A figure is made in two halves. The engine half (a maker, in one of the
 * plot_*.c files) runs the engine or asks its accounting and writes plain
 * data files into the output directory: NAME.tsv (a header row, then one row
 * per point, tab-separated), sometimes a second table (NAME.SUFFIX.tsv) and
 * NAME.labels.gp, the strings the picture prints (caption, fitted slopes).
 * The drawing half is plots/NAME.gp, a gnuplot script kept in the
 * repository, copied beside the data and run as
 *     gnuplot -c NAME.gp NAME.tsv NAME.png png
 * so the picture can be redrawn, or the script changed, by hand. */
#ifndef KVSCOPE_PLOT_PLOT_H
#define KVSCOPE_PLOT_PLOT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/setup.h"
#include "util/human.h"
#include "util/machine.h"
#include "kernels/kernels.h"
#include "kv/cache.h"
#include "sim/eval.h"
#include "sim/eval_ci.h"

/* How far a long figure is: `unit` names what is counted ("run",
 * "position"), done of total. */
typedef void (*PlotProgressFn)(void *user, const char *unit, size_t done, size_t total);

typedef struct {
    const char *out_dir;  /* where every file goes (exists, writable) */
    uint64_t seed;        /* prompts and synthetic K/V values */
    int quick;            /* smaller runs: for tests; the measured figures then mean little */
    const char *model;    /* figures 1-3: NULL = each figure's default */
    size_t tokens;        /* figures 1-3: tokens generated; 0 = each figure's default */
    const Kernels *kern;  /* the kernels the measured figures time */
    char machine[160];    /* "AMD EPYC 7B13, 2 cores" */
    Machine mach;         /* what the bandwidth figure sizes its data from (util/machine.h) */
    PlotProgressFn progress; /* NULL: nobody is told; else only on the thread that called the maker */
    void *progress_user;
} PlotCtx;

/* One line a maker hands back for the terminal ("slopes: cached 1.000, ..."). */
typedef struct {
    char note[256];
} PlotNote;

typedef int (*PlotMakeFn)(const PlotCtx *ctx, PlotNote *note, Err *e);

typedef struct {
    int number;           /* the figure's number, 1 .. 20 */
    const char *name;     /* file stem: plots/NAME.gp, NAME.tsv, NAME.png */
    const char *title;
    const char *waiting;  /* NULL when the figure can be made; else the engine parts it waits for */
    int measured;         /* 1: its data are timings (differ run to run); 0: same seed, same bytes */
    PlotMakeFn make;
} PlotFigure;

extern const PlotFigure plot_figures[];
extern const size_t plot_n_figures;

/* The makers (plot_gen.c, plot_memory.c, plot_kernels.c, plot_paged.c,
 * plot_eviction.c, plot_beam.c, plot_mla.c, plot_loss.c, plot_streaming.c,
 * plot_kvformats.c, plot_budget.c, plot_mixed.c, plot_retrieval.c, plot_serve.c,
 * plot_roofline.c, plot_prefix.c, plot_speculative.c). */
/* Figures 1-3 before any is made: the model and --tokens fit (ERR_USAGE). */
int plot_gen_check(const PlotCtx *ctx, Err *e);
int plot_projection(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_attention_flops(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_step_time(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_memory(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_bandwidth(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_quant_error(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_paged(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_eviction(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_beam(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_mla(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_loss(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_streaming(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_kv_formats(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_budget(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_mixed(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_retrieval(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_serve(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_roofline(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_prefix_cache(const PlotCtx *ctx, PlotNote *note, Err *e);
int plot_speculative(const PlotCtx *ctx, PlotNote *note, Err *e);

/* --- progress (plot_progress.c) --------------------------------------------- */

/* A figure's runs counted as they finish, on any thread of the pool:
 * ctx->progress is told the count only on the thread that began it (which
 * takes its share of a pool_run's runs too), so the caller never hears from
 * a worker. */
typedef struct {
    const PlotCtx *ctx;
    const char *unit;
    size_t total;
    atomic_size_t done;
    pthread_t owner;
} PlotRuns;

/* Count total units from zero (ctx->progress told 0 of total). */
void plot_runs_begin(PlotRuns *r, const PlotCtx *ctx, const char *unit, size_t total);
/* One more unit done; from any thread. */
void plot_runs_done(PlotRuns *r);

/* --- the figures on real text (plot_eval.c) ---------------------------------- */

/* A trained model, the held-out books as its tokens, caches and their
 * results: what figures 12 to 15 run through sim/eval.h. */
typedef struct {
    Config trained;       /* the model's config as shipped (its trained context) */
    Model m;              /* ... stretched to n positions when past_context */
    int model_ready;
    int *ids;
    size_t *bytes, n;     /* the first n tokens of the text are streamed */
    size_t prefill;       /* tokens of the first pass (0: 1), the rest one a step */
    KvCache **caches;     /* [n_caches], the reference first */
    EvalResult *res;      /* [n_caches] after plot_eval_run */
    size_t n_caches;
    EvalIntervals iv;     /* after plot_eval_run: 95% intervals over 32 segments of the text, each cache's
                             (iv.cache[i]) and each cache minus the reference (iv.pair[i - 1], i >= 1) */
} PlotEval;

/* The held-out books' file (data/text/kjv-valid.txt, under KVSCOPE_DATA)
 * into path [cap]; ERR_USAGE when it is missing. */
int plot_heldout_path(char *path, size_t cap, Err *e);
/* Load `model` and the first n held-out tokens; past_context: the model's
 * positions stretched to n (the caches decide what is kept), else n is cut
 * to its trained context. */
int plot_eval_open(PlotEval *j, const char *model, size_t n, int past_context, Err *e);
/* One more cache (the first added is the reference). */
int plot_eval_add(PlotEval *j, const char *spec, Err *e);
/* Every cache over the tokens, ctx->progress told the positions done, and
 * the intervals (j->iv). */
int plot_eval_run(const PlotCtx *ctx, PlotEval *j, int per_position, Err *e);
void plot_eval_free(PlotEval *j);

/* --- files (plot_io.c) ------------------------------------------------------ */

/* Create DIR (and missing parents) and check that a file can be written in
 * it. ERR_USAGE when it cannot: the user named a bad --out. */
int plot_prepare_dir(const char *dir, Err *e);

/* Open ctx->out_dir/name for writing: a temporary name beside it, which
 * plot_close renames to name once every write succeeded. NULL and
 * ERR_RUNTIME on failure. */
FILE *plot_open(const PlotCtx *ctx, const char *name, Err *e);
/* Close f and give it its name; a failed write of `name` is ERR_RUNTIME and
 * leaves nothing behind. With e NULL the caller is giving up on f: it is
 * removed. f may be NULL. */
int plot_close(FILE *f, const char *name, Err *e);

/* A run's files, all or none. Until plot_run_commit, every file the run
 * put in place is registered with tempfiles: a new one to be removed, one it
 * replaced kept as a hidden copy to be put back, and so are the folders
 * plot_prepare_dir made. plot_run_abort (a failed figure) and a fatal signal
 * (tempfiles' handler) both leave --out as it was before the run;
 * plot_run_commit removes the copies and keeps the run's files. */
void plot_run_commit(void);
void plot_run_abort(void);

/* Write s as a gnuplot double-quoted string: backslash and quote escaped, a
 * newline written as the two characters \n. */
void plot_gp_string(FILE *f, const char *s);

/* The labels file NAME.labels.gp: `caption = '...'` and any `key = value`
 * lines the caller adds between open and close. */
FILE *plot_labels_open(const PlotCtx *ctx, const char *name, const char *title, const char *caption, Err *e);

/* This machine, for captions: CPU model from /proc/cpuinfo and online cores. */
void plot_machine(char *buf, size_t cap);

/* Find plots/NAME.gp ($KVSCOPE_PLOTS, else plots/ beside or above the
 * executable, else ./plots) into out. -1 when it is nowhere. */
int plot_script_path(const char *name, char *out, size_t cap);

/* Copy plots/NAME.gp into the output directory. ERR_RUNTIME when the script
 * is missing or cannot be copied. */
int plot_copy_script(const PlotCtx *ctx, const char *name, Err *e);

/* 1 when a gnuplot executable is on PATH. */
int plot_have_gnuplot(void);

/* Run `gnuplot -c NAME.gp NAME.tsv OUT TERM` in the output directory (OUT
 * "-" for the dumb terminal: the picture goes to stdout). Whatever gnuplot
 * writes to stderr is returned in errbuf; a failure (non-zero exit, or a
 * line on stderr) is ERR_RUNTIME quoting its first line. */
int plot_render(const PlotCtx *ctx, const char *name, const char *term, const char *out, char *errbuf,
                size_t cap, Err *e);

#endif
