/* train_progress.h: what `kvscope train` shows and leaves while it runs: the
 * progress line, the validation lines, the per-step log (--log, a TSV for
 * the loss-curve figure), checkpoints on schedule and on Ctrl-C, and the
 * sidecar FILE.json that records how the weights were made. */
#ifndef KVSCOPE_APP_TRAIN_PROGRESS_H
#define KVSCOPE_APP_TRAIN_PROGRESS_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "app/progress_line.h"
#include "sim/setup.h"
#include "train/trainer.h"
#include "util/outfile.h"

typedef struct {
    ModelOpts mo;
    const char *text, *valid, *out, *resume, *log;
    const char *init;   /* --init: "scratch" or a .kvw file; NULL = scratch */
    TrainOpts t;
    size_t ckpt_every;
    int f16;
    int quiet;                     /* --quiet: no progress line */
    size_t threads;                /* --threads (0: every CPU this process may use) */
} TrainArgs;

typedef struct {
    const TrainArgs *a;
    Trainer *tr;
    char ckpt[4096];
    FILE *log;                     /* --log's temporary (log_out.f), or NULL */
    OutFile log_out;               /* --log: whole or absent, renamed at the end */
    double t0, bytes_per_token;    /* of the held-out text */
    double train_bytes_per_token;
    uint64_t first_step;
    double last_valid, last_train; /* nats per token */
    double flops, seconds;         /* of this process's steps so far */
    double matmul_gflops;          /* the matmul kernel's own rate on the model's shapes */
    int saved_on_stop;
    int failed;                    /* the callback failed: *e says why */
    ProgressLine line;             /* steps, loss and speed on stderr */
    Err *e;
} Progress;

/* Set by Ctrl-C while the trainer runs. */
extern volatile sig_atomic_t train_interrupted;

/* The clock starts and the progress line shows (progress_line_end
 * erases it once the trainer returns). */
void train_progress_begin(Progress *p);

/* The trainer's callback (trainer_run): the progress line, a validation
 * line on stdout when one was measured, the log row, a checkpoint when due;
 * non-zero to stop after Ctrl-C. */
int train_progress_step(void *user, const TrainStep *s);

/* Opens --log's temporary: a copy of the log when resuming, else its header
 * only. train_progress_close_log renames it into place once the run ends
 * well (a stop by Ctrl-C too: the log then matches the checkpoint);
 * train_progress_drop_log removes it, leaving an earlier log as it was. */
int train_progress_open_log(Progress *p, Err *e);
int train_progress_close_log(Progress *p, Err *e);
void train_progress_drop_log(Progress *p);

/* FILE.json beside the weights: how they were made. */
int train_write_sidecar(const Progress *p, const Model *m, uint64_t text_hash, Err *e);

#endif
