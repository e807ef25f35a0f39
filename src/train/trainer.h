/* trainer.h: the training loop: batches of windows of the training ids
 * drawn with a seeded GSL mt19937, one forward and backward per window, an
 * AdamW step per batch; the validation loss now and then; checkpoints that
 * resume bit for bit (weights, moments, step and the generator's state). */
#ifndef KVSCOPE_TRAIN_TRAINER_H
#define KVSCOPE_TRAIN_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "train/adamw.h"
#include "util/err.h"

typedef struct {
    size_t steps;        /* optimizer steps */
    size_t batch;        /* windows per step */
    size_t seq_len;      /* tokens per window (at most the model's max_seq_len) */
    size_t eval_every;   /* steps between validation losses; 0 = only at the end */
    size_t eval_windows; /* validation windows, evenly spaced over the text */
    uint64_t seed;
    AdamwOpts opt;
} TrainOpts;

/* After each step. */
typedef struct {
    uint64_t step;       /* steps done */
    double loss;         /* this step's mean training loss, nats per token */
    double lr, grad_norm;
    double tokens;       /* tokens trained on so far */
    double flops;        /* floating-point operations by this process so far (backprop_flops) */
    int has_valid;       /* the validation loss was measured after this step */
    double valid_loss;   /* nats per token */
} TrainStep;

typedef struct Trainer Trainer;

/* A trainer of m (whose weights it updates in place) on train[n_train]
 * with valid[n_valid] held out: text tokens alone, since for an add_bos
 * model the trainer puts the first token before every window itself.
 * ERR_USAGE when a text is too short for one window or the options do not
 * fit the model. */
int trainer_init(Trainer **out, Model *m, const TrainOpts *o, const int *train, size_t n_train, const int *valid,
                 size_t n_valid, Err *e);
void trainer_free(Trainer *t);

/* Run up to o->steps in all; after each, fn (a non-zero return stops: the
 * caller's SIGINT, a checkpoint due). Returns 0 when done or stopped. */
int trainer_run(Trainer *t, int (*fn)(void *user, const TrainStep *s), void *user, Err *e);

/* The mean validation loss over the evaluation windows, nats per token. */
double trainer_valid_loss(Trainer *t);
uint64_t trainer_steps(const Trainer *t);

/* Everything a run needs to continue: weights (f32), moments, step, the
 * generator's state. trainer_load restores it into a trainer made with the
 * same model and options. */
int trainer_save(const Trainer *t, const char *path, Err *e);
int trainer_load(Trainer *t, const char *path, Err *e);

#endif
