/* trainer.c: the training loop and its checkpoints (trainer.h). */
#include "train/trainer.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/backprop.h"

struct Trainer {
    Model *m;
    Model grad;            /* the gradient: a model of the same shape */
    Adamw adam;
    TrainOpts o;
    BackpropState *bp;
    gsl_rng *rng;
    const int *train, *valid;
    size_t n_train, n_valid;
    int *bos_window;       /* [seq_len + 1] with add_bos: bos_token, then the text's tokens */
    double tokens;
};

/* The seq_len + 1 tokens a window at text[at] reads (inputs, then the last
 * target): the text itself, or with add_bos the fixed first token followed
 * by seq_len of the text's, so every window starts the same way. */
static const int *window_at(Trainer *t, const int *text, size_t at)
{
    if (!t->bos_window)
        return text + at;
    t->bos_window[0] = t->m->cfg.bos_token;
    memcpy(t->bos_window + 1, text + at, t->o.seq_len * sizeof(int));
    return t->bos_window;
}

int trainer_init(Trainer **out, Model *m, const TrainOpts *o, const int *train, size_t n_train, const int *valid,
                 size_t n_valid, Err *e)
{
    *out = NULL;
    const Config *c = &m->cfg;
    if (backprop_check_config(c, e) < 0)
        return -1;
    if (o->seq_len < 2 || o->seq_len > c->max_seq_len)
        return err_set(e, ERR_USAGE, "train: windows of %zu tokens; model '%s' takes 2 to %zu", o->seq_len, c->name,
                       c->max_seq_len);
    if (n_train < o->seq_len + 2 || n_valid < o->seq_len + 1)
        return err_set(e, ERR_USAGE, "train: the texts make %zu and %zu tokens; one window needs %zu", n_train,
                       n_valid, o->seq_len + 2);
    if (o->batch == 0 || o->steps == 0)
        return err_set(e, ERR_USAGE, "train: --batch and --steps must be at least 1");
    Trainer *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_RUNTIME, "out of memory");
    *t = (Trainer){ .m = m, .o = *o, .train = train, .valid = valid, .n_train = n_train, .n_valid = n_valid };
    t->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!t->rng || model_alloc(&t->grad, c, m->kern, e) < 0 || adamw_init(&t->adam, m, e) < 0 ||
        backprop_init(&t->bp, c, o->seq_len, e) < 0) {
        trainer_free(t);
        return e->kind ? -1 : err_set(e, ERR_RUNTIME, "out of memory");
    }
    if (c->add_bos && !(t->bos_window = malloc((o->seq_len + 1) * sizeof(int)))) {
        trainer_free(t);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    gsl_rng_set(t->rng, (unsigned long)o->seed);
    *out = t;
    return 0;
}

void trainer_free(Trainer *t)
{
    if (!t)
        return;
    if (t->rng)
        gsl_rng_free(t->rng);
    model_free(&t->grad);
    adamw_free(&t->adam);
    backprop_free(t->bp);
    free(t->bos_window);
    free(t);
}

uint64_t trainer_steps(const Trainer *t)
{
    return t->adam.step;
}

double trainer_valid_loss(Trainer *t)
{
    const size_t T = t->o.seq_len, n = t->o.eval_windows ? t->o.eval_windows : 1;
    const size_t span = t->n_valid - T - 1;
    double sum = 0;
    for (size_t i = 0; i < n; i++) /* windows evenly spaced: the same ones every time */
        sum += backprop_forward(t->m, t->bp, window_at(t, t->valid, n > 1 ? i * span / (n - 1) : 0), T, NULL);
    return sum / (double)n;
}

/* One optimizer step over a batch of random windows; its mean loss. */
static double step(Trainer *t, double *grad_norm)
{
    const size_t T = t->o.seq_len;
    memset(t->grad.arena, 0, t->grad.arena_floats * sizeof(float));
    double loss = 0;
    for (size_t b = 0; b < t->o.batch; b++) {
        size_t at = gsl_rng_uniform_int(t->rng, t->n_train - T - 1);
        loss += backprop_forward(t->m, t->bp, window_at(t, t->train, at), T, NULL);
        backprop_backward(t->m, t->bp, &t->grad, 1.0f / (float)t->o.batch);
    }
    *grad_norm = adamw_step(&t->adam, &t->o.opt, t->m->arena, t->grad.arena);
    t->tokens += (double)(T * t->o.batch);
    return loss / (double)t->o.batch;
}

int trainer_run(Trainer *t, int (*fn)(void *user, const TrainStep *s), void *user, Err *e)
{
    while (t->adam.step < t->o.steps) {
        TrainStep s = { .lr = adamw_lr(&t->o.opt, t->adam.step) };
        s.loss = step(t, &s.grad_norm);
        s.step = t->adam.step;
        s.tokens = t->tokens;
        if ((t->o.eval_every && s.step % t->o.eval_every == 0) || s.step == t->o.steps) {
            s.has_valid = 1;
            s.valid_loss = trainer_valid_loss(t);
        }
        s.flops = (double)backprop_flops(t->bp);
        if (!isfinite(s.loss))
            return err_set(e, ERR_RUNTIME, "train: the loss became %g at step %llu (try a smaller --lr)", s.loss,
                           (unsigned long long)s.step);
        if (fn && fn(user, &s))
            break;
    }
    return 0;
}

/* The state beyond the weights, as tensors of one checkpoint file. */
typedef struct {
    uint64_t step;
    double tokens;
} TrainCounters;

static size_t checkpoint_tensors(const Trainer *t, KvwTensor *tt, size_t cap, TrainCounters *tc)
{
    size_t n = model_tensors(t->m, tt, cap, KVW_F32);
    if (n + 4 > cap)
        return n + 4;
    tt[n++] = (KvwTensor){ "adam.m", KVW_F32, 1, (uint32_t)t->adam.n, t->adam.m };
    tt[n++] = (KvwTensor){ "adam.v", KVW_F32, 1, (uint32_t)t->adam.n, t->adam.v };
    tt[n++] = (KvwTensor){ "train.counters", KVW_BYTES, 1, sizeof *tc, tc };
    tt[n++] = (KvwTensor){ "train.rng", KVW_BYTES, 1, (uint32_t)gsl_rng_size(t->rng), gsl_rng_state(t->rng) };
    return n;
}

int trainer_save(const Trainer *t, const char *path, Err *e)
{
    KvwTensor tt[8 + 10 * 256];
    TrainCounters tc = { t->adam.step, t->tokens };
    size_t n = checkpoint_tensors(t, tt, sizeof tt / sizeof tt[0], &tc);
    KvwShape shape = model_kvw_shape(&t->m->cfg);
    return kvw_write(path, &shape, tt, n, e);
}

int trainer_load(Trainer *t, const char *path, Err *e)
{
    KvwTensor tt[8 + 10 * 256];
    TrainCounters tc;
    size_t n = checkpoint_tensors(t, tt, sizeof tt / sizeof tt[0], &tc);
    KvwShape shape = model_kvw_shape(&t->m->cfg);
    if (kvw_read(path, &shape, tt, n, 0, e) < 0)
        return err_wrap(e, "--resume");
    t->adam.step = tc.step;
    t->tokens = tc.tokens;
    return 0;
}
