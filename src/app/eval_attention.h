/* eval_attention.h: `kvscope eval --attention-stats`: where a model's
 * attention goes on a text (sim/attn_stats.h measures, report/attn_report.h
 * prints). */
#ifndef KVSCOPE_APP_EVAL_ATTENTION_H
#define KVSCOPE_APP_EVAL_ATTENTION_H

#include <stddef.h>

#include "app/cli.h"
#include "report/out_format.h"
#include "sim/attn_stats.h"

#define EVAL_ATTN_WINDOWS 16

typedef struct {
    const ModelOpts *mo;
    const char *text, *text_label;
    size_t windows;   /* 0: EVAL_ATTN_WINDOWS */
    size_t len;       /* tokens a window; 0: the model's context */
    size_t tokens;    /* the text's first N tokens only; 0: all */
    OutFormat fmt;
    int quiet;
} EvalAttnOpts;

/* Measure and print; the exit status (cli_fail's on an error). */
int eval_attention_stats(const EvalAttnOpts *o);

#endif
