/* eval_attention.c: `kvscope eval --attention-stats` (eval_attention.h). */
#include "app/eval_attention.h"

#include <stdio.h>
#include <stdlib.h>

#include "app/commands.h"
#include "app/progress_line.h"
#include "report/attn_report.h"
#include "sim/attn_stats.h"
#include "sim/setup.h"

#define MAX_TEXT_BYTES ((size_t)64 << 20)

int eval_attention_stats(const EvalAttnOpts *o)
{
    Err e = { 0 };
    Config cfg;
    int *ids = NULL;
    size_t n = 0, text_len = 0;
    if (setup_load_config(o->mo, &cfg, &e) < 0)
        return cli_fail(&e);
    if (cfg.architecture == ARCH_ENCDEC) {
        err_set(&e, ERR_USAGE, "eval: model '%s' is an encoder-decoder; --attention-stats reads a decoder-only "
                "model", cfg.name);
        return cli_fail(&e);
    }
    if (setup_text_ids(&cfg, o->text, MAX_TEXT_BYTES, &ids, NULL, &n, &text_len, NULL, 0, &e) < 0) {
        free(ids);
        return cli_fail(&e);
    }
    if (o->tokens && o->tokens < n)
        n = o->tokens;
    AttnStatsOpts so = { .windows = o->windows ? o->windows : EVAL_ATTN_WINDOWS,
                         .len = o->len ? o->len : cfg.max_seq_len, .from = 1 };
    Model m;
    ProgressLine line;
    progress_line_init(&line, o->quiet);
    progress_line_begin(&line, "kvscope eval --attention-stats: the model", NULL);
    AttnStats st;
    int rc = setup_model(&cfg, o->mo->isa, 0, &m, &e);
    if (rc == 0) {
        progress_line_begin(&line, "kvscope eval --attention-stats: the windows", NULL);
        rc = attn_stats_measure(&m, ids, n, &so, &st, &e);
        progress_line_end(&line);
        if (rc == 0) {
            AttnRun run = { .model = cfg.name, .weights = m.source, .text = o->text_label,
                            .bos = cfg.add_bos ? cfg.bos_token : -1, .opts = so };
            attn_report(stdout, o->fmt, &run, &st);
            attn_stats_free(&st);
        }
        model_free(&m);
    } else
        progress_line_end(&line);
    free(ids);
    return rc < 0 ? cli_fail(&e) : EXIT_OK;
}
