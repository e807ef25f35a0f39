/* bench_decode.h: `kvscope bench --decode`: a whole model's decode step on
 * one core, after the read bandwidth, against its byte limit. */
#ifndef KVSCOPE_APP_BENCH_DECODE_H
#define KVSCOPE_APP_BENCH_DECODE_H

#include <stddef.h>

#include "report/out_format.h"

typedef struct {
    const char *isa;
    const char *model;        /* a real shape, run with shared weights */
    const char *weights;      /* or a checkpoint, with its own weights (NULL: model) */
    int int_dot;              /* 1 (--int-dot): integer dots for the q8_0 cache's keys and stored q8_0/q4_0
                                 matrices; -1 (--int-dot=off): for neither; 0: the matrices only */
    const size_t *contexts;   /* rows cached before the timed steps */
    size_t n_contexts;
    size_t steps;             /* timed steps per context and cache (their median) */
    size_t read_bytes;        /* the bandwidth buffer */
    size_t reps;              /* bandwidth rounds */
    OutFormat fmt;
    int quiet;                /* no progress line */
} BenchDecodeArgs;

/* Run it and print; returns the exit code (errors printed). */
int bench_decode(const BenchDecodeArgs *a);

#endif
