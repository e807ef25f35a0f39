/* plot_quant.c: figure 6, the error each stored format brings into
 * attention: K and V rows round-tripped through the reference codecs, and
 * naive attention over them against the f32 result. */
#include "plot/plot.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

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

/* Seeded K, V and queries, the f32 reference outputs, and scratch. */
typedef struct {
    float *k, *v;          /* [Q_CONTEXT][Q_HEAD_DIM], N(0, 1) */
    float *q;              /* [Q_QUERIES][Q_GROUP][Q_HEAD_DIM] */
    float *out_ref;        /* [Q_QUERIES][Q_GROUP][Q_HEAD_DIM]: attention over f32 K and V */
    float *out, *scores;   /* [Q_GROUP][Q_HEAD_DIM], [Q_GROUP][Q_CONTEXT] */
    float *deq;            /* [Q_CONTEXT][Q_HEAD_DIM] decoded rows */
    unsigned char *kq, *vq; /* [Q_CONTEXT] rows in the format measured */
} QuantData;

static void data_free(QuantData *d)
{
    free(d->k), free(d->v), free(d->q), free(d->out_ref), free(d->out), free(d->scores), free(d->deq);
    free(d->kq), free(d->vq);
}

static int data_init(QuantData *d, uint64_t seed, Err *e)
{
    const size_t n = Q_CONTEXT * Q_HEAD_DIM, nq = Q_QUERIES * Q_GROUP * Q_HEAD_DIM;
    const size_t max_rb = format_row_bytes(FMT_F32, Q_HEAD_DIM);
    *d = (QuantData){ .k = malloc(n * sizeof(float)), .v = malloc(n * sizeof(float)), .q = malloc(nq * sizeof(float)),
                      .out_ref = malloc(nq * sizeof(float)), .out = malloc(Q_GROUP * Q_HEAD_DIM * sizeof(float)),
                      .scores = malloc(Q_GROUP * Q_CONTEXT * sizeof(float)), .deq = malloc(n * sizeof(float)),
                      .kq = malloc(Q_CONTEXT * max_rb), .vq = malloc(Q_CONTEXT * max_rb) };
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!d->k || !d->v || !d->q || !d->out_ref || !d->out || !d->scores || !d->deq || !d->kq || !d->vq || !rng) {
        if (rng)
            gsl_rng_free(rng);
        return err_set(e, ERR_RUNTIME, "plot: out of memory");
    }
    /* K, V and the queries: N(0, 1), seeded */
    gsl_rng_set(rng, (unsigned long)seed);
    for (size_t i = 0; i < n; i++)
        d->k[i] = (float)gsl_ran_gaussian(rng, 1.0);
    for (size_t i = 0; i < n; i++)
        d->v[i] = (float)gsl_ran_gaussian(rng, 1.0);
    for (size_t i = 0; i < nq; i++)
        d->q[i] = (float)gsl_ran_gaussian(rng, 1.0);
    gsl_rng_free(rng);
    return 0;
}

/* One decode step per query (position Q_CONTEXT-1, seeing every row) over
 * blk into out [Q_QUERIES][G][hd]; with ref_out, the mean and largest
 * relative error against it. */
static double attend_all(const Kernels *ref, QuantData *d, const KvBlock *blk, float *out, const float *ref_out,
                         double *worst)
{
    const size_t G = Q_GROUP, hd = Q_HEAD_DIM;
    AttnArgs a = { .q_stride = G * hd, .out_stride = G * hd, .n_q = 1, .group = G, .head_dim = hd,
                   .pos0 = Q_CONTEXT - 1, .n_blocks = 1, .scores = d->scores, .blocks = blk };
    double sum = 0;
    for (size_t j = 0; j < Q_QUERIES; j++) {
        a.q = d->q + j * G * hd;
        a.out = ref_out ? d->out : out + j * G * hd;
        attend(ref, ATTEND_NAIVE, &a, NULL);
        if (!ref_out)
            continue;
        double err = rel_l2(d->out, ref_out + j * G * hd, G * hd);
        sum += err;
        if (worst && err > *worst)
            *worst = err;
    }
    return sum / (double)Q_QUERIES;
}

/* Format f's element errors and its attention error with K only, V only
 * and both stored in it (the other f32). */
static void measure_format(const Kernels *ref, QuantData *d, const KvBlock *exact, Format f, QuantStats *s)
{
    const size_t rb = format_row_bytes(f, Q_HEAD_DIM), n = Q_CONTEXT * Q_HEAD_DIM;
    size_t n_exact = 0;
    round_trip(f, d->k, d->kq, d->deq, Q_CONTEXT, Q_HEAD_DIM, s, 0, &n_exact);
    round_trip(f, d->v, d->vq, d->deq, Q_CONTEXT, Q_HEAD_DIM, s, 1, &n_exact);
    s->exact = (double)n_exact / (double)(2 * n);
    for (size_t b = 0; b < HIST_BINS; b++)
        s->hist[b] /= (double)(2 * n);
    for (int which = 0; which < 3; which++) {
        KvBlock blk = *exact;
        if (which != 1)
            blk.k = d->kq, blk.k_stride = rb, blk.k_fmt = f;
        if (which != 0)
            blk.v = d->vq, blk.v_stride = rb, blk.v_fmt = f;
        s->attn[which] = attend_all(ref, d, &blk, NULL, d->out_ref, which == 2 ? &s->attn_max : NULL);
    }
}

/* quant-error.tsv (a row per format) and quant-error.hist.tsv (the error
 * histogram, a column per format). */
static int write_tables(const PlotCtx *ctx, const QuantStats *st, Err *e)
{
    FILE *fo = plot_open(ctx, "quant-error.tsv", e);
    if (!fo)
        return -1;
    fputs("format\tbits_per_value\tk_rms_error\tv_rms_error\texact_fraction\tattn_error_k_only\tattn_error_v_only\t"
          "attn_error_both\tattn_error_both_max\n", fo);
    for (int f = 0; f < FMT_ROW_COUNT; f++) {
        const QuantStats *s = &st[f];
        fprintf(fo, "%s\t%.3f\t%.6e\t%.6e\t%.6f\t%.6e\t%.6e\t%.6e\t%.6e\n", format_name((Format)f),
                8.0 * (double)format_row_bytes((Format)f, Q_HEAD_DIM) / (double)Q_HEAD_DIM, s->rms[0], s->rms[1],
                s->exact, s->attn[0], s->attn[1], s->attn[2], s->attn_max);
    }
    if (plot_close(fo, "quant-error.tsv", e) < 0 || !(fo = plot_open(ctx, "quant-error.hist.tsv", e)))
        return -1;
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
    return plot_close(fo, "quant-error.hist.tsv", e);
}

static int write_labels(const PlotCtx *ctx, Err *e)
{
    char caption[512];
    snprintf(caption, sizeof caption,
             "K, V and queries ~ N(0, 1) (gsl mt19937 seed %" PRIu64 "): context %d, head_dim %d, %d query "
             "heads per KV head, %d decode queries\nreference codecs and naive attention (ref kernels); output "
             "error: ||out - out_f32|| / ||out_f32||, mean over queries\nmachine: %s",
             ctx->seed, Q_CONTEXT, Q_HEAD_DIM, Q_GROUP, Q_QUERIES, ctx->machine);
    FILE *labels = plot_labels_open(ctx, "quant-error", "Quantization error per cache format", caption, e);
    if (!labels)
        return -1;
    fprintf(labels, "hist_lo = %.2f\nhist_step = %.2f\n", HIST_LO, HIST_STEP);
    return plot_close(labels, "quant-error", e);
}

int plot_quant_error(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    const Kernels *ref = kernels_select("ref", e);
    if (!ref)
        return -1;
    QuantData d;
    QuantStats *st = calloc(FMT_COUNT, sizeof *st);
    int rc = data_init(&d, ctx->seed, e);
    if (rc == 0 && !st)
        rc = err_set(e, ERR_RUNTIME, "plot: out of memory");
    if (rc == 0) {
        const KvBlock exact = { .pos = 0, .n = Q_CONTEXT, .k = d.k, .v = d.v, .k_stride = Q_HEAD_DIM * sizeof(float),
                                .v_stride = Q_HEAD_DIM * sizeof(float), .k_fmt = FMT_F32, .v_fmt = FMT_F32 };
        attend_all(ref, &d, &exact, d.out_ref, NULL, NULL);
        for (int f = 0; f < FMT_ROW_COUNT; f++)
            measure_format(ref, &d, &exact, (Format)f, &st[f]);
        rc = write_tables(ctx, st, e) < 0 || write_labels(ctx, e) < 0 ? -1 : 0;
    }
    if (rc == 0)
        snprintf(note->note, sizeof note->note, "attention output error: q8_0 %.2g, q4_0 %.2g, int4 %.2g, fp4 %.2g",
                 st[FMT_Q8_0].attn[2], st[FMT_Q4_0].attn[2], st[FMT_INT4].attn[2], st[FMT_FP4].attn[2]);
    data_free(&d);
    free(st);
    return rc;
}
