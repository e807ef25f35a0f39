/* decode_bench.c: a model's decode step against its byte limit (decode_bench.h). */
#include "sim/decode_bench.h"

#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "model/forward.h"
#include "util/clock.h"

#define MAX_STEPS 64
#define FILL_ROWS 1024 /* rows appended per call while filling */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Seeded values in [-1, 1): the rows' content does not change what a step
 * reads, only that it is finite and not all alike. */
static void fill_values(float *x, size_t n, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(*state >> 40) / (double)(1ULL << 23) - 1.0);
    }
}

/* Every layer's first `context` rows, FILL_ROWS at a time. */
static int fill_cache(const Model *m, KvCache *cache, size_t context, Err *e)
{
    const size_t kv_dim = cache->geo.n_kv_heads * cache->geo.head_dim;
    float *k = malloc(FILL_ROWS * kv_dim * sizeof(float)), *v = malloc(FILL_ROWS * kv_dim * sizeof(float));
    uint64_t state = 0x6b7673636f7065ULL;
    int rc = 0;
    if (!k || !v)
        rc = err_set(e, ERR_RUNTIME, "out of memory filling the cache");
    for (size_t l = 0; rc == 0 && l < m->cfg.n_layers; l++)
        for (size_t pos = 0; rc == 0 && pos < context; pos += FILL_ROWS) {
            size_t n = context - pos < FILL_ROWS ? context - pos : FILL_ROWS;
            fill_values(k, n * kv_dim, &state);
            fill_values(v, n * kv_dim, &state);
            Counters none = { 0 };
            rc = kv_append(cache, l, 0, pos, n, k, v, &none, e);
        }
    free(k);
    free(v);
    return rc;
}

int decode_bench_run(const Model *m, const char *spec, DecodeBench *r, Err *e)
{
    if (r->steps == 0 || r->steps > MAX_STEPS)
        return err_set(e, ERR_USAGE, "decode bench: 1 to %d steps, got %zu", MAX_STEPS, r->steps);
    if (r->context + r->steps > m->cfg.max_seq_len)
        return err_set(e, ERR_USAGE, "decode bench: %zu rows and %zu steps exceed max_seq_len %zu", r->context,
                       r->steps, m->cfg.max_seq_len);
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *cache = kv_open(spec, &geo, e);
    if (!cache)
        return -1;
    ForwardState fs;
    float *logits = malloc(m->cfg.vocab * sizeof(float));
    double t[MAX_STEPS];
    Counters ctr[MAX_STEPS];
    int rc = -1, fs_ready = 0;
    if (!logits) {
        err_set(e, ERR_RUNTIME, "out of memory");
        goto done;
    }
    if (forward_state_init(&fs, &m->cfg, 1, 0, e) < 0)
        goto done;
    fs_ready = 1;
    if (fill_cache(m, cache, r->context, e) < 0)
        goto done;
    for (size_t s = 0; s < r->steps; s++) {
        int token = (int)(s % m->cfg.vocab);
        memset(&ctr[s], 0, sizeof ctr[s]);
        double t0 = clock_seconds();
        if (model_forward(m, &fs, cache, &token, 1, 1, r->context + s, logits, &ctr[s], e) < 0)
            goto done;
        t[s] = clock_seconds() - t0;
    }
    size_t mid = r->steps / 2;
    r->weight_bytes = ctr[mid].weight_bytes_read;
    r->kv_bytes = ctr[mid].kv_bytes_read;
    r->cache_bytes = kv_bytes_used(cache);
    qsort(t, r->steps, sizeof t[0], cmp_double);
    r->seconds = r->steps % 2 ? t[mid] : 0.5 * (t[mid - 1] + t[mid]);
    r->seconds_min = t[0];
    r->seconds_max = t[r->steps - 1];
    rc = 0;
done:
    if (fs_ready)
        forward_state_free(&fs);
    free(logits);
    kv_free(cache);
    return rc;
}

double decode_bench_limit(const DecodeBench *r, double bandwidth)
{
    return bandwidth > 0 ? (double)(r->weight_bytes + r->kv_bytes) / bandwidth : 0;
}
