/* plot_kernels.c: figure 5, from the kernels themselves: decode attention
 * timed against this machine's read bandwidth (kernels/bench.h, the
 * library behind `kvscope bench`). */
#include "plot/plot.h"
#include "util/human.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bench.h"

#define MIB ((size_t)1 << 20)

/* --- figure 5: decode attention GB/s per format ----------------------------- */

#define BW_HEAD_DIM 128
#define BW_GROUP 4              /* query heads per KV head, as llama-3-8b */
#define BW_CONTEXT 8192
#define BW_CONTEXT_QUICK 1024
#define BW_REPS 5
#define BW_POOL_CEILING (128 * MIB) /* the cold data at most: 4x a 32 MiB LLC */
#define BW_READ_BYTES (256 * MIB)   /* the bandwidth read, memory allowing */

static double gbps(const BenchResult *r)
{
    return r->seconds > 0 ? (double)(r->bytes + r->view_bytes) / r->seconds / 1e9 : 0;
}

/* What figure 5 measures, and at which sizes. */
typedef struct {
    const Kernels *k;
    size_t target;            /* the cold pool: each step's rows come from memory */
    size_t read_bytes;        /* the bandwidth buffer */
    size_t context, reps;
    BenchResult bw;           /* the fastest read loop's */
    const char *read_how;     /* its name */
    BenchResult res[FMT_COUNT][2]; /* flash, naive, cold, per format */
    PlotRuns runs;            /* the read, then each format's two forms */
} BwRun;

static const AttendAlgo bw_algos[2] = { ATTEND_FLASH, ATTEND_NAIVE };

static int measure_read(BwRun *b, Err *e)
{
    BenchRead br = { 0 };
    BenchResult loops[BENCH_MAX_LOOPS];
    const char *names[BENCH_MAX_LOOPS];
    if (bench_read_init(&br, b->read_bytes, e) < 0) {
        bench_read_free(&br);
        return -1;
    }
    size_t best = bench_fastest(loops, bench_read_each(b->k, &br, b->reps, loops, names));
    bench_read_free(&br);
    b->bw = loops[best];
    b->read_how = names[best];
    plot_runs_done(&b->runs);
    if (!(b->bw.max_rel_diff <= BENCH_TOLERANCE))
        return err_set(e, ERR_RUNTIME, "plot: the bandwidth read summed wrong (%.3g)", b->bw.max_rel_diff);
    return 0;
}

/* Flash and naive decode steps over cold K/V copies of every format. */
static int measure_formats(BwRun *b, uint64_t seed, Err *e)
{
    BenchScratch sc = { 0 };
    BenchPool pool = { 0 };
    BenchKv kv = { 0 };
    BenchQuery bq = { 0 };
    BenchResult rounds[BW_REPS];
    /* room for the copies of any format: at most target + one copy, or two
     * copies, and no copy is larger than f32's (plus alignment) */
    const size_t f32_copy = 2 * b->context * format_row_bytes(FMT_F32, BW_HEAD_DIM) + 128;
    int rc = bench_scratch_init(&sc, b->context, BW_GROUP, BW_HEAD_DIM, e);
    if (rc == 0)
        rc = bench_pool_init(&pool, b->target + 2 * f32_copy, b->target, e);
    for (int f = 0; f < FMT_ROW_COUNT && rc == 0; f++) {
        if ((rc = bench_kv_init(&kv, (Format)f, b->context, BW_HEAD_DIM, seed, e)) < 0 ||
            (rc = bench_query_init(&bq, &kv, BW_GROUP, 0, &sc, seed + 1, e)) < 0 ||
            (rc = bench_pool_fill(&pool, &kv, e)) < 0)
            break;
        for (int a = 0; a < 2 && rc == 0; a++) {
            for (size_t r = 0; r < b->reps; r++)
                bench_attend(b->k, &pool, &bq, &sc, bw_algos[a], 1, 0, &rounds[r]);
            bench_summarize(&b->res[f][a], rounds, b->reps);
            plot_runs_done(&b->runs);
            if (!(b->res[f][a].max_rel_diff <= BENCH_TOLERANCE))
                rc = err_set(e, ERR_RUNTIME, "plot: %s attention on %s differs from the reference by %.3g",
                             attend_algo_name(bw_algos[a]), format_name((Format)f), b->res[f][a].max_rel_diff);
        }
        bench_query_free(&bq);
        bench_kv_free(&kv);
    }
    bench_query_free(&bq);
    bench_kv_free(&kv);
    bench_pool_free(&pool);
    bench_scratch_free(&sc);
    return rc;
}

/* bandwidth.tsv; *best_fmt is the format flash reads fastest. */
static int write_table(const PlotCtx *ctx, const BwRun *b, int *best_fmt, Err *e)
{
    FILE *f = plot_open(ctx, "bandwidth.tsv", e);
    if (!f)
        return -1;
    fputs("format\tbits_per_value\tbytes_per_step\tflash_seconds\tflash_gb_per_s\tnaive_seconds\tnaive_gb_per_s\t"
          "bandwidth_gb_per_s\n", f);
    *best_fmt = 0;
    for (int i = 0; i < FMT_ROW_COUNT; i++) {
        const BenchResult *r = b->res[i];
        double bits = 8.0 * (double)format_row_bytes((Format)i, BW_HEAD_DIM) / BW_HEAD_DIM;
        fprintf(f, "%s\t%.3f\t%" PRIu64 "\t%.9f\t%.3f\t%.9f\t%.3f\t%.3f\n", format_name((Format)i), bits,
                r[0].bytes, r[0].seconds, gbps(&r[0]), r[1].seconds, gbps(&r[1]), gbps(&b->bw));
        if (gbps(&r[0]) > gbps(&b->res[*best_fmt][0]))
            *best_fmt = i;
    }
    return plot_close(f, "bandwidth.tsv", e);
}

static int write_labels(const PlotCtx *ctx, const BwRun *b, Err *e)
{
    char caption[768], llc_s[128], pool_s[32], read_s[32];
    snprintf(caption, sizeof caption,
             "one decode step over one KV head: context %zu, head_dim %d, %d query heads share it (GQA); K/V seed %"
             PRIu64 "\ncold: steps cycle through %s of K/V copies (LLC %s)\nbandwidth: a %s read, fastest loop %s"
             "\nkernels %s; every figure the median of %zu runs%s; machine: %s\nlabels: the bytes the step read over "
             "its time, as a share of the read bandwidth; the black bars: those bytes at the read bandwidth",
             b->context, BW_HEAD_DIM, BW_GROUP, ctx->seed, human_bytes(pool_s, sizeof pool_s, (double)b->target),
             machine_llc_text(&ctx->mach, llc_s, sizeof llc_s), human_bytes(read_s, sizeof read_s, (double)b->read_bytes),
             b->read_how, b->k->isa, b->reps, ctx->quick ? " (quick: sizes too small to mean anything)" : "",
             ctx->machine);
    FILE *labels = plot_labels_open(ctx, "bandwidth", "Decode attention: one step's time per cache format, and the "
                                    "floor its bytes set", caption, e);
    if (!labels)
        return -1;
    fprintf(labels, "bandwidth_gbps = %.3f\ntile_rows = %d\n", gbps(&b->bw), ATTEND_TILE);
    return plot_close(labels, "bandwidth", e);
}

int plot_bandwidth(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    BwRun b = { .k = ctx->kern };
    b.target = ctx->quick ? 8 * MIB : machine_buffer_bytes(&ctx->mach, 4 * ctx->mach.llc, BW_POOL_CEILING);
    b.read_bytes = ctx->quick ? 16 * MIB : machine_buffer_bytes(&ctx->mach, BW_READ_BYTES, BW_READ_BYTES);
    b.context = ctx->quick ? BW_CONTEXT_QUICK : BW_CONTEXT;
    b.reps = ctx->quick ? 1 : BW_REPS;
    plot_runs_begin(&b.runs, ctx, "run", 1 + 2 * FMT_ROW_COUNT);
    int best_fmt;
    if (measure_read(&b, e) < 0 || measure_formats(&b, ctx->seed, e) < 0 || write_table(ctx, &b, &best_fmt, e) < 0 ||
        write_labels(ctx, &b, e) < 0)
        return -1;
    const double bw = gbps(&b.bw), best = gbps(&b.res[best_fmt][0]);
    snprintf(note->note, sizeof note->note, "read bandwidth %.1f GB/s; flash reads fastest on %s: %.1f GB/s (%.0f%%)",
             bw, format_name((Format)best_fmt), best, bw > 0 ? 100 * best / bw : 0);
    return 0;
}
