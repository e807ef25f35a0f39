/* bench.c: medians, read bandwidth and matrix-vector
 * products (bench_attend.c times attention). */
#include <string.h>

#include "kernels/bench_mem.h"
#include "util/clock.h"

/* Floats per chunk of the read: 16 KiB, a vector that stays in L1. */
#define READ_CHUNK 4096

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_summarize(BenchResult *out, const BenchResult *rounds, size_t n)
{
    double times[BENCH_MAX_REPS], f32_times[BENCH_MAX_REPS];
    *out = n ? rounds[0] : (BenchResult){ 0 };
    if (n == 0)
        return;
    size_t m = 0; /* the first BENCH_MAX_REPS count */
    out->seconds_min = out->seconds_max = rounds[0].seconds;
    for (size_t i = 0; i < n; i++) {
        const BenchResult *r = &rounds[i];
        if (m < sizeof times / sizeof times[0]) {
            f32_times[m] = r->f32_seconds;
            times[m++] = r->seconds;
        }
        out->seconds_min = fmin(out->seconds_min, r->seconds);
        out->seconds_max = fmax(out->seconds_max, r->seconds);
        if (!(r->max_rel_diff <= out->max_rel_diff))
            out->max_rel_diff = r->max_rel_diff;
    }
    out->seconds = bench_median(times, m);
    out->f32_seconds = bench_median(f32_times, m);
}

/* --- 1. read bandwidth ---------------------------------------------------- */

void bench_read_free(BenchRead *b)
{
    free(b->buf);
    free(b->ones);
    memset(b, 0, sizeof *b);
}

int bench_read_init(BenchRead *b, size_t bytes, Err *e)
{
    memset(b, 0, sizeof *b);
    size_t chunks = bytes / (READ_CHUNK * sizeof(float));
    b->n = (chunks ? chunks : 1) * READ_CHUNK;
    b->buf = bench_alloc(b->n * sizeof(float), "the read-bandwidth buffer", e);
    b->ones = bench_alloc(READ_CHUNK * sizeof(float), "the read vector", e);
    if (!b->buf || !b->ones) {
        bench_read_free(b);
        return -1;
    }
    for (size_t i = 0; i < READ_CHUNK; i++)
        b->ones[i] = 1.0f;
    /* Small integers whose sign alternates every 128 floats, so that the
     * f32 dot's sum of each 16 KiB row stays small (exact in float), as do
     * the read loops' (bench_loops.h): block pairs add (1 + v) and -v for
     * v = i % 4, 128 per pair, n / 2 in all. */
    for (size_t i = 0; i < b->n; i++)
        b->buf[i] = (i / 128) % 2 ? -(float)(i % 4) : (float)(1 + i % 4);
    return 0;
}

/* Append table's loops (ended by a NULL name) to out[n..BENCH_MAX_LOOPS). */
static size_t add_loops(BenchLoop *out, size_t n, const BenchLoop *table)
{
    for (; table->name && n < BENCH_MAX_LOOPS; table++)
        out[n++] = *table;
    return n;
}

size_t bench_read_loops(const Kernels *k, BenchLoop *out)
{
    size_t n = add_loops(out, 0, bench_loops_ref);
#if defined(__x86_64__)
    const int avx512 = strcmp(k->isa, "avx512") == 0;
    if (avx512 || strcmp(k->isa, "avx2") == 0) /* the AVX-512 CPUs run AVX2 too, and it may read faster */
        n = add_loops(out, n, bench_loops_avx2);
    if (avx512)
        n = add_loops(out, n, bench_loops_avx512);
#else
    (void)k;
#endif
    return n;
}

void bench_read(const Kernels *k, const BenchLoop *l, const BenchRead *b, BenchResult *r)
{
    const FormatOps *f32 = &k->codec[FMT_F32];
    double sum = 0;
    double t0 = clock_seconds();
    if (l)
        sum = l->sum(b->buf, b->n);
    else
        for (size_t c = 0; c < b->n; c += READ_CHUNK) {
            float s;
            f32->dot(&s, b->ones, 1, b->buf + c, READ_CHUNK);
            sum += s;
        }
    const double seconds = clock_seconds() - t0;
    const double want = 0.5 * (double)b->n; /* see bench_read_init; n is a multiple of 256 */
    *r = (BenchResult){ .seconds = seconds, .seconds_min = seconds, .seconds_max = seconds,
                        .bytes = (uint64_t)b->n * sizeof(float), .ops_per_rep = 1,
                        .max_rel_diff = fabs(sum - want) / want };
}

size_t bench_read_each(const Kernels *k, const BenchRead *b, size_t reps, BenchResult *out, const char **names)
{
    BenchLoop loops[BENCH_MAX_LOOPS];
    const size_t n = bench_read_loops(k, loops);
    BenchResult rounds[BENCH_MAX_REPS];
    if (reps > BENCH_MAX_REPS)
        reps = BENCH_MAX_REPS;
    for (size_t l = 0; l < n; l++) {
        for (size_t r = 0; r < reps; r++)
            bench_read(k, &loops[l], b, &rounds[r]);
        bench_summarize(&out[l], rounds, reps);
        names[l] = loops[l].name;
    }
    return n;
}

size_t bench_fastest(const BenchResult *r, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (r[i].seconds > 0 && r[i].seconds < r[best].seconds)
            best = i;
    return best;
}

/* --- 3. matrix-vector product --------------------------------------------- */

void bench_matrix_free(BenchMatrix *m)
{
    free(m->pool);
    free(m->x);
    free(m->y);
    free(m->ref);
    memset(m, 0, sizeof *m);
}

int bench_matrix_init(BenchMatrix *m, size_t rows, size_t cols, size_t pool_bytes, uint64_t seed, Err *e)
{
    memset(m, 0, sizeof *m);
    const size_t copy = rows * cols; /* floats */
    m->rows = rows;
    m->cols = cols;
    m->n_copies = (pool_bytes + copy * sizeof(float) - 1) / (copy * sizeof(float));
    if (m->n_copies < 2)
        m->n_copies = 2;
    m->pool = bench_alloc(m->n_copies * copy * sizeof(float), "the matrix copies", e);
    m->x = bench_alloc(cols * sizeof(float), "the matvec input", e);
    m->y = bench_alloc(rows * sizeof(float), "the matvec output", e);
    m->ref = bench_alloc(rows * sizeof(double), "the matvec reference", e);
    if (!m->pool || !m->x || !m->y || !m->ref) {
        bench_matrix_free(m);
        return -1;
    }
    uint64_t state = seed;
    const float w_scale = 1.0f / sqrtf((float)cols); /* as a weight matrix: outputs ~ N(0, 1) */
    bench_gaussian(m->pool, copy, &state);
    for (size_t i = 0; i < copy; i++)
        m->pool[i] *= w_scale;
    bench_gaussian(m->x, cols, &state);
    for (size_t o = 0; o < rows; o++) {
        double acc = 0;
        for (size_t i = 0; i < cols; i++)
            acc += (double)m->pool[o * cols + i] * m->x[i];
        m->ref[o] = acc;
    }
    for (size_t c = 1; c < m->n_copies; c++)
        memcpy(m->pool + c * copy, m->pool, copy * sizeof(float));
    return 0;
}

void bench_matvec_kernels(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols)
{
    const Kernels *k = ctx;
    k->matmul(y, x, w, 1, cols, rows, NULL, NULL);
}

void bench_matvec(BenchMatvecFn fn, const void *ctx, BenchMatrix *m, BenchResult *r)
{
    const size_t copy = m->rows * m->cols;
    double t0 = clock_seconds();
    for (size_t c = 0; c < m->n_copies; c++) {
        fn(ctx, m->y, m->pool + m->next * copy, m->x, m->rows, m->cols);
        m->next = (m->next + 1) % m->n_copies;
    }
    const double seconds = (clock_seconds() - t0) / (double)m->n_copies;
    double d = 0, scale = 0;
    for (size_t o = 0; o < m->rows; o++) {
        double a = fabs(m->y[o] - m->ref[o]);
        d = a > d || a != a ? a : d;
        scale = fmax(scale, fabs(m->ref[o]));
    }
    *r = (BenchResult){ .seconds = seconds, .seconds_min = seconds, .seconds_max = seconds,
                        .bytes = (uint64_t)copy * sizeof(float), .ops_per_rep = m->n_copies,
                        .max_rel_diff = scale > 0 ? d / scale : d };
}
