/* bench_split.h: `kvscope bench --split-k`: one decode step of attention at
 * long contexts, in the flash form on one thread and split-K on two, in
 * one run (kernels/attend_split.h). */
#ifndef KVSCOPE_APP_BENCH_SPLIT_H
#define KVSCOPE_APP_BENCH_SPLIT_H

#include <stddef.h>

#include "report/out_format.h"
#include "util/machine.h"

typedef struct {
    const char *isa;
    const size_t *contexts; /* rows every step sees */
    size_t n_contexts;
    size_t reps;            /* rounds; each figure is their median */
    size_t ceiling;         /* one format's K and V rows at most this many bytes (machine_buffer_bytes) */
    const Machine *mach;
    OutFormat fmt;
} BenchSplitArgs;

/* Run it and print; returns the exit code (errors printed). */
int bench_split(const BenchSplitArgs *a);

#endif
