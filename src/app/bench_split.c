/* bench_split.c: `kvscope bench --split-k` (bench_split.h).
 *
 * For each context and format: one KV head's rows (head_dim 128), a GQA
 * group of 4 query heads at the last position, and one decode step timed
 * two ways in turn, round after round: the flash form on this thread, and
 * split-K with the rows cut into 2 parts on 2 threads of the pool. The
 * same copy of the rows every step: at the short contexts it sits in the
 * caches, at the long ones it cannot. Each output is checked against the
 * reference kernels' naive form, and the split one against flash. */
#include "app/bench_split.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "kernels/attend_split.h"
#include "kernels/bench.h"
#include "util/clock.h"
#include "util/pool.h"

#define HD 128
#define GROUP 4
#define THREADS 2
#define STEP_SECONDS 0.02 /* each round times at least this long per figure */
#define SEED 20240601u

static const Format formats[] = { FMT_F16, FMT_Q8_0, FMT_Q4_0 };
#define N_FORMATS (sizeof formats / sizeof formats[0])

/* The norm-wise difference over the outputs' bound, as test_attend_split
 * takes it: the root mean square of x - ref over the largest |value| the
 * rows hold (an output is a weighted mean of value rows). */
static double rms_over_bound(const float *x, const float *ref, size_t n, double bound)
{
    double sq = 0.0;
    for (size_t i = 0; i < n; i++)
        sq += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
    return sqrt(sq / (double)n) / bound;
}

/* The largest |value| of kv's V rows. */
static double values_bound(const BenchKv *kv)
{
    const KvBlock blk = bench_kv_block(kv, kv->master);
    float k[HD], v[HD];
    double big = 0.0;
    for (size_t r = 0; r < kv->context; r++) {
        block_decode_row(codec_ref, &blk, r, HD, k, v);
        for (size_t i = 0; i < HD; i++)
            big = fmax(big, fabs((double)v[i]));
    }
    return big;
}

/* max |x - ref| / max |ref| */
static double rel_diff(const float *x, const float *ref, size_t n)
{
    double d = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double a = fabs((double)x[i] - ref[i]);
        d = a > d || a != a ? a : d;
        scale = fmax(scale, fabs((double)ref[i]));
    }
    return scale > 0.0 ? d / scale : d;
}

/* Seconds per step of attend_split(parts) over a, at least STEP_SECONDS of steps. */
static double time_steps(const Kernels *k, const AttnArgs *a, size_t parts)
{
    size_t steps = 1;
    double t0 = clock_seconds();
    attend_split(k, a, parts, NULL);
    const double once = clock_seconds() - t0;
    if (once < STEP_SECONDS)
        steps = (size_t)(STEP_SECONDS / (once > 1e-7 ? once : 1e-7)) + 1;
    t0 = clock_seconds();
    for (size_t i = 0; i < steps; i++)
        attend_split(k, a, parts, NULL);
    return (clock_seconds() - t0) / (double)steps;
}

typedef struct {
    size_t context;
    Format fmt;
    int skipped;          /* its rows exceed the memory rule */
    size_t kv_bytes;      /* bytes one step reads */
    double t1, t2;        /* medians: one thread (flash), two (split) */
    double diff_ref;      /* worst of both against the naive reference */
    double diff_flash;    /* split against flash, norm-wise over the values' bound */
} Row;

static int measure(const BenchSplitArgs *o, const Kernels *k, Row *row, Err *e)
{
    BenchKv kv;
    BenchQuery bq;
    BenchScratch s = { 0 };
    float *flash = malloc(GROUP * HD * sizeof(float));
    int rc = -1;
    memset(&bq, 0, sizeof bq);
    if (!flash || bench_kv_init(&kv, row->fmt, row->context, HD, SEED, e) < 0)
        goto out_kv;
    s.scores = malloc(GROUP * row->context * sizeof(float)); /* split's parts share the naive form's scratch */
    if (!s.scores) {
        err_set(e, ERR_RUNTIME, "bench: out of memory for the scores of %zu rows", row->context);
        goto out;
    }
    if (bench_query_init(&bq, &kv, GROUP, 0, &s, SEED + 1, e) < 0)
        goto out;
    const KvBlock blk = bench_kv_block(&kv, kv.master);
    AttnArgs a = { .q = bq.q, .q_stride = GROUP * HD, .out = bq.out, .out_stride = GROUP * HD, .n_q = 1,
                   .group = GROUP, .head_dim = HD, .pos0 = row->context - 1, .blocks = &blk, .n_blocks = 1,
                   .scores = s.scores };
    Counters ctr = { 0 };
    attend_split(k, &a, 1, &ctr);
    memcpy(flash, bq.out, GROUP * HD * sizeof(float));
    row->kv_bytes = ctr.kv_bytes_read;
    row->diff_ref = rel_diff(flash, bq.ref, GROUP * HD);
    attend_split(k, &a, THREADS, NULL);
    row->diff_flash = rms_over_bound(bq.out, flash, GROUP * HD, values_bound(&kv));
    const double d2 = rel_diff(bq.out, bq.ref, GROUP * HD);
    row->diff_ref = d2 > row->diff_ref || d2 != d2 ? d2 : row->diff_ref;
    double t1[BENCH_MAX_REPS], t2[BENCH_MAX_REPS];
    for (size_t r = 0; r < o->reps; r++) { /* in turn, so a slow spell touches both */
        t1[r] = time_steps(k, &a, 1);
        t2[r] = time_steps(k, &a, THREADS);
    }
    row->t1 = bench_median(t1, o->reps);
    row->t2 = bench_median(t2, o->reps);
    rc = 0;
out:
    bench_query_free(&bq);
    free(s.scores);
    bench_kv_free(&kv);
out_kv:
    free(flash);
    return rc;
}

static void print_rows(const BenchSplitArgs *o, const Kernels *k, const Row *rows, size_t n)
{
    if (o->fmt == OUT_TSV) {
        printf("context\tformat\tkv_bytes\tseconds_1_thread\tseconds_2_threads\tspeedup\trms_diff_vs_flash\t"
               "max_rel_diff_vs_ref\n");
        for (size_t i = 0; i < n; i++)
            if (!rows[i].skipped)
                printf("%zu\t%s\t%zu\t%.9g\t%.9g\t%.4f\t%.3g\t%.3g\n", rows[i].context, format_name(rows[i].fmt),
                       rows[i].kv_bytes, rows[i].t1, rows[i].t2, rows[i].t1 / rows[i].t2, rows[i].diff_flash,
                       rows[i].diff_ref);
        return;
    }
    printf("split-K decode attention: one KV head, head_dim %d, G = %d query heads, the query at the last\n"
           "position; flash on 1 thread against the rows cut into %d parts on %d threads, merged by the\n"
           "log-sum-exp rule. ISA %s, %zu CPUs usable, median of %zu rounds (the same rows every step).\n\n",
           HD, GROUP, THREADS, THREADS, k->isa, o->mach->cpus, o->reps);
    printf("%9s  %-6s %10s %12s %12s %8s %11s\n", "context", "format", "K+V MiB", "1 thread", "2 threads", "speed-up",
           "vs flash");
    for (size_t i = 0; i < n; i++) {
        const Row *r = &rows[i];
        if (r->skipped) {
            printf("%9zu  %-6s skipped: its rows exceed the memory rule (an eighth of what is available)\n", r->context,
                   format_name(r->fmt));
            continue;
        }
        printf("%9zu  %-6s %10.1f %9.3f ms %9.3f ms %7.2fx %11.1e\n", r->context, format_name(r->fmt),
               (double)r->kv_bytes / (1 << 20), r->t1 * 1e3, r->t2 * 1e3, r->t1 / r->t2, r->diff_flash);
    }
    if (o->mach->cpus < THREADS)
        printf("\nthis process may use %zu CPU: the two threads take turns, so no speed-up is possible\n",
               o->mach->cpus);
    printf("\nspeed-up: the 1-thread time over the 2-thread time; vs flash: the root mean\n"
           "square of split - flash over the largest |value| stored (an output is a weighted mean of values).\n"
           "Other work on the machine slows either; compare rows of one run.\n");
}

int bench_split(const BenchSplitArgs *o)
{
    Err e = { 0 };
    const Kernels *k = kernels_select(o->isa, &e);
    if (!k)
        return cli_fail(&e);
    if (pool_set_threads(THREADS, &e) < 0)
        return cli_fail(&e);
    const size_t n = o->n_contexts * N_FORMATS;
    Row *rows = calloc(n, sizeof *rows);
    if (!rows) {
        err_set(&e, ERR_RUNTIME, "bench: out of memory");
        return cli_fail(&e);
    }
    int rc = 0;
    size_t wrong = 0;
    for (size_t c = 0; c < o->n_contexts && rc == 0; c++)
        for (size_t f = 0; f < N_FORMATS && rc == 0; f++) {
            Row *r = &rows[c * N_FORMATS + f];
            r->context = o->contexts[c];
            r->fmt = formats[f];
            const size_t want = 2 * r->context * format_row_bytes(r->fmt, HD) + GROUP * r->context * sizeof(float);
            if (machine_buffer_bytes(o->mach, want, o->ceiling) < want) {
                r->skipped = 1;
                continue;
            }
            rc = measure(o, k, r, &e);
            wrong += rc == 0 && (!(r->diff_ref <= BENCH_TOLERANCE) || !(r->diff_flash <= BENCH_TOLERANCE));
        }
    if (rc == 0)
        print_rows(o, k, rows, n);
    free(rows);
    if (rc < 0)
        return cli_fail(&e);
    if (wrong) {
        err_set(&e, ERR_RUNTIME, "bench: %zu result(s) differ from the reference by more than %.0e", wrong,
                BENCH_TOLERANCE);
        return cli_fail(&e);
    }
    return EXIT_OK;
}
