/* plot_eval.c: what the figures on real text share: a trained model, the
 * held-out books through its tokenizer, caches, one sim/eval.h run. */
#include "plot/plot.h"

#include <stdlib.h>
#include <string.h>

#include "util/files.h"

#define MAX_TEXT_BYTES ((size_t)64 << 20)

int plot_heldout_path(char *path, size_t cap, Err *e)
{
    if (files_find("KVSCOPE_DATA", "data", "text/kjv-valid.txt", path, cap) < 0)
        return err_set(e, ERR_USAGE, "plot: data/text/kjv-valid.txt, the held-out text, is missing (is "
                       "KVSCOPE_DATA right?)");
    return 0;
}

int plot_eval_open(PlotEval *j, const char *model, size_t n, int past_context, Err *e)
{
    memset(j, 0, sizeof *j);
    char path[4096];
    if (plot_heldout_path(path, sizeof path, e) < 0)
        return -1;
    ModelOpts mo = { .model = model };
    size_t n_ids, text_len;
    if (setup_load_config(&mo, &j->trained, e) < 0 ||
        setup_text_ids(&j->trained, path, MAX_TEXT_BYTES, &j->ids, &j->bytes, &n_ids, &text_len, NULL, 0, e) < 0)
        return -1;
    Config cfg = j->trained;
    if (past_context)
        cfg.max_seq_len = n > cfg.max_seq_len ? n : cfg.max_seq_len; /* the cache decides what is kept */
    j->n = n < cfg.max_seq_len ? n : cfg.max_seq_len;
    if (n_ids < j->n)
        return err_set(e, ERR_RUNTIME, "plot: the held-out text makes %zu tokens, fewer than %zu", n_ids, j->n);
    if (setup_model(&cfg, NULL, 0, &j->m, e) < 0)
        return -1;
    j->model_ready = 1;
    return 0;
}

int plot_eval_add(PlotEval *j, const char *spec, Err *e)
{
    KvCache **caches = realloc(j->caches, (j->n_caches + 1) * sizeof *caches);
    if (caches)
        j->caches = caches;
    EvalResult *res = realloc(j->res, (j->n_caches + 1) * sizeof *res);
    if (res)
        j->res = res;
    if (!caches || !res)
        return err_set(e, ERR_RUNTIME, "out of memory");
    KvGeometry geo = model_kv_geometry(&j->m, 1);
    memset(&j->res[j->n_caches], 0, sizeof *j->res);
    if (!(j->caches[j->n_caches] = kv_open(spec, &geo, e)))
        return err_wrap(e, "plot: %s", spec);
    j->n_caches++;
    return 0;
}

static int tell_positions(void *user, size_t done, size_t total)
{
    const PlotCtx *ctx = user;
    ctx->progress(ctx->progress_user, "position", done, total);
    return 0;
}

int plot_eval_run(const PlotCtx *ctx, PlotEval *j, int per_position, Err *e)
{
    EvalOptions eo = { .prefill = j->prefill ? j->prefill : 1, .token_bytes = j->bytes, .per_position = per_position,
                       .segments = EVAL_CI_SEGMENTS };
    if (eval_run(&j->m, j->caches, j->n_caches, j->ids, j->n, &eo, j->res, ctx->progress ? tell_positions : NULL,
                 (void *)ctx, e) < 0)
        return -1;
    size_t(*pairs)[2] = malloc((j->n_caches ? j->n_caches : 1) * sizeof *pairs); /* every cache minus the first */
    if (!pairs)
        return err_set(e, ERR_RUNTIME, "out of memory");
    for (size_t i = 1; i < j->n_caches; i++) {
        pairs[i - 1][0] = i;
        pairs[i - 1][1] = 0;
    }
    const int rc = eval_intervals(j->res, j->n_caches, (const size_t(*)[2])pairs, j->n_caches - 1, &j->iv, e);
    free(pairs);
    return rc;
}

void plot_eval_free(PlotEval *j)
{
    for (size_t i = 0; i < j->n_caches; i++) {
        eval_result_free(&j->res[i]);
        kv_free(j->caches[i]);
    }
    free(j->caches);
    free(j->res);
    eval_intervals_free(&j->iv);
    if (j->model_ready)
        model_free(&j->m);
    free(j->ids);
    free(j->bytes);
    memset(j, 0, sizeof *j);
}
