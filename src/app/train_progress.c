/* train_progress.c: the progress line, the log, checkpoints and the sidecar
 * of `kvscope train` (train_progress.h). */
#include "app/train_progress.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "util/clock.h"
#include "util/pool.h"
#include "util/files.h"
#include "util/version.h"

volatile sig_atomic_t train_interrupted;

static double bits_per_byte(double nats_per_token, double bytes_per_token)
{
    return nats_per_token / log(2.0) / bytes_per_token;
}

int train_progress_open_log(Progress *p, Err *e)
{
    if (!p->a->log)
        return 0;
    if (outfile_open(&p->log_out, p->a->log, e) < 0)
        return err_wrap(e, "--log");
    p->log = p->log_out.f;
    if (p->a->resume) { /* the rows so far, then this run's */
        Err why = { 0 };
        FILE *old = files_fopen_input(p->log_out.path, &why);
        if (!old && !(why.kind == ERR_RUNTIME && errno == ENOENT)) {
            train_progress_drop_log(p);
            *e = why;
            return err_wrap(e, "--log");
        }
        char buf[1 << 16];
        size_t n;
        while (old && (n = fread(buf, 1, sizeof buf, old)) > 0)
            fwrite(buf, 1, n, p->log);
        int bad = old && ferror(old);
        if (old)
            fclose(old);
        if (bad) {
            train_progress_drop_log(p);
            return err_set(e, ERR_RUNTIME, "--log: cannot read '%s'", p->a->log);
        }
    }
    if (ftell(p->log) == 0)
        fprintf(p->log, "step\tlr\ttrain_loss\ttrain_bits_per_byte\tvalid_bits_per_byte\tgrad_norm\ttokens\t"
                        "seconds\tgflops_per_s\n");
    return 0;
}

int train_progress_close_log(Progress *p, Err *e)
{
    if (!p->log)
        return 0;
    p->log = NULL;
    return outfile_commit(&p->log_out, e) < 0 ? err_wrap(e, "--log") : 0;
}

void train_progress_drop_log(Progress *p)
{
    p->log = NULL;
    outfile_abort(&p->log_out);
}

/* One row, flushed so that a full disk shows at once: the run stops there. */
static int log_row(const Progress *p, const TrainStep *s, Err *e)
{
    fprintf(p->log, "%llu\t%.4e\t%.5f\t%.5f\t", (unsigned long long)s->step, s->lr, s->loss,
            bits_per_byte(s->loss, p->train_bytes_per_token));
    if (s->has_valid)
        fprintf(p->log, "%.5f", bits_per_byte(s->valid_loss, p->bytes_per_token));
    else
        fputc('-', p->log);
    fprintf(p->log, "\t%.4g\t%.0f\t%.2f\t%.3f\n", s->grad_norm, s->tokens, p->seconds,
            p->seconds > 0 ? p->flops / p->seconds / 1e9 : 0.0);
    errno = 0;
    if (fflush(p->log) != 0 || ferror(p->log))
        return err_set(e, ERR_RUNTIME, "--log: cannot write '%s': %s", p->a->log,
                       errno ? strerror(errno) : "a write failed");
    return 0;
}

void train_progress_begin(Progress *p)
{
    char label[64] = "kvscope train";
    if (p->first_step)
        snprintf(label, sizeof label, "kvscope train from step %llu", (unsigned long long)p->first_step);
    progress_line_init(&p->line, p->a->quiet);
    p->t0 = clock_seconds();
    progress_line_begin(&p->line, label, "step");
}

int train_progress_step(void *user, const TrainStep *s)
{
    Progress *p = user;
    const double el = clock_seconds() - p->t0;
    const double done = (double)(s->step - p->first_step);
    p->seconds = el;
    p->flops = s->flops;
    if (s->has_valid)
        p->last_valid = s->valid_loss;
    p->last_train = s->loss;
    const double bpb = bits_per_byte(p->last_valid, p->bytes_per_token);
    const double tps = el > 0 ? done * (double)(p->a->t.batch * p->a->t.seq_len) / el : 0;
    const double gflops = el > 0 ? s->flops / el / 1e9 : 0;
    char detail[160];
    snprintf(detail, sizeof detail, "loss %.3f, valid %.3f bits/byte, %.0f tokens/s, %.2f GFLOP/s", s->loss, bpb, tps,
             gflops);
    progress_line_detail(&p->line, detail);
    progress_line_count(&p->line, s->step - p->first_step, p->a->t.steps - p->first_step);
    if (s->has_valid) {
        char el_s[16];
        progress_line_seconds(el_s, sizeof el_s, el);
        progress_line_clear(&p->line);
        printf("step %llu: train loss %.4f nats/token, valid %.4f nats/token = %.4f bits/byte; lr %.2e, grad norm "
               "%.3g, %.0f tokens/s, %.2f GFLOP/s, %s\n", (unsigned long long)s->step, s->loss, s->valid_loss, bpb,
               s->lr, s->grad_norm, tps, gflops, el_s);
    }
    fflush(stdout);
    if (p->log && log_row(p, s, p->e) < 0)
        return p->failed = 1, -1;
    int save = train_interrupted || (p->a->ckpt_every && s->step % p->a->ckpt_every == 0);
    if (save && trainer_save(p->tr, p->ckpt, p->e) < 0)
        return p->failed = 1, -1;
    p->saved_on_stop = train_interrupted;
    return train_interrupted;
}

int train_write_sidecar(const Progress *p, const Model *m, uint64_t text_hash, Err *e)
{
    const TrainArgs *a = p->a;
    char path[4096];
    snprintf(path, sizeof path, "%s.json", a->out);
    OutFile o;
    if (outfile_open(&o, path, e) < 0)
        return -1;
    FILE *f = o.f;
    char sets[512] = "";
    for (size_t i = 0; i < a->mo.n_sets; i++)
        snprintf(sets + strlen(sets), sizeof sets - strlen(sets), " --set %s", a->mo.sets[i]);
    fprintf(f, "{\n  \"kvscope\": \"%s\",\n  \"model\": \"%s\",\n  \"tokenizer\": \"%s\",\n  \"command\": \"kvscope "
            "train --model %s%s --init %s --text %s --valid %s --out %s --steps %zu --batch %zu --seq-len %zu --lr %g "
            "--warmup %zu --weight-decay %g --clip %g --seed %llu%s\",\n", KVSCOPE_VERSION, m->cfg.name,
            m->cfg.tokenizer, a->mo.model, sets, a->init ? a->init : "scratch", a->text, a->valid, a->out,
            a->t.steps, a->t.batch, a->t.seq_len, a->t.opt.lr, a->t.opt.warmup, a->t.opt.weight_decay, a->t.opt.clip,
            (unsigned long long)a->t.seed, a->f16 ? " --f16" : "");
    if (m->cfg.add_bos) /* --weights FILE.kvw reads it: the header cannot say so */
        fprintf(f, "  \"bos_token\": %d,\n", m->cfg.bos_token);
    if (a->resume)
        fprintf(f, "  \"resumed_from\": \"%s\",\n  \"resumed_at_step\": %llu,\n", a->resume,
                (unsigned long long)p->first_step);
    const double steps_run = (double)(a->t.steps - p->first_step);
    const double tokens = steps_run * (double)(a->t.batch * a->t.seq_len);
    fprintf(f, "  \"seed\": %llu,\n  \"isa\": \"%s\",\n  \"threads\": %zu,\n  \"text_fnv1a64\": \"%016llx\",\n"
            "  \"steps\": %zu,\n"
            "  \"seconds\": %.1f,\n  \"flops\": %.4e,\n  \"tokens_per_second\": %.0f,\n  \"gflops_per_second\": %.3f,\n"
            "  \"matmul_gflops_per_second\": %.3f,\n  \"train_bits_per_byte\": %.4f,\n  \"valid_bits_per_byte\": %.4f,\n"
            "  \"parameters\": %zu\n}\n",
            (unsigned long long)a->t.seed, m->kern->isa, pool_threads(), (unsigned long long)text_hash, a->t.steps,
            p->seconds, p->flops,
            p->seconds > 0 ? tokens / p->seconds : 0.0, p->seconds > 0 ? p->flops / p->seconds / 1e9 : 0.0,
            p->matmul_gflops, bits_per_byte(p->last_train, p->train_bytes_per_token),
            bits_per_byte(p->last_valid, p->bytes_per_token), model_param_floats(&m->cfg));
    return outfile_commit(&o, e);
}
