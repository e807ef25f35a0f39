/* plot_loss.c: figure 11, the loss curves of the shipped trained models:
 * the training and validation bits per byte against the tokens trained on,
 * read from the per-step logs `make models` leaves beside the weights
 * (data/weights/NAME.log.tsv, written by `kvscope train --log`). */
#include "plot/plot.h"

#include <stdlib.h>
#include <string.h>

#include "util/files.h"

/* The models drawn: the first is loss.tsv, the others loss.NAME.tsv. A
 * model trained as the one before it (the same text, steps and seed) with
 * one change is dashed: their curves lie on each other. */
static const struct {
    const char *name;
    int dashed;
} models[] = { { "kjv-small", 0 }, { "kjv-tiny", 0 }, { "kjv-base", 0 }, { "kjv-base-sink", 1 } };
#define N_MODELS (sizeof models / sizeof models[0])
/* Steps in the training loss's running mean: one step's batch is noisy. */
#define MEAN_STEPS 25
#define MAX_LOG_BYTES ((size_t)16 << 20)

typedef struct {
    size_t rows;
    double last_valid, last_tokens; /* last_valid < 0: never measured */
} LogSummary;

/* One training log into a figure table: tokens, step, the training bits per
 * byte and their running mean, the validation bits per byte ("-" between
 * measurements). */
static int convert_log(const PlotCtx *ctx, const char *model, const char *table, LogSummary *sum, Err *e)
{
    char rel[128], path[4096];
    snprintf(rel, sizeof rel, "weights/%s.log.tsv", model);
    if (files_find("KVSCOPE_DATA", "data", rel, path, sizeof path) < 0)
        return err_set(e, ERR_RUNTIME, "plot loss: no training log data/%s (`make models` writes it)", rel);
    char *text;
    size_t len;
    if (files_read_text(path, MAX_LOG_BYTES, &text, &len, e) < 0)
        return -1;
    FILE *f = plot_open(ctx, table, e);
    if (!f) {
        free(text);
        return -1;
    }
    fprintf(f, "tokens\tstep\ttrain_bits_per_byte\ttrain_bits_per_byte_mean%d\tvalid_bits_per_byte\n", MEAN_STEPS);
    double ring[MEAN_STEPS] = { 0 }, total = 0;
    *sum = (LogSummary){ .last_valid = -1 };
    int rc = 0;
    char *save = NULL;
    strtok_r(text, "\n", &save); /* the header */
    for (char *line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned long long step;
        double lr, loss, train_bpb, grad, tokens;
        char valid[32];
        if (sscanf(line, "%llu %lf %lf %lf %31s %lf %lf", &step, &lr, &loss, &train_bpb, valid, &grad, &tokens) != 7) {
            rc = err_set(e, ERR_USAGE, "plot loss: %s, row %zu: not a `kvscope train --log` row", path, sum->rows + 2);
            break;
        }
        const size_t slot = sum->rows % MEAN_STEPS;
        total += train_bpb - ring[slot];
        ring[slot] = train_bpb;
        sum->rows++;
        const size_t n = sum->rows < MEAN_STEPS ? sum->rows : MEAN_STEPS;
        fprintf(f, "%.0f\t%llu\t%.5f\t%.5f\t%s\n", tokens, step, train_bpb, total / (double)n, valid);
        if (strcmp(valid, "-") != 0)
            sum->last_valid = strtod(valid, NULL);
        sum->last_tokens = tokens;
    }
    free(text);
    if (rc == 0 && (sum->rows == 0 || sum->last_valid < 0))
        rc = err_set(e, ERR_USAGE, "plot loss: %s has no validation loss in it", path);
    const int closed = plot_close(f, table, rc < 0 ? NULL : e);
    return rc < 0 ? -1 : closed;
}

int plot_loss(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    LogSummary sum[N_MODELS];
    char caption[2048] = "", table[96], names[256] = "", tables[512] = "", dashes[64] = "";
    size_t used = 0, names_used = 0, tables_used = 0, dashes_used = 0;
    for (size_t i = 0; i < N_MODELS; i++) {
        if (i == 0)
            snprintf(table, sizeof table, "loss.tsv");
        else
            snprintf(table, sizeof table, "loss.%s.tsv", models[i].name);
        if (convert_log(ctx, models[i].name, table, &sum[i], e) < 0)
            return -1;
        names_used += (size_t)snprintf(names + names_used, sizeof names - names_used, "%s%s", i ? " " : "", models[i].name);
        tables_used += (size_t)snprintf(tables + tables_used, sizeof tables - tables_used, "%s%s", i ? " " : "", table);
        dashes_used += (size_t)snprintf(dashes + dashes_used, sizeof dashes - dashes_used, "%s%d", i ? " " : "",
                                        models[i].dashed ? 2 : 1);
        ModelOpts mo = { .model = models[i].name };
        Config c;
        if (setup_load_config(&mo, &c, e) < 0)
            return -1;
        used += (size_t)snprintf(caption + used, sizeof caption - used,
                                 "%s%s: %zu parameters (d_model %zu, %zu layers, %zu/%zu heads%s, context %zu), %zu "
                                 "steps, %.2fM tokens, validation %.3f bits/byte at the end",
                                 i ? "\n" : "", models[i].name, model_param_floats(&c), c.d_model, c.n_layers, c.n_heads,
                                 c.n_kv_heads, c.attn_sink == SINK_LEARNED ? ", a learnt sink a head" : "",
                                 c.max_seq_len, sum[i].rows, sum[i].last_tokens / 1e6,
                                 sum[i].last_valid);
    }
    snprintf(caption + used, sizeof caption - used,
             "\nDashed: trained as the model above it, with one change.\nRead from data/weights/NAME.log.tsv (kvscope train --log, run by make models); held-out text: the "
             "books of data/README.md's split. Training loss: each step's batch, and its mean over %d steps.",
             MEAN_STEPS);
    FILE *labels = plot_labels_open(ctx, "loss", "Training the shipped models: bits per byte of text", caption, e);
    if (!labels)
        return -1;
    /* the tables and the models' names, word i of each for model i */
    fprintf(labels, "mean_steps = %d\ntables = \"%s\"\nnames = \"%s\"\ndashes = \"%s\"\n", MEAN_STEPS, tables,
            names, dashes);
    used = (size_t)snprintf(note->note, sizeof note->note, "validation at the end:");
    for (size_t i = 0; i < N_MODELS && used < sizeof note->note; i++)
        used += (size_t)snprintf(note->note + used, sizeof note->note - used, "%s %s %.3f", i ? "," : "", models[i].name,
                                 sum[i].last_valid);
    if (used < sizeof note->note)
        snprintf(note->note + used, sizeof note->note - used, " bits per byte");
    return plot_close(labels, "loss", e);
}
