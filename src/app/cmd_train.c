/* cmd_train.c: `kvscope train`: a model's weights learnt from a text. The
 * text goes through the model's tokenizer; the loop is train/trainer.c;
 * this file reads the options, prints the progress line, saves checkpoints
 * (every --ckpt-every steps and on Ctrl-C) and the final weights with a
 * sidecar that records how they were made. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/train_progress.h"
#include "ckpt/kvw.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/parse.h"
#include "util/pool.h"

#define MAX_TEXT_BYTES ((size_t)64 << 20)

static void help(void)
{
    printf("usage: kvscope train --model CONFIG --text FILE --valid FILE --out FILE.kvw [OPTIONS]\n\n"
           "Learn a decoder's weights from a text: windows of the model's context drawn from the\n"
           "training text (a seeded gsl mt19937), the mean cross-entropy of each next token, its\n"
           "gradient through the whole model, an AdamW step per batch (linear warmup, then a cosine\n"
           "decay to a tenth; the gradient's norm clipped). The text goes through the model's\n"
           "tokenizer. The validation loss is shown in bits per byte of the held-out text.\n\n"
           "options:\n"
           "%s"
           "  --init FROM         where the weights start: scratch (default: random, from the config's\n"
           "                      seed) or FILE, a kvscope weights file (.kvw) of the same shape to\n"
           "                      train further, e.g. data/weights/kjv-tiny.kvw\n"
           "  --text FILE         the training text (`make corpus` makes build/corpus/kjv-train.txt)\n"
           "  --valid FILE        the held-out text (`make corpus` makes build/corpus/kjv-valid.txt)\n"
           "  --out FILE          the weights, a kvscope weights file; FILE.ckpt holds the run's state\n"
           "                      and FILE.json how it was made\n"
           "  --steps N           optimizer steps (default 1000)\n"
           "  --batch B           windows per step (default 16)\n"
           "  --seq-len T         tokens per window (default: the model's max_seq_len)\n"
           "  --lr X              the peak learning rate (default 3e-3)\n"
           "  --warmup N          steps of linear warmup (default 100)\n"
           "  --weight-decay X    AdamW's decay of the layers' matrices, 0 or more (default 0.1)\n"
           "  --clip X            the largest gradient norm (default 1; 0: no clipping)\n"
           "  --seed S            the seed of the windows drawn (default 1)\n"
           "  --eval-every N      steps between validation losses (default 100)\n"
           "  --eval-windows N    validation windows, evenly spaced (default 16)\n"
           "  --ckpt-every N      steps between checkpoints (default 500; Ctrl-C saves one too)\n"
           "  --resume FILE       continue the run a checkpoint holds, to --steps\n"
           "  --f16               store the final weights as f16 (half the bytes)\n"
           "  --log FILE          one TSV row per step: learning rate, training loss, validation\n"
           "                      bits/byte when measured, tokens, seconds, GFLOP/s (`kvscope plot\n"
           "                      loss --log FILE` draws it; appended to with --resume; written to\n"
           "                      FILE.tmp, renamed when the run ends: a failed run leaves FILE as it was)\n"
           "  --threads N         threads for each window's products, attention heads and rows\n"
           "                      (default: the CPUs this process may use; 1: none besides this one)\n"
           "%s\n"
           "The same seed and ISA give the same weights, whatever --threads: the work is split by\n"
           "rows (of activations, of weight gradients) and heads, never inside a sum. GFLOP/s\n"
           "counts the matmuls' and the attention's multiply-adds of the forwards and backwards\n"
           "(2 FLOPs each); the run first times the matmul kernel on the model's own shapes on one\n"
           "thread, the rate to compare with (per thread).\n"
           "example, after `make corpus` (it makes the two texts):\n"
           "  kvscope train --model kjv-tiny --init scratch --text build/corpus/kjv-train.txt \\\n"
           "      --valid build/corpus/kjv-valid.txt --out kjv-tiny.kvw --steps 200\n",
           cli_model_help, progress_line_help);
}

static int parse_options(int argc, char **argv, TrainArgs *a, Err *e)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 },      { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },        { "shared", no_argument, 0, 0 },
        { "allow-nan", no_argument, 0, 0 },
        { "text", required_argument, 0, 0 },       { "valid", required_argument, 0, 0 },
        { "out", required_argument, 0, 0 },        { "steps", required_argument, 0, 0 },
        { "batch", required_argument, 0, 0 },      { "seq-len", required_argument, 0, 0 },
        { "lr", required_argument, 0, 0 },         { "warmup", required_argument, 0, 0 },
        { "weight-decay", required_argument, 0, 0 }, { "clip", required_argument, 0, 0 },
        { "seed", required_argument, 0, 0 },       { "eval-every", required_argument, 0, 0 },
        { "eval-windows", required_argument, 0, 0 }, { "ckpt-every", required_argument, 0, 0 },
        { "resume", required_argument, 0, 0 },     { "f16", no_argument, 0, 0 },
        { "log", required_argument, 0, 0 },        { "init", required_argument, 0, 0 },
        { "quiet", no_argument, 0, 0 },         { "threads", required_argument, 0, 0 },
        { "help", no_argument, 0, 'h' },           { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "train", &name, e)) == CLI_OPTION) {
        int rc = cli_model_option(&a->mo, name, optarg, e);
        if (rc != 0) {
            if (rc < 0)
                return -1;
            continue;
        }
        unsigned long long u;
        if (strcmp(name, "text") == 0)
            a->text = optarg;
        else if (strcmp(name, "valid") == 0)
            a->valid = optarg;
        else if (strcmp(name, "out") == 0)
            a->out = optarg;
        else if (strcmp(name, "resume") == 0)
            a->resume = optarg;
        else if (strcmp(name, "init") == 0)
            a->init = optarg;
        else if (strcmp(name, "log") == 0)
            a->log = optarg;
        else if (strcmp(name, "f16") == 0)
            a->f16 = 1;
        else if (strcmp(name, "quiet") == 0)
            a->quiet = 1;
        else if (strcmp(name, "steps") == 0)
            rc = parse_size(optarg, "--steps", &a->t.steps, e);
        else if (strcmp(name, "batch") == 0)
            rc = parse_size(optarg, "--batch", &a->t.batch, e);
        else if (strcmp(name, "seq-len") == 0)
            rc = parse_size(optarg, "--seq-len", &a->t.seq_len, e);
        else if (strcmp(name, "lr") == 0)
            rc = parse_double(optarg, "--lr", &a->t.opt.lr, e);
        else if (strcmp(name, "warmup") == 0)
            rc = parse_size0(optarg, "--warmup", &a->t.opt.warmup, e);
        else if (strcmp(name, "weight-decay") == 0)
            rc = parse_double(optarg, "--weight-decay", &a->t.opt.weight_decay, e);
        else if (strcmp(name, "clip") == 0)
            rc = parse_double(optarg, "--clip", &a->t.opt.clip, e);
        else if (strcmp(name, "seed") == 0)
            rc = parse_u64(optarg, "--seed", &u, e), a->t.seed = u;
        else if (strcmp(name, "eval-every") == 0)
            rc = parse_size0(optarg, "--eval-every", &a->t.eval_every, e);
        else if (strcmp(name, "eval-windows") == 0)
            rc = parse_size(optarg, "--eval-windows", &a->t.eval_windows, e);
        else if (strcmp(name, "ckpt-every") == 0)
            rc = parse_size0(optarg, "--ckpt-every", &a->ckpt_every, e);
        else if (strcmp(name, "threads") == 0)
            rc = parse_size0(optarg, "--threads", &a->threads, e);
        if (rc < 0)
            return -1;
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (optind < argc)
        return err_set(e, ERR_USAGE, "train: unexpected argument '%s' (see `kvscope train --help`)", argv[optind]);
    if (!a->text || !a->valid || !a->out)
        return err_set(e, ERR_USAGE, "train: --text, --valid and --out are required (see `kvscope train --help`)");
    if (!(a->t.opt.lr > 0 && a->t.opt.lr < 1))
        return err_set(e, ERR_USAGE, "--lr: between 0 and 1, got %g", a->t.opt.lr);
    if (a->t.opt.weight_decay < 0) /* a negative decay pushes weights away from 0 */
        return err_set(e, ERR_USAGE, "--weight-decay: 0 or more, got %g", a->t.opt.weight_decay);
    if (a->t.opt.clip < 0)
        return err_set(e, ERR_USAGE, "--clip: 0 (no clipping) or more, got %g", a->t.opt.clip);
    if (a->init && a->resume)
        return err_set(e, ERR_USAGE, "train: --init and --resume exclude each other (a resumed run continues from "
                       "its checkpoint)");
    if (a->init && strcmp(a->init, "scratch") != 0 && !kvw_probe(a->init))
        return err_set(e, ERR_USAGE, "--init: '%s' is %s; give scratch or a kvscope weights file (.kvw)", a->init,
                       access(a->init, R_OK) == 0 ? "not a kvscope weights file" : "not a file kvscope can read");
    return pool_set_threads(a->threads, e);
}

static void on_sigint(int sig)
{
    (void)sig;
    train_interrupted = 1;
}

static uint64_t fnv1a(const int *ids, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint64_t)(unsigned)ids[i]) * 1099511628211ULL;
    return h;
}

/* The text, the model and a trainer: what a run needs before its first step. */
typedef struct {
    char tokenizer[64];
    int *train, *valid;
    size_t n_train, n_valid, b_train, b_valid;
    Model m;
    int model_ready;
    Trainer *tr;
} Run;

static void run_free(Run *r)
{
    trainer_free(r->tr);
    if (r->model_ready)
        model_free(&r->m);
    free(r->train);
    free(r->valid);
}

/* Fail now, not after the training, when the weights cannot be written:
 * OUT, OUT.json and OUT.ckpt must be files kvscope may replace, and the
 * folder must take a new file. */
static int check_writable(const char *out, Err *e)
{
    char tmp[4200], resolved[PATH_MAX];
    static const char *const suffix[] = { "", ".json", ".ckpt" };
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        snprintf(tmp, sizeof tmp, "%s%s", out, suffix[i]);
        if (outfile_target(tmp, resolved, sizeof resolved, e) < 0)
            return err_wrap(e, "--out");
    }
    snprintf(tmp, sizeof tmp, "%s.ckpt.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return err_set(e, ERR_RUNTIME, "cannot write '%s' (the run's checkpoint): %s", tmp, strerror(errno));
    fclose(f);
    remove(tmp);
    return 0;
}

/* A text that is not there: the corpus is made, not shipped. */
static int check_text(const char *path, Err *e)
{
    if (strcmp(path, "-") == 0 || access(path, F_OK) == 0)
        return 0;
    return err_set(e, ERR_RUNTIME, "train: cannot read '%s': %s (`make corpus` makes the training text, "
                   "build/corpus/kjv-train.txt and kjv-valid.txt)", path, strerror(errno));
}

/* --init: the config's weights become the start asked for. */
static int set_start(Config *cfg, const char *init, Err *e)
{
    if (!init || strcmp(init, "scratch") == 0) {
        cfg->checkpoint[0] = '\0';
        snprintf(cfg->weights, sizeof cfg->weights, "synthetic");
        return 0;
    }
    if (strlen(init) >= sizeof cfg->checkpoint)
        return err_set(e, ERR_USAGE, "--init: a path of %zu bytes is too long", strlen(init));
    snprintf(cfg->checkpoint, sizeof cfg->checkpoint, "%s", init); /* model_init reads it (model/checkpoint.h) */
    snprintf(cfg->weights, sizeof cfg->weights, "%s", strrchr(init, '/') ? strrchr(init, '/') + 1 : init);
    return 0;
}

/* The text alone, without the first token the tokenizer puts before it for
 * an add_bos model: the trainer puts that token before every window itself
 * (train/trainer.h), so the stream holds only text, and a window read from
 * its start does not begin with the token twice. */
static void drop_first_token(const Config *c, int *ids, size_t *n)
{
    if (c->add_bos && *n && ids[0] == c->bos_token)
        memmove(ids, ids + 1, --*n * sizeof *ids);
}

static int run_open(Run *r, TrainArgs *a, Err *e)
{
    if (check_writable(a->out, e) < 0 || check_text(a->text, e) < 0 || check_text(a->valid, e) < 0)
        return -1;
    Config cfg;
    if (setup_load_config(&a->mo, &cfg, e) < 0 || set_start(&cfg, a->init, e) < 0)
        return -1;
    if (setup_text_ids(&cfg, a->text, MAX_TEXT_BYTES, &r->train, NULL, &r->n_train, &r->b_train, r->tokenizer,
                       sizeof r->tokenizer, e) < 0 ||
        setup_text_ids(&cfg, a->valid, MAX_TEXT_BYTES, &r->valid, NULL, &r->n_valid, &r->b_valid, NULL, 0, e) < 0)
        return err_wrap(e, "train");
    drop_first_token(&cfg, r->train, &r->n_train);
    drop_first_token(&cfg, r->valid, &r->n_valid);
    if (!a->t.seq_len)
        a->t.seq_len = cfg.max_seq_len;
    if (setup_model(&cfg, a->mo.isa, 0, &r->m, e) < 0)
        return -1;
    r->model_ready = 1;
    if (model_dequantize(&r->m, e) < 0) /* training changes f32 weights */
        return -1;
    return trainer_init(&r->tr, &r->m, &a->t, r->train, r->n_train, r->valid, r->n_valid, e);
}

/* The matmul kernel's rate on the model's widest layer shape ([T][d] by
 * [f][d]), timed for about a third of a second: what the training's own
 * GFLOP/s is compared with, measured in the same run. */
static double matmul_gflops(const Model *m, size_t T)
{
    const size_t d = m->cfg.d_model, f = m->cfg.ffn_dim;
    float *x = calloc(T * d, sizeof *x), *w = calloc(f * d, sizeof *w), *y = malloc(T * f * sizeof *y);
    double rate = 0;
    if (x && w && y) {
        for (size_t i = 0; i < T * d; i++)
            x[i] = (float)(i % 7) * 0.1f;
        for (size_t i = 0; i < f * d; i++)
            w[i] = (float)(i % 5) * 0.1f;
        Counters none = { 0 };
        uint64_t flops = 0;
        const double t0 = clock_seconds();
        double el;
        do {
            m->kern->matmul(y, x, w, T, d, f, &flops, &none);
        } while ((el = clock_seconds() - t0) < 0.3);
        rate = (double)flops / el / 1e9;
    }
    free(x);
    free(w);
    free(y);
    return rate;
}

static int finish(Run *r, Progress *p, Err *e)
{
    const TrainArgs *a = p->a;
    KvwTensor t[4 + 10 * 256];
    size_t n = model_tensors(&r->m, t, sizeof t / sizeof t[0], a->f16 ? KVW_F16 : KVW_F32);
    KvwShape shape = model_kvw_shape(&r->m.cfg);
    if (kvw_write(a->out, &shape, t, n, e) < 0 || trainer_save(r->tr, p->ckpt, e) < 0 ||
        train_write_sidecar(p, &r->m, fnv1a(r->train, r->n_train), e) < 0)
        return -1;
    const double gflops = p->seconds > 0 ? p->flops / p->seconds / 1e9 : 0;
    const size_t threads = pool_threads();
    printf("done: %zu steps in %.1f s; validation %.4f bits per byte; %.2f GFLOP/s on %zu thread%s (%.2f a thread, "
           "%.0f%% of the matmul kernel's %.2f on one); weights in %s (and %s.json)\n", a->t.steps, p->seconds,
           p->last_valid / log(2.0) / p->bytes_per_token, gflops, threads, threads == 1 ? "" : "s",
           gflops / (double)threads, 100 * gflops / (double)threads / p->matmul_gflops, p->matmul_gflops, a->out,
           a->out);
    return 0;
}

int cmd_train(int argc, char **argv)
{
    TrainArgs a = { .t = { .steps = 1000, .batch = 16, .eval_every = 100, .eval_windows = 16, .seed = 1,
                           .opt = { .lr = 3e-3, .warmup = 100, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                                    .weight_decay = 0.1, .clip = 1.0 } },
                    .ckpt_every = 500 };
    Err e = { 0 };
    int pr = parse_options(argc, argv, &a, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);
    a.t.opt.steps = a.t.steps;
    a.t.opt.lr_min = a.t.opt.lr / 10;
    Run r = { 0 };
    Progress p = { .a = &a, .e = &e };
    snprintf(p.ckpt, sizeof p.ckpt, "%s.ckpt", a.out);
    int rc = run_open(&r, &a, &e);
    if (rc == 0 && a.resume)
        rc = trainer_load(r.tr, a.resume, &e);
    if (rc == 0)
        rc = train_progress_open_log(&p, &e);
    if (rc == 0) {
        p.tr = r.tr;
        p.bytes_per_token = (double)r.b_valid / (double)r.n_valid;
        p.train_bytes_per_token = (double)r.b_train / (double)r.n_train;
        p.first_step = trainer_steps(r.tr);
        p.matmul_gflops = matmul_gflops(&r.m, a.t.seq_len);
        char start[4200];
        if (a.resume)
            snprintf(start, sizeof start, "the run in %s (--resume)", a.resume);
        else if (a.init && strcmp(a.init, "scratch") != 0)
            snprintf(start, sizeof start, "the weights in %s (--init)", a.init);
        else
            snprintf(start, sizeof start, "scratch (random weights from seed %llu; --init FILE continues a "
                     ".kvw)", (unsigned long long)r.m.cfg.seed);
        printf("train %s from %s: %zu parameters, %s tokens; text %zu tokens (%.2f bytes each), valid %zu; %zu "
               "steps of %zu windows of %zu tokens from step %llu; the matmul kernel (%s) runs %.2f GFLOP/s on this "
               "shape\n", r.m.cfg.name, start, model_param_floats(&r.m.cfg), r.tokenizer, r.n_train,
               p.train_bytes_per_token,
               r.n_valid, a.t.steps, a.t.batch, a.t.seq_len, (unsigned long long)p.first_step, r.m.kern->isa,
               p.matmul_gflops);
        fflush(stdout);
        train_progress_begin(&p);
        p.last_valid = trainer_valid_loss(r.tr);
        void (*was)(int) = signal(SIGINT, on_sigint); /* Ctrl-C saves the run's state */
        rc = trainer_run(r.tr, train_progress_step, &p, &e);
        signal(SIGINT, was == SIG_ERR ? SIG_DFL : was);
        if (p.failed)
            rc = -1;
        progress_line_end(&p.line);
    }
    if (rc == 0 && p.saved_on_stop)
        printf("stopped at step %llu: the run's state is in %s (continue with --resume %s)\n",
               (unsigned long long)trainer_steps(r.tr), p.ckpt, p.ckpt);
    else if (rc == 0)
        rc = finish(&r, &p, &e);
    if (rc == 0)
        rc = train_progress_close_log(&p, &e);
    else
        train_progress_drop_log(&p);
    run_free(&r);
    return rc < 0 ? cli_fail(&e) : EXIT_OK;
}
