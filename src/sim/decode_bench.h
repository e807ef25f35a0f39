/* decode_bench.h: one decode step of a whole model, timed against what its
 * bytes alone would cost.
 *
 * A decode step of a long-context model reads every weight once and every
 * cached K/V row once, and does little arithmetic per byte: its time is
 * bounded below by (weight bytes + K/V bytes) / read bandwidth, the byte
 * limit. The cache is filled to the context with seeded rows (a prefill
 * of that length would take minutes and change nothing the step reads),
 * then steps are timed one by one; the kernels count the bytes they read. */
#ifndef KVSCOPE_SIM_DECODE_BENCH_H
#define KVSCOPE_SIM_DECODE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "util/err.h"

typedef struct {
    size_t context;           /* rows cached before the first timed step */
    size_t steps;             /* decode steps timed (their median is kept) */
    double seconds;           /* median seconds of one step */
    double seconds_min, seconds_max;
    uint64_t weight_bytes;    /* read by one step, as the kernels counted */
    uint64_t kv_bytes;        /* K/V read by one step (the median step's) */
    size_t cache_bytes;       /* the cache's bytes in use after the steps */
} DecodeBench;

/* Fill a cache `spec` (one sequence) of model m to r->context rows, then
 * time r->steps decode steps (at most 64). m's max_seq_len must hold
 * context + steps. ERR_USAGE for a spec that cannot hold them, ERR_RUNTIME
 * for memory; *r is filled on success. */
int decode_bench_run(const Model *m, const char *spec, DecodeBench *r, Err *e);

/* Seconds the step's bytes take at `bandwidth` bytes/s: the byte limit. */
double decode_bench_limit(const DecodeBench *r, double bandwidth);

#endif
