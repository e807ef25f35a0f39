/* bench_attend.c: timing one decode step of attention, cold and warm. */
#include <string.h>

#include "kernels/bench_mem.h"

void bench_kv_free(BenchKv *kv)
{
    free(kv->pool);
    free(kv->blocks);
    memset(kv, 0, sizeof *kv);
}

static size_t align64(size_t n)
{
    return (n + 63) / 64 * 64;
}

int bench_kv_init(BenchKv *kv, Format fmt, size_t context, size_t head_dim, size_t pool_bytes, uint64_t seed,
                  Err *e)
{
    memset(kv, 0, sizeof *kv);
    kv->fmt = fmt;
    kv->context = context;
    kv->head_dim = head_dim;
    kv->row_bytes = format_row_bytes(fmt, head_dim);
    const size_t half = align64(context * kv->row_bytes); /* K rows, then V rows at this offset */
    kv->copy_bytes = 2 * half;
    kv->n_copies = (pool_bytes + kv->copy_bytes - 1) / kv->copy_bytes;
    if (kv->n_copies < 2)
        kv->n_copies = 2;
    kv->pool = bench_alloc(kv->n_copies * kv->copy_bytes, "the K/V copies", e);
    kv->blocks = bench_alloc(kv->n_copies * sizeof(KvBlock), "the K/V blocks", e);
    float *row = bench_alloc(head_dim * sizeof(float), "a K/V row", e); /* [head_dim] */
    if (!kv->pool || !kv->blocks || !row) {
        free(row);
        bench_kv_free(kv);
        return -1;
    }
    uint64_t state = seed;
    const FormatOps *codec = &codec_ref[fmt];
    for (size_t r = 0; r < 2 * context; r++) { /* K rows, then V rows */
        bench_gaussian(row, head_dim, &state);
        unsigned char *dst = kv->pool + (r < context ? 0 : half) + (r % context) * kv->row_bytes;
        codec->quantize(dst, row, head_dim);
    }
    free(row);
    for (size_t c = 0; c < kv->n_copies; c++) {
        unsigned char *base = kv->pool + c * kv->copy_bytes;
        if (c > 0)
            memcpy(base, kv->pool, kv->copy_bytes);
        kv->blocks[c] = (KvBlock){ .pos = 0, .n = context, .k = base, .v = base + half,
                                   .k_stride = kv->row_bytes, .v_stride = kv->row_bytes,
                                   .k_fmt = fmt, .v_fmt = fmt };
    }
    return 0;
}

void bench_query_free(BenchQuery *bq)
{
    free(bq->q);
    free(bq->out);
    free(bq->ref);
    free(bq->scores);
    free(bq->view);
    memset(bq, 0, sizeof *bq);
}

/* One step's arguments: the query at position context-1, over copy c. */
static AttnArgs step_args(const BenchKv *kv, BenchQuery *bq, size_t c, float *out)
{
    const size_t hd = kv->head_dim;
    return (AttnArgs){ .q = bq->q, .q_stride = bq->group * hd, .out = out, .out_stride = bq->group * hd,
                       .n_q = 1, .group = bq->group, .head_dim = hd, .pos0 = kv->context - 1,
                       .blocks = &kv->blocks[c], .n_blocks = 1, .scores = bq->scores,
                       .view = bq->view, .view_blocks = &bq->view_block };
}

int bench_query_init(BenchQuery *bq, const BenchKv *kv, size_t group, uint64_t seed, Err *e)
{
    memset(bq, 0, sizeof *bq);
    const size_t hd = kv->head_dim;
    if (group == 0 || group > ATTEND_MAX_GROUP)
        return err_set(e, ERR_USAGE, "bench: a group of %zu query heads (1 .. %d)", group, ATTEND_MAX_GROUP);
    bq->group = group;
    bq->q = bench_alloc(group * hd * sizeof(float), "the queries", e);
    bq->out = bench_alloc(group * hd * sizeof(float), "the attention output", e);
    bq->ref = bench_alloc(group * hd * sizeof(float), "the reference output", e);
    bq->scores = bench_alloc(group * kv->context * sizeof(float), "the scores", e);
    bq->view = bench_alloc(2 * kv->context * hd * sizeof(float), "the materialized view", e);
    if (!bq->q || !bq->out || !bq->ref || !bq->scores || !bq->view) {
        bench_query_free(bq);
        return -1;
    }
    uint64_t state = seed;
    bench_gaussian(bq->q, group * hd, &state);
    const Kernels *ref = kernels_select("ref", e);
    if (!ref) {
        bench_query_free(bq);
        return -1;
    }
    AttnArgs a = step_args(kv, bq, 0, bq->ref);
    attend(ref, ATTEND_NAIVE, &a, NULL);
    return 0;
}

int bench_attend(const Kernels *k, BenchKv *kv, BenchQuery *bq, AttendAlgo algo, int cold, const BenchTiming *t,
                 BenchResult *r, Err *e)
{
    double *times = bench_alloc(t->reps * sizeof(double), "timings", e);
    if (!times)
        return -1;
    Counters one = { 0 }, ctr = { 0 }; /* one step's counts; the timed steps' (not read) */
    size_t steps = 1;
    if (cold) {
        AttnArgs a = step_args(kv, bq, kv->next, bq->out);
        kv->next = (kv->next + 1) % kv->n_copies;
        attend(k, algo, &a, &one);
        steps = kv->n_copies;
        for (size_t rep = 0; rep < t->reps; rep++) {
            double t0 = bench_now();
            for (size_t s = 0; s < steps; s++) {
                a = step_args(kv, bq, kv->next, bq->out);
                kv->next = (kv->next + 1) % kv->n_copies;
                attend(k, algo, &a, &ctr);
            }
            times[rep] = (bench_now() - t0) / (double)steps;
        }
    } else {
        /* the copy read last: a cold pass that follows starts far from it */
        const size_t c = (kv->next + kv->n_copies - 1) % kv->n_copies;
        AttnArgs a = step_args(kv, bq, c, bq->out);
        double t0 = bench_now();
        attend(k, algo, &a, &one); /* brings the rows in, counts, and calibrates */
        double once = bench_now() - t0;
        if (once < t->min_rep_seconds)
            steps = (size_t)(t->min_rep_seconds / (once > 1e-7 ? once : 1e-7)) + 1;
        for (size_t rep = 0; rep < t->reps; rep++) {
            t0 = bench_now();
            for (size_t s = 0; s < steps; s++)
                attend(k, algo, &a, &ctr);
            times[rep] = (bench_now() - t0) / (double)steps;
        }
    }
    *r = (BenchResult){ .seconds = bench_median(times, t->reps), .bytes = one.kv_bytes_read,
                        .view_bytes = one.view_bytes, .ops_per_rep = steps,
                        .max_rel_diff = bench_rel_diff(bq->out, bq->ref, bq->group * kv->head_dim) };
    free(times);
    return 0;
}
