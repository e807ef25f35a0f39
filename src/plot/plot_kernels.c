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
#define BW_ASSUMED_LLC (32 * MIB) /* when the system does not say */

static double gbps(const BenchResult *r)
{
    return r->seconds > 0 ? (double)(r->bytes + r->view_bytes) / r->seconds / 1e9 : 0;
}

int plot_bandwidth(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    static const AttendAlgo algos[2] = { ATTEND_FLASH, ATTEND_NAIVE };
    const char *llc_source;
    size_t llc = bench_llc_bytes(&llc_source);
    const size_t llc_or = llc ? llc : BW_ASSUMED_LLC;
    /* cold data at 4x the LLC: each step's rows come from memory */
    const size_t target = ctx->quick ? 8 * MIB : 4 * llc_or;
    const size_t read_bytes = ctx->quick ? 16 * MIB : (8 * llc_or > 256 * MIB ? 8 * llc_or : 256 * MIB);
    const size_t context = ctx->quick ? BW_CONTEXT_QUICK : BW_CONTEXT;
    const size_t reps = ctx->quick ? 1 : BW_REPS;
    const Kernels *k = ctx->kern;

    BenchRead br = { 0 };
    BenchScratch sc = { 0 };
    BenchPool pool = { 0 };
    BenchKv kv = { 0 };
    BenchQuery bq = { 0 };
    BenchResult rounds[BW_REPS], loops[BENCH_N_LOOPS], bw, res[FMT_COUNT][2];
    const char *names[BENCH_N_LOOPS], *read_how = "";
    int rc = bench_read_init(&br, read_bytes, e);
    if (rc == 0) {
        size_t best = bench_fastest(loops, bench_read_each(k, &br, reps, loops, names));
        bw = loops[best];
        read_how = names[best];
    }
    bench_read_free(&br);
    if (rc == 0 && !(bw.max_rel_diff <= BENCH_TOLERANCE))
        rc = err_set(e, ERR_RUNTIME, "plot: the bandwidth read summed wrong (%.3g)", bw.max_rel_diff);
    const double bw_gbps = rc == 0 ? gbps(&bw) : 0;

    /* room for the copies of any format: at most target + one copy, or two
     * copies, and no copy is larger than f32's (plus alignment) */
    const size_t f32_copy = 2 * context * format_row_bytes(FMT_F32, BW_HEAD_DIM) + 128;
    if (rc == 0)
        rc = bench_scratch_init(&sc, context, BW_GROUP, BW_HEAD_DIM, e);
    if (rc == 0)
        rc = bench_pool_init(&pool, target + 2 * f32_copy, target, e);
    for (int f = 0; f < FMT_ROW_COUNT && rc == 0; f++) {
        if ((rc = bench_kv_init(&kv, (Format)f, context, BW_HEAD_DIM, ctx->seed, e)) < 0 ||
            (rc = bench_query_init(&bq, &kv, BW_GROUP, &sc, ctx->seed + 1, e)) < 0 ||
            (rc = bench_pool_fill(&pool, &kv, e)) < 0)
            break;
        for (int a = 0; a < 2 && rc == 0; a++) {
            for (size_t r = 0; r < reps; r++)
                bench_attend(k, &pool, &bq, &sc, algos[a], 1, 0, &rounds[r]);
            bench_summarize(&res[f][a], rounds, reps);
            if (!(res[f][a].max_rel_diff <= BENCH_TOLERANCE))
                rc = err_set(e, ERR_RUNTIME, "plot: %s attention on %s differs from the reference by %.3g",
                             attend_algo_name(algos[a]), format_name((Format)f), res[f][a].max_rel_diff);
        }
        bench_query_free(&bq);
        bench_kv_free(&kv);
    }
    bench_query_free(&bq);
    bench_kv_free(&kv);
    bench_pool_free(&pool);
    bench_scratch_free(&sc);
    if (rc < 0)
        return -1;

    FILE *f = plot_open(ctx, "bandwidth.tsv", e);
    if (!f)
        return -1;
    fputs("format\tbits_per_value\tbytes_per_step\tflash_seconds\tflash_gb_per_s\tnaive_seconds\tnaive_gb_per_s\t"
          "bandwidth_gb_per_s\n", f);
    double best = 0;
    int best_fmt = 0;
    for (int i = 0; i < FMT_ROW_COUNT; i++) {
        double bits = 8.0 * (double)format_row_bytes((Format)i, BW_HEAD_DIM) / BW_HEAD_DIM;
        fprintf(f, "%s\t%.3f\t%" PRIu64 "\t%.9f\t%.3f\t%.9f\t%.3f\t%.3f\n", format_name((Format)i), bits,
                res[i][0].bytes, res[i][0].seconds, gbps(&res[i][0]), res[i][1].seconds, gbps(&res[i][1]), bw_gbps);
        if (gbps(&res[i][0]) > best)
            best = gbps(&res[i][0]), best_fmt = i;
    }
    if (plot_close(f, "bandwidth.tsv", e) < 0)
        return -1;

    char caption[512], llc_s[32], pool_s[32], read_s[32];
    snprintf(caption, sizeof caption,
             "one decode step over one KV head: context %zu, head_dim %d, %d query heads share it (GQA); K/V seed %"
             PRIu64 "\ncold: steps cycle through %s of K/V copies (LLC %s, %s); bandwidth: a %s read, fastest loop %s"
             "\nkernels %s; every figure the median of %zu runs%s; machine: %s",
             context, BW_HEAD_DIM, BW_GROUP, ctx->seed, human_bytes(pool_s, sizeof pool_s, (double)target),
             llc ? human_bytes(llc_s, sizeof llc_s, (double)llc) : "unknown", llc ? llc_source : "assumed 32 MiB",
             human_bytes(read_s, sizeof read_s, (double)read_bytes), read_how, k->isa, reps,
             ctx->quick ? " (quick: sizes too small to mean anything)" : "", ctx->machine);
    FILE *labels = plot_labels_open(ctx, "bandwidth", "Decode attention read rate per cache format vs this machine's "
                                    "read bandwidth", caption, e);
    if (!labels)
        return -1;
    fprintf(labels, "bandwidth_gbps = %.3f\n", bw_gbps);
    if (plot_close(labels, "bandwidth", e) < 0)
        return -1;
    snprintf(note->note, sizeof note->note, "read bandwidth %.1f GB/s; flash reads fastest on %s: %.1f GB/s (%.0f%%)",
             bw_gbps, format_name((Format)best_fmt), best, bw_gbps > 0 ? 100 * best / bw_gbps : 0);
    return 0;
}
