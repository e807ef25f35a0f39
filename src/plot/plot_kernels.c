/* plot_kernels.c: figures 5 and 6, from the kernels themselves: decode
 * attention timed against this machine's read bandwidth (kernels/bench.h,
 * the library behind `kvscope bench`), and the error each stored format
 * brings into attention (the reference codecs and attention kernels). */
#include "plot/plot.h"
#include "util/human.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
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

/* --- figure 6: quantization error per format -------------------------------- */

#define Q_CONTEXT 1024
#define Q_HEAD_DIM 128
#define Q_GROUP 4
#define Q_QUERIES 16
/* the histogram of |dequantized - original|: log10 bins from HIST_LO to HIST_HI */
#define HIST_LO (-8.0)
#define HIST_HI 0.0
#define HIST_STEP 0.25
#define HIST_BINS 32

typedef struct {
    double rms[2];      /* K, V element error, root mean square */
    double exact;       /* fraction of elements stored exactly */
    double attn[3];     /* mean relative output error: K only, V only, both quantized */
    double attn_max;    /* worst query, both quantized */
    double hist[HIST_BINS];
} QuantStats;

/* Quantize n rows of src with fmt into dst (row_bytes each), decode them back
 * into deq; add each element's error to st (rms sum and histogram). */
static void round_trip(Format fmt, const float *src, unsigned char *dst, float *deq, size_t rows, size_t hd,
                       QuantStats *st, int which, size_t *n_exact)
{
    const FormatOps *codec = &codec_ref[fmt];
    const size_t rb = format_row_bytes(fmt, hd);
    double sum = 0;
    for (size_t r = 0; r < rows; r++) {
        codec->quantize(dst + r * rb, src + r * hd, hd);
        codec->dequantize(deq + r * hd, dst + r * rb, hd);
        for (size_t i = 0; i < hd; i++) {
            double d = (double)deq[r * hd + i] - (double)src[r * hd + i];
            sum += d * d;
            if (d == 0) {
                (*n_exact)++;
                continue;
            }
            int b = (int)floor((log10(fabs(d)) - HIST_LO) / HIST_STEP);
            b = b < 0 ? 0 : b >= HIST_BINS ? HIST_BINS - 1 : b;
            st->hist[b] += 1;
        }
    }
    st->rms[which] = sqrt(sum / (double)(rows * hd));
}

/* ||a - b|| / ||b|| over n values */
static double rel_l2(const float *a, const float *b, size_t n)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        s += (double)b[i] * b[i];
    }
    return s > 0 ? sqrt(d / s) : sqrt(d);
}

int plot_quant_error(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    const size_t ctxlen = Q_CONTEXT, hd = Q_HEAD_DIM, G = Q_GROUP, nq = Q_QUERIES;
    const Kernels *ref = kernels_select("ref", e);
    if (!ref)
        return -1;
    const size_t max_rb = format_row_bytes(FMT_F32, hd);
    float *k = malloc(ctxlen * hd * sizeof *k), *v = malloc(ctxlen * hd * sizeof *v);
    float *q = malloc(nq * G * hd * sizeof *q), *out_ref = malloc(nq * G * hd * sizeof *out_ref);
    float *out = malloc(G * hd * sizeof *out), *scores = malloc(G * ctxlen * sizeof *scores);
    float *deq = malloc(ctxlen * hd * sizeof *deq);
    unsigned char *kq = malloc(ctxlen * max_rb), *vq = malloc(ctxlen * max_rb);
    QuantStats *st = calloc(FMT_COUNT, sizeof *st);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int rc = 0;
    if (!k || !v || !q || !out_ref || !out || !scores || !deq || !kq || !vq || !st || !rng) {
        rc = err_set(e, ERR_RUNTIME, "plot: out of memory");
        goto done;
    }
    /* K, V and the queries: N(0, 1), seeded */
    gsl_rng_set(rng, (unsigned long)ctx->seed);
    for (size_t i = 0; i < ctxlen * hd; i++)
        k[i] = (float)gsl_ran_gaussian(rng, 1.0);
    for (size_t i = 0; i < ctxlen * hd; i++)
        v[i] = (float)gsl_ran_gaussian(rng, 1.0);
    for (size_t i = 0; i < nq * G * hd; i++)
        q[i] = (float)gsl_ran_gaussian(rng, 1.0);

    /* one decode step per query: position ctxlen-1, seeing every row */
    const KvBlock exact = { .pos = 0, .n = ctxlen, .k = k, .v = v, .k_stride = hd * sizeof(float),
                            .v_stride = hd * sizeof(float), .k_fmt = FMT_F32, .v_fmt = FMT_F32 };
    AttnArgs a = { .q_stride = G * hd, .out_stride = G * hd, .n_q = 1, .group = G, .head_dim = hd,
                   .pos0 = ctxlen - 1, .n_blocks = 1, .scores = scores };
    for (size_t j = 0; j < nq; j++) {
        a.q = q + j * G * hd;
        a.out = out_ref + j * G * hd;
        a.blocks = &exact;
        attend(ref, ATTEND_NAIVE, &a, NULL);
    }
    for (int f = 0; f < FMT_ROW_COUNT; f++) {
        QuantStats *s = &st[f];
        const size_t rb = format_row_bytes((Format)f, hd);
        size_t n_exact = 0;
        round_trip((Format)f, k, kq, deq, ctxlen, hd, s, 0, &n_exact);
        round_trip((Format)f, v, vq, deq, ctxlen, hd, s, 1, &n_exact);
        s->exact = (double)n_exact / (double)(2 * ctxlen * hd);
        for (size_t b = 0; b < HIST_BINS; b++)
            s->hist[b] /= (double)(2 * ctxlen * hd);
        /* K only, V only, both in the format; the other stays f32 */
        for (int which = 0; which < 3; which++) {
            KvBlock blk = exact;
            if (which != 1)
                blk.k = kq, blk.k_stride = rb, blk.k_fmt = (Format)f;
            if (which != 0)
                blk.v = vq, blk.v_stride = rb, blk.v_fmt = (Format)f;
            a.blocks = &blk;
            double sum = 0;
            for (size_t j = 0; j < nq; j++) {
                a.q = q + j * G * hd;
                a.out = out;
                attend(ref, ATTEND_NAIVE, &a, NULL);
                double err = rel_l2(out, out_ref + j * G * hd, G * hd);
                sum += err;
                if (which == 2 && err > s->attn_max)
                    s->attn_max = err;
            }
            s->attn[which] = sum / (double)nq;
        }
    }

    FILE *fo = plot_open(ctx, "quant-error.tsv", e);
    if (!fo) {
        rc = -1;
        goto done;
    }
    fputs("format\tbits_per_value\tk_rms_error\tv_rms_error\texact_fraction\tattn_error_k_only\tattn_error_v_only\t"
          "attn_error_both\tattn_error_both_max\n", fo);
    for (int f = 0; f < FMT_ROW_COUNT; f++) {
        const QuantStats *s = &st[f];
        fprintf(fo, "%s\t%.3f\t%.6e\t%.6e\t%.6f\t%.6e\t%.6e\t%.6e\t%.6e\n", format_name((Format)f),
                8.0 * (double)format_row_bytes((Format)f, hd) / (double)hd, s->rms[0], s->rms[1], s->exact,
                s->attn[0], s->attn[1], s->attn[2], s->attn_max);
    }
    if ((rc = plot_close(fo, "quant-error.tsv", e)) < 0)
        goto done;
    if (!(fo = plot_open(ctx, "quant-error.hist.tsv", e))) {
        rc = -1;
        goto done;
    }
    fputs("log10_error_from\tlog10_error_to", fo);
    for (int f = 0; f < FMT_ROW_COUNT; f++)
        fprintf(fo, "\t%s", format_name((Format)f));
    fputc('\n', fo);
    for (size_t b = 0; b < HIST_BINS; b++) {
        fprintf(fo, "%.2f\t%.2f", HIST_LO + HIST_STEP * (double)b, HIST_LO + HIST_STEP * (double)(b + 1));
        for (int f = 0; f < FMT_ROW_COUNT; f++)
            fprintf(fo, "\t%.6f", st[f].hist[b]);
        fputc('\n', fo);
    }
    if ((rc = plot_close(fo, "quant-error.hist.tsv", e)) < 0)
        goto done;

    char caption[512];
    snprintf(caption, sizeof caption,
             "K, V and queries ~ N(0, 1) (gsl mt19937 seed %" PRIu64 "): context %zu, head_dim %zu, %zu query "
             "heads per KV head, %zu decode queries\nreference codecs and naive attention (ref kernels); output "
             "error: ||out - out_f32|| / ||out_f32||, mean over queries\nmachine: %s",
             ctx->seed, ctxlen, hd, G, nq, ctx->machine);
    FILE *labels = plot_labels_open(ctx, "quant-error", "Quantization error per cache format", caption, e);
    if (!labels) {
        rc = -1;
        goto done;
    }
    fprintf(labels, "hist_lo = %.2f\nhist_step = %.2f\n", HIST_LO, HIST_STEP);
    if ((rc = plot_close(labels, "quant-error", e)) < 0)
        goto done;
    snprintf(note->note, sizeof note->note, "attention output error: q8_0 %.2g, q4_0 %.2g, int4 %.2g, fp4 %.2g",
             st[FMT_Q8_0].attn[2], st[FMT_Q4_0].attn[2], st[FMT_INT4].attn[2], st[FMT_FP4].attn[2]);
done:
    free(k);
    free(v);
    free(q);
    free(out_ref);
    free(out);
    free(scores);
    free(deq);
    free(kq);
    free(vq);
    free(st);
    if (rng)
        gsl_rng_free(rng);
    return rc;
}
