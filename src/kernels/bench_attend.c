/* bench_attend.c: timing one decode step of attention, cold and warm. */
#include <string.h>

#include "kernels/bench_mem.h"
#include "util/clock.h"

static size_t align64(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* --- the rows ------------------------------------------------------------- */

void bench_kv_free(BenchKv *kv)
{
    free(kv->master);
    memset(kv, 0, sizeof *kv);
}

int bench_kv_init(BenchKv *kv, Format fmt, size_t context, size_t head_dim, uint64_t seed, Err *e)
{
    memset(kv, 0, sizeof *kv);
    kv->fmt = fmt;
    kv->context = context;
    kv->head_dim = head_dim;
    kv->row_bytes = format_row_bytes(fmt, head_dim);
    const size_t half = align64(context * kv->row_bytes); /* K rows, then V rows at this offset */
    kv->copy_bytes = 2 * half;
    kv->master = bench_alloc(kv->copy_bytes, "the K/V rows", e);
    float *row = bench_alloc(head_dim * sizeof(float), "a K/V row", e); /* [head_dim] */
    if (!kv->master || !row) {
        free(row);
        bench_kv_free(kv);
        return -1;
    }
    memset(kv->master, 0, kv->copy_bytes); /* the alignment gap too: copies are then fully defined */
    uint64_t state = seed;
    const FormatOps *codec = &codec_ref[fmt];
    for (size_t r = 0; r < 2 * context; r++) { /* K rows, then V rows */
        bench_gaussian(row, head_dim, &state);
        codec->quantize(kv->master + (r < context ? 0 : half) + (r % context) * kv->row_bytes, row, head_dim);
    }
    free(row);
    return 0;
}

KvBlock bench_kv_block(const BenchKv *kv, const void *base)
{
    const unsigned char *p = base;
    return (KvBlock){ .pos = 0, .n = kv->context, .k = p, .v = p + kv->copy_bytes / 2,
                      .k_stride = kv->row_bytes, .v_stride = kv->row_bytes, .k_fmt = kv->fmt, .v_fmt = kv->fmt };
}

/* --- the copies ----------------------------------------------------------- */

static size_t pool_copies(size_t copy_bytes, size_t target)
{
    size_t n = (target + copy_bytes - 1) / copy_bytes;
    return n < 2 ? 2 : n;
}

size_t bench_pool_bytes(size_t copy_bytes, size_t target)
{
    return pool_copies(copy_bytes, target) * copy_bytes;
}

void bench_pool_free(BenchPool *p)
{
    free(p->mem);
    free(p->blocks);
    memset(p, 0, sizeof *p);
}

int bench_pool_init(BenchPool *p, size_t cap, size_t target, Err *e)
{
    memset(p, 0, sizeof *p);
    p->mem = bench_alloc(cap, "the cold K/V copies", e);
    if (!p->mem)
        return -1;
    p->cap = cap;
    p->target = target;
    return 0;
}

int bench_pool_fill(BenchPool *p, const BenchKv *kv, Err *e)
{
    const size_t n = pool_copies(kv->copy_bytes, p->target);
    if (n * kv->copy_bytes > p->cap)
        return err_set(e, ERR_RUNTIME, "bench: %zu copies of %zu bytes do not fit a pool of %zu", n, kv->copy_bytes,
                       p->cap);
    if (n > p->blocks_cap) {
        KvBlock *b = realloc(p->blocks, n * sizeof *b);
        if (!b)
            return err_set(e, ERR_RUNTIME, "bench: cannot allocate %zu K/V blocks", n);
        p->blocks = b;
        p->blocks_cap = n;
    }
    for (size_t c = 0; c < n; c++) {
        unsigned char *base = p->mem + c * kv->copy_bytes;
        memcpy(base, kv->master, kv->copy_bytes);
        p->blocks[c] = bench_kv_block(kv, base);
    }
    p->n_copies = n;
    p->next = 0;
    return 0;
}

/* --- queries and scratch ---------------------------------------------------- */

void bench_scratch_free(BenchScratch *s)
{
    free(s->scores);
    free(s->view);
    memset(s, 0, sizeof *s);
}

int bench_scratch_init(BenchScratch *s, size_t max_context, size_t max_group, size_t head_dim, Err *e)
{
    memset(s, 0, sizeof *s);
    s->scores = bench_alloc(max_group * max_context * sizeof(float), "the scores", e);
    s->view = bench_alloc(2 * max_context * head_dim * sizeof(float), "the materialized view", e);
    if (!s->scores || !s->view) {
        bench_scratch_free(s);
        return -1;
    }
    return 0;
}

void bench_query_free(BenchQuery *bq)
{
    free(bq->q);
    free(bq->out);
    free(bq->ref);
    free(bq->q8);
    free(bq->iv);
    free(bq->ref_f32);
    memset(bq, 0, sizeof *bq);
}

/* One step's arguments: the query at position context-1 over blk. */
static AttnArgs step_args(const BenchQuery *bq, BenchScratch *s, const KvBlock *blk, float *out, size_t head_dim)
{
    return (AttnArgs){ .q = bq->q, .q_stride = bq->group * head_dim, .out = out, .out_stride = bq->group * head_dim,
                       .n_q = 1, .group = bq->group, .head_dim = head_dim, .pos0 = blk->n - 1, .blocks = blk,
                       .n_blocks = 1, .scores = s->scores, .view = s->view, .view_blocks = &s->view_block,
                       .q8 = bq->q8, .iv = bq->iv };
}

int bench_query_init(BenchQuery *bq, const BenchKv *kv, size_t group, int int_dot, BenchScratch *s, uint64_t seed,
                     Err *e)
{
    memset(bq, 0, sizeof *bq);
    const size_t hd = kv->head_dim;
    if (group == 0 || group > ATTEND_MAX_GROUP)
        return err_set(e, ERR_USAGE, "bench: a group of %zu query heads (1 .. %d)", group, ATTEND_MAX_GROUP);
    const Kernels *ref = kernels_select("ref", e);
    if (!ref)
        return -1;
    bq->group = group;
    bq->head_dim = hd;
    bq->q = bench_alloc(group * hd * sizeof(float), "the queries", e);
    bq->out = bench_alloc(group * hd * sizeof(float), "the attention output", e);
    bq->ref = bench_alloc(group * hd * sizeof(float), "the reference output", e);
    if (int_dot) {
        bq->q8 = bench_alloc(group * format_row_bytes(FMT_Q8_0, hd), "the rounded queries", e);
        bq->ref_f32 = bench_alloc(group * hd * sizeof(float), "the f32-query reference", e);
        bq->iv = bench_alloc(attend_iv_bytes(group, hd) + 1, "the integer value sums", e);
    }
    if (!bq->q || !bq->out || !bq->ref || (int_dot && (!bq->q8 || !bq->ref_f32 || !bq->iv))) {
        bench_query_free(bq);
        return -1;
    }
    uint64_t state = seed;
    bench_gaussian(bq->q, group * hd, &state);
    const KvBlock blk = bench_kv_block(kv, kv->master);
    AttnArgs a = step_args(bq, s, &blk, bq->ref, hd);
    attend(ref, ATTEND_NAIVE, &a, NULL);
    if (int_dot) {
        a.out = bq->ref_f32;
        a.q8 = NULL;
        a.iv = NULL;
        attend(ref, ATTEND_NAIVE, &a, NULL);
    }
    return 0;
}

/* --- timing ----------------------------------------------------------------- */

/* One cold step of bq over the pool's next copy; its seconds. */
static double cold_step(const Kernels *k, BenchPool *p, BenchQuery *bq, BenchScratch *s, AttendAlgo algo,
                        Counters *ctr)
{
    AttnArgs a = step_args(bq, s, &p->blocks[p->next], bq->out, bq->head_dim);
    p->next = (p->next + 1) % p->n_copies;
    double t0 = clock_seconds();
    attend(k, algo, &a, ctr);
    return clock_seconds() - t0;
}

static BenchResult step_result(const BenchQuery *bq, AttendAlgo algo, double seconds, size_t steps,
                               const Counters *one)
{
    const float *ref = algo == ATTEND_MATERIALIZE && bq->ref_f32 ? bq->ref_f32 : bq->ref;
    return (BenchResult){ .seconds = seconds, .seconds_min = seconds, .seconds_max = seconds,
                          .bytes = one->kv_bytes_read, .view_bytes = one->view_bytes, .ops_per_rep = steps,
                          .max_rel_diff = bench_rel_diff(bq->out, ref, bq->group * bq->head_dim) };
}

void bench_attend_cold(const Kernels *k, BenchPool *const *pools, BenchQuery *const *bq, size_t n_queries,
                       BenchScratch *s, AttendAlgo algo, BenchResult *r)
{
    Counters one[BENCH_MAX_QUERIES] = { 0 }, ctr = { 0 }; /* each query's first step; the rest (not read) */
    double seconds[BENCH_MAX_QUERIES] = { 0 };
    size_t done[BENCH_MAX_QUERIES] = { 0 }, ticks = 0; /* ticks: the most steps a query makes */
    n_queries = n_queries < BENCH_MAX_QUERIES ? n_queries : BENCH_MAX_QUERIES;
    for (size_t j = 0; j < n_queries; j++)
        ticks = pools[j]->n_copies > ticks ? pools[j]->n_copies : ticks;
    for (size_t i = 0; i < ticks; i++)
        for (size_t j = 0; j < n_queries; j++) {
            const size_t steps = pools[j]->n_copies; /* query j's share of the ticks: steps of ticks */
            if ((i + 1) * steps / ticks == i * steps / ticks)
                continue;
            seconds[j] += cold_step(k, pools[j], bq[j], s, algo, done[j] == 0 ? &one[j] : &ctr);
            done[j]++;
        }
    for (size_t j = 0; j < n_queries; j++)
        r[j] = step_result(bq[j], algo, seconds[j] / (double)done[j], done[j], &one[j]);
}

void bench_attend(const Kernels *k, BenchPool *p, BenchQuery *bq, BenchScratch *s, AttendAlgo algo, int cold,
                  double min_seconds, BenchResult *r)
{
    if (cold) {
        bench_attend_cold(k, &p, &bq, 1, s, algo, r);
        return;
    }
    Counters one = { 0 }, ctr = { 0 }; /* one step's counts; the timed steps' (not read) */
    size_t steps = 1;
    /* the copy read last: the cold pass that may follow starts far from it */
    AttnArgs a = step_args(bq, s, &p->blocks[(p->next + p->n_copies - 1) % p->n_copies], bq->out, bq->head_dim);
    double t0 = clock_seconds();
    attend(k, algo, &a, &one); /* brings the rows in, counts, and calibrates */
    double once = clock_seconds() - t0;
    if (once < min_seconds)
        steps = (size_t)(min_seconds / (once > 1e-7 ? once : 1e-7)) + 1;
    t0 = clock_seconds();
    for (size_t i = 0; i < steps; i++)
        attend(k, algo, &a, &ctr);
    *r = step_result(bq, algo, (clock_seconds() - t0) / (double)steps, steps, &one);
}
