/* bench.c: the clock, the cache size, read bandwidth and matrix-vector
 * products (bench_attend.c times attention). */
#include <dlfcn.h>
#include <gsl/gsl_cblas.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/bench_mem.h"

/* Floats per chunk of the read: 16 KiB, a vector that stays in L1. */
#define READ_CHUNK 4096

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

/* "32768K", "32M", "33554432" -> bytes; 0 when unreadable. */
static size_t parse_cache_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return 0;
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    return (size_t)v;
}

size_t bench_llc_bytes(const char **source)
{
    /* the highest cache level sysfs lists for cpu0 is the last level */
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], text[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int level = 0;
        if (fscanf(f, "%d", &level) != 1)
            level = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (!f)
            continue;
        size_t size = fgets(text, sizeof text, f) ? parse_cache_size(text) : 0;
        fclose(f);
        if (size && level >= best_level) {
            best = size;
            best_level = level;
        }
    }
    if (best && best_level >= 2) {
        *source = "sysfs";
        return best;
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) {
        *source = "sysconf";
        return (size_t)l3;
    }
#endif
    *source = "unknown";
    return 0;
}

/* --- 1. read bandwidth ---------------------------------------------------- */

int bench_read(const Kernels *k, size_t bytes, const BenchTiming *t, BenchResult *r, Err *e)
{
    size_t chunks = bytes / (READ_CHUNK * sizeof(float));
    if (chunks == 0)
        chunks = 1;
    const size_t n = chunks * READ_CHUNK;
    float *buf = bench_alloc(n * sizeof(float), "the read-bandwidth buffer", e); /* [chunks][READ_CHUNK] */
    float *ones = bench_alloc(READ_CHUNK * sizeof(float), "the read vector", e);  /* [READ_CHUNK] */
    double *times = bench_alloc(t->reps * sizeof(double), "timings", e);
    int rc = -1;
    if (!buf || !ones || !times)
        goto done;
    for (size_t i = 0; i < READ_CHUNK; i++)
        ones[i] = 1.0f;
    for (size_t i = 0; i < n; i++) /* small integers: every partial sum is exact */
        buf[i] = (float)(i % 4);

    const FormatOps *f32 = &k->codec[FMT_F32];
    double sum = 0;
    for (size_t rep = 0; rep < t->reps; rep++) {
        sum = 0;
        double t0 = bench_now();
        for (size_t c = 0; c < chunks; c++) {
            float s;
            f32->dot(&s, ones, 1, buf + c * READ_CHUNK, READ_CHUNK);
            sum += s;
        }
        times[rep] = bench_now() - t0;
    }
    const double want = 1.5 * (double)n; /* 0, 1, 2, 3 repeating; READ_CHUNK is a multiple of 4 */
    *r = (BenchResult){ .seconds = bench_median(times, t->reps), .bytes = (uint64_t)n * sizeof(float),
                        .ops_per_rep = 1, .max_rel_diff = (sum - want) / want };
    if (r->max_rel_diff < 0)
        r->max_rel_diff = -r->max_rel_diff;
    rc = 0;
done:
    free(buf);
    free(ones);
    free(times);
    return rc;
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

void bench_matvec_gsl(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols)
{
    (void)ctx;
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)rows, (int)cols, 1.0f, w, (int)cols, x, 1, 0.0f, y, 1);
}

int bench_openblas_open(BenchOpenblas *ob, char *why, size_t cap)
{
    memset(ob, 0, sizeof *ob);
    ob->handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!ob->handle) {
        const char *msg = dlerror();
        snprintf(why, cap, "%s", msg ? msg : "libopenblas.so.0 not found");
        return -1;
    }
    *(void **)&ob->sgemv = dlsym(ob->handle, "cblas_sgemv");
    if (!ob->sgemv) {
        snprintf(why, cap, "libopenblas.so.0 has no cblas_sgemv");
        bench_openblas_close(ob);
        return -1;
    }
    void (*set_threads)(int) = NULL;
    *(void **)&set_threads = dlsym(ob->handle, "openblas_set_num_threads");
    if (set_threads)
        set_threads(1); /* one core, as every other figure */
    /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "0.3.21", and the core it chose */
    char *(*get_config)(void) = NULL, *(*get_core)(void) = NULL;
    *(void **)&get_config = dlsym(ob->handle, "openblas_get_config");
    *(void **)&get_core = dlsym(ob->handle, "openblas_get_corename");
    char version[32] = "";
    if (get_config && get_config() && sscanf(get_config(), "OpenBLAS %31s", version) != 1)
        version[0] = '\0';
    snprintf(ob->config, sizeof ob->config, "%s%s%s%s", version, *version ? " " : "",
             get_core && get_core() ? get_core() : "", set_threads ? ", 1 thread" : "");
    return 0;
}

void bench_openblas_close(BenchOpenblas *ob)
{
    if (ob->handle)
        dlclose(ob->handle);
    memset(ob, 0, sizeof *ob);
}

void bench_matvec_openblas(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols)
{
    const BenchOpenblas *ob = ctx;
    /* CBLAS's enum values, the same in every CBLAS: RowMajor 101, NoTrans 111 */
    ob->sgemv(101, 111, (int)rows, (int)cols, 1.0f, w, (int)cols, x, 1, 0.0f, y, 1);
}

int bench_matvec(BenchMatvecFn fn, const void *ctx, BenchMatrix *m, const BenchTiming *t, BenchResult *r, Err *e)
{
    double *times = bench_alloc(t->reps * sizeof(double), "timings", e);
    if (!times)
        return -1;
    const size_t copy = m->rows * m->cols;
    for (size_t rep = 0; rep < t->reps; rep++) {
        double t0 = bench_now();
        for (size_t c = 0; c < m->n_copies; c++) {
            fn(ctx, m->y, m->pool + m->next * copy, m->x, m->rows, m->cols);
            m->next = (m->next + 1) % m->n_copies;
        }
        times[rep] = (bench_now() - t0) / (double)m->n_copies;
    }
    double d = 0, scale = 0;
    for (size_t o = 0; o < m->rows; o++) {
        double a = fabs(m->y[o] - m->ref[o]);
        d = a > d || a != a ? a : d;
        scale = fmax(scale, fabs(m->ref[o]));
    }
    *r = (BenchResult){ .seconds = bench_median(times, t->reps), .bytes = (uint64_t)copy * sizeof(float),
                        .ops_per_rep = m->n_copies, .max_rel_diff = scale > 0 ? d / scale : d };
    free(times);
    return 0;
}
