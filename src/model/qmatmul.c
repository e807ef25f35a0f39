/* qmatmul.c: projections by weight matrices that stay in a checkpoint's
 * block format (f16, q8_0, q4_0), read through the same codecs as the
 * cache's rows.
 *
 * A row of W is a row of stored blocks, so y = x . W^T is one dot product
 * of each stored row with each token's x: the codec's dot_rows does that
 * for all n tokens from one decode of the row (decode reads every byte of W
 * once per step, the memory-bound case). A long pass (a prefill) would
 * re-read x for every row of W that way, so past a few tokens a tile of
 * rows is decoded to f32 once and the kernels' f32 matmul runs over it. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "util/pool.h"

/* Tokens up to which each stored row is dotted directly with every token. */
#define QMATMUL_DOT_TOKENS 4
/* Rows of W decoded to f32 at a time on the tile path. */
#define QMATMUL_TILE_ROWS 64

static int matmul_tiles(const Model *m, float *y, const float *x, const QuantMat *q, size_t n, size_t in,
                        size_t out);

/* 1 where the matrix multiplies x rounded to q8_0 by integer dots: with
 * mat_dot (a checkpoint's default), a stored q8_0 or q4_0 matrix, rows of
 * whole blocks. */
static int takes_int(const Model *m, const QuantMat *q, size_t in)
{
    return m->mat_dot && q && q->data && (q->fmt == FMT_Q8_0 || q->fmt == FMT_Q4_0) && in % 32 == 0;
}

/* Each token's x rounded to q8_0 into xq ([n] rows of q8_0): as
 * llama.cpp's x86 path rounds it, or ggml's reference with INT_DOT_REF. */
static void round_x(const Model *m, unsigned char *xq, const float *x, size_t n, size_t in)
{
    const size_t xrow = format_row_bytes(FMT_Q8_0, in);
    for (size_t t = 0; t < n; t++)
        if (m->mat_dot == INT_DOT_REF)
            m->kern->codec[FMT_Q8_0].quantize(xq + t * xrow, x + t * in, in);
        else
            m->kern->round_q8_0(xq + t * xrow, x + t * in, in);
}

/* With mat_dot: x rounded to q8_0, then integer dots in decode; a longer
 * pass takes the tile path with x decoded back from xq, so both paths
 * multiply the same values. xq: x already rounded (round_x), or NULL.
 * Returns -1 when its scratch cannot be had (the caller goes on without
 * rounding). */
static int matmul_int(const Model *m, float *y, const float *x, const unsigned char *xq_given, const QuantMat *q,
                      size_t n, size_t in, size_t out)
{
    const FormatOps *q8 = &m->kern->codec[FMT_Q8_0];
    const size_t xrow = format_row_bytes(FMT_Q8_0, in), row_bytes = format_row_bytes(q->fmt, in);
    unsigned char *xq = xq_given ? NULL : malloc(n * xrow);
    float *xr = n > QMATMUL_DOT_TOKENS ? malloc(n * in * sizeof(float)) : NULL;
    if ((!xq_given && !xq) || (n > QMATMUL_DOT_TOKENS && !xr)) {
        free(xq);
        free(xr);
        return -1;
    }
    if (!xq_given)
        round_x(m, xq, x, n, in);
    const unsigned char *xs = xq_given ? xq_given : xq;
    int rc = 0;
    if (n <= QMATMUL_DOT_TOKENS) {
        for (size_t t = 0; t < n; t++)
            m->kern->qdot(y + t * out, out, q->fmt, q->data, row_bytes, out, xs + t * xrow, 1, in, NULL);
    } else {
        for (size_t t = 0; t < n; t++)
            q8->dequantize(xr + t * in, xs + t * xrow, in);
        rc = matmul_tiles(m, y, xr, q, n, in, out);
    }
    free(xq);
    free(xr);
    return rc;
}

/* The tile path: decode QMATMUL_TILE_ROWS rows, f32 matmul, scatter into y.
 * Returns -1 when its scratch cannot be had (the caller dots instead). */
static int matmul_tiles(const Model *m, float *y, const float *x, const QuantMat *q, size_t n, size_t in,
                        size_t out)
{
    const FormatOps *op = &m->kern->codec[q->fmt];
    const size_t row_bytes = format_row_bytes(q->fmt, in);
    float *tile = malloc(QMATMUL_TILE_ROWS * in * sizeof(float));
    float *part = malloc(n * QMATMUL_TILE_ROWS * sizeof(float));
    if (!tile || !part) {
        free(tile);
        free(part);
        return -1;
    }
    Counters scratch = { 0 }; /* the f32 tile's bytes are not the weights' */
    uint64_t scratch_flops = 0;
    for (size_t r0 = 0; r0 < out; r0 += QMATMUL_TILE_ROWS) {
        const size_t rows = out - r0 < QMATMUL_TILE_ROWS ? out - r0 : QMATMUL_TILE_ROWS;
        const unsigned char *src = (const unsigned char *)q->data + r0 * row_bytes;
        for (size_t r = 0; r < rows; r++)
            op->dequantize(tile + r * in, src + r * row_bytes, in);
        m->kern->matmul(part, x, tile, n, in, rows, &scratch_flops, &scratch); /* part [n][rows] */
        for (size_t t = 0; t < n; t++)
            for (size_t r = 0; r < rows; r++)
                y[t * out + r0 + r] = part[t * rows + r];
    }
    free(tile);
    free(part);
    return 0;
}

/* One matmul of n rows, on the calling thread; xq: x rounded already
 * (round_x, where takes_int), or NULL. */
static void matmul_rows(const Model *m, float *y, const float *x, const unsigned char *xq, const float *w,
                        const QuantMat *q, size_t n, size_t in, size_t out, uint64_t *flops, Counters *ctr)
{
    if (!q || !q->data) {
        m->kern->matmul(y, x, w, n, in, out, flops, ctr);
        return;
    }
    const size_t row_bytes = format_row_bytes(q->fmt, in);
    if (takes_int(m, q, in) && matmul_int(m, y, x, xq, q, n, in, out) == 0) {
        /* done */
    } else if (n <= QMATMUL_DOT_TOKENS || matmul_tiles(m, y, x, q, n, in, out) < 0)
        /* y[t * out + r] = x[t] . decode(row r): the tokens are the codec's "heads" */
        m->kern->codec[q->fmt].dot_rows(y, out, x, n, q->data, row_bytes, out, in, NULL);
    *flops += 2 * (uint64_t)n * in * out;
    ctr->weight_bytes_read += (uint64_t)out * row_bytes;
}

/* Rows a piece of a wide pass takes at least: far past QMATMUL_DOT_TOKENS,
 * so every piece takes the path the whole pass would. */
#define MATMUL_PIECE_ROWS 8

typedef struct {
    const Model *m;
    float *y;
    const float *x, *w;
    const QuantMat *q;
    size_t n, in, out, pieces;
} MatmulJob;

static void matmul_piece(void *ctx, size_t i)
{
    const MatmulJob *j = ctx;
    const size_t r0 = i * j->n / j->pieces, r1 = (i + 1) * j->n / j->pieces;
    uint64_t flops = 0;
    Counters none = { 0 };
    matmul_rows(j->m, j->y + r0 * j->out, j->x + r0 * j->in, NULL, j->w, j->q, r1 - r0, j->in, j->out, &flops,
                &none);
}

/* A few tokens (a decode step, the lm head) by parts of the matrix's
 * output rows instead, one part a thread: every output is its row's dot
 * with x, whichever part holds it, so the bytes are the same for every
 * thread count. Parts start on multiples of OUT_PART_ALIGN rows. */
#define OUT_PART_ALIGN 16
/* Outputs below which a matrix stays on the calling thread (a hand-over
 * costs more than it saves). */
#define OUT_PART_MIN 64

typedef struct {
    const Model *m;
    float *y;
    const float *x, *w;
    const unsigned char *xq; /* x rounded to q8_0 once (takes_int), or NULL */
    const QuantMat *q;
    size_t n, in, out, parts;
    int failed;              /* a part's scratch could not be had */
} OutJob;

static void out_part(void *ctx, size_t i)
{
    OutJob *j = ctx;
    const size_t o0 = i * j->out / j->parts / OUT_PART_ALIGN * OUT_PART_ALIGN;
    const size_t o1 = i + 1 == j->parts ? j->out : (i + 1) * j->out / j->parts / OUT_PART_ALIGN * OUT_PART_ALIGN;
    const size_t cnt = o1 - o0;
    if (cnt == 0)
        return;
    const float *w = j->w ? j->w + o0 * j->in : NULL;
    QuantMat part;
    if (j->q && j->q->data) {
        part = *j->q;
        part.data = (const unsigned char *)j->q->data + o0 * format_row_bytes(j->q->fmt, j->in);
    }
    const QuantMat *q = j->q && j->q->data ? &part : j->q;
    uint64_t flops = 0;
    Counters none = { 0 };
    if (j->n == 1) { /* y's row is the part's outputs, contiguous */
        matmul_rows(j->m, j->y + o0, j->x, j->xq, w, q, 1, j->in, cnt, &flops, &none);
        return;
    }
    float *yp = malloc(j->n * cnt * sizeof(float)); /* [n][cnt], then into y's rows */
    if (!yp) {
        j->failed = 1;
        return;
    }
    matmul_rows(j->m, yp, j->x, j->xq, w, q, j->n, j->in, cnt, &flops, &none);
    for (size_t t = 0; t < j->n; t++)
        memcpy(j->y + t * j->out + o0, yp + t * cnt, cnt * sizeof(float));
    free(yp);
}

/* The few-token case on the pool: x rounded once where the integer dots
 * take it, then a part of the rows a thread. Returns -1 (nothing written
 * that counts) when scratch cannot be had: the caller runs it alone. */
static int matmul_out_parts(const Model *m, float *y, const float *x, const float *w, const QuantMat *q, size_t n,
                            size_t in, size_t out, size_t threads)
{
    unsigned char *xq = NULL;
    if (takes_int(m, q, in)) {
        if (!(xq = malloc(n * format_row_bytes(FMT_Q8_0, in))))
            return -1;
        round_x(m, xq, x, n, in);
    }
    OutJob j = { m, y, x, w, xq, q, n, in, out, threads, 0 };
    pool_run(threads, out_part, &j);
    free(xq);
    return j.failed ? -1 : 0;
}

/* A product done on the pool, counted as matmul_rows counts its own: 2 FLOPs
 * a multiply-add, and W's bytes as stored. */
static void count_matmul(const QuantMat *q, size_t n, size_t in, size_t out, uint64_t *flops, Counters *ctr)
{
    *flops += 2 * (uint64_t)n * in * out;
    ctr->weight_bytes_read += (uint64_t)out * (q && q->data ? format_row_bytes(q->fmt, in) : in * sizeof(float));
}

/* Matrices of one input, at most MATMUL_EACH of them. */
#define MATMUL_EACH 4

typedef struct {
    OutJob *jobs; /* [k]: one matrix each */
    size_t k;
} EachJob;

static void each_part(void *ctx, size_t i)
{
    EachJob *j = ctx;
    for (size_t t = 0; t < j->k; t++)
        out_part(&j->jobs[t], i);
}

/* matmul_out_parts for k matrices of one x in one hand-over: each thread
 * takes the same part of each matrix as k calls would give it, so the
 * bytes are theirs. -1 when scratch cannot be had (nothing that counts
 * written). */
static int matmul_out_parts_each(const Model *m, const float *x, size_t n, size_t in, const MatmulTo *to, size_t k,
                                 size_t threads)
{
    unsigned char *xq = NULL;
    for (size_t t = 0; t < k && !xq; t++)
        if (takes_int(m, to[t].q, in)) {
            if (!(xq = malloc(n * format_row_bytes(FMT_Q8_0, in))))
                return -1;
            round_x(m, xq, x, n, in);
        }
    OutJob jobs[MATMUL_EACH];
    for (size_t t = 0; t < k; t++)
        jobs[t] = (OutJob){ m, to[t].y, x, to[t].w, takes_int(m, to[t].q, in) ? xq : NULL, to[t].q, n, in, to[t].out,
                            threads, 0 };
    EachJob j = { jobs, k };
    pool_run(threads, each_part, &j);
    free(xq);
    for (size_t t = 0; t < k; t++)
        if (jobs[t].failed)
            return -1;
    return 0;
}

void model_matmul_each(const Model *m, const float *x, size_t n, size_t in, const MatmulTo *to, size_t k,
                       Counters *ctr)
{
    const size_t threads = pool_threads();
    int one_job = threads >= 2 && n / MATMUL_PIECE_ROWS < 2 && k <= MATMUL_EACH && !pool_in_job();
    for (size_t t = 0; t < k; t++)
        one_job = one_job && to[t].out >= OUT_PART_MIN;
    if (one_job && matmul_out_parts_each(m, x, n, in, to, k, threads) == 0) {
        for (size_t t = 0; t < k; t++)
            count_matmul(to[t].q, n, in, to[t].out, to[t].flops, ctr);
        return;
    }
    for (size_t t = 0; t < k; t++)
        model_matmul(m, to[t].y, x, to[t].w, to[t].q, n, in, to[t].out, to[t].flops, ctr);
}

/* A wide pass (a prefill, an uncached run) is cut into pieces of rows on
 * the pool: each row's outputs are the kernels' whatever rows share its
 * call, so the result is the same bytes for every thread count, and the
 * counts are the whole call's, added once. */
void model_matmul(const Model *m, float *y, const float *x, const float *w, const QuantMat *q, size_t n, size_t in,
                  size_t out, uint64_t *flops, Counters *ctr)
{
    const size_t threads = pool_threads();
    size_t pieces = n / MATMUL_PIECE_ROWS < 4 * threads ? n / MATMUL_PIECE_ROWS : 4 * threads;
    if (threads >= 2 && pieces < 2 && out >= OUT_PART_MIN && !pool_in_job() &&
        matmul_out_parts(m, y, x, w, q, n, in, out, threads) == 0) {
        count_matmul(q, n, in, out, flops, ctr);
        return;
    }
    if (threads < 2 || pieces < 2) {
        matmul_rows(m, y, x, NULL, w, q, n, in, out, flops, ctr);
        return;
    }
    MatmulJob j = { m, y, x, w, q, n, in, out, pieces };
    pool_run(pieces, matmul_piece, &j);
    count_matmul(q, n, in, out, flops, ctr);
}
