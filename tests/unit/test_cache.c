/* test_cache.c: the cache interface's accounting and its refusals, for
 * every layout: empty caches, exact sizes, linear growth, overflow, copy
 * cost of the dynamic layout, and bad spec strings. */
#include "testutil.h"

#include "kv/cache.h"

static KvGeometry geometry(size_t layers, size_t seqs, size_t kv_heads, size_t head_dim, size_t max)
{
    return (KvGeometry){ .n_layers = layers, .n_seqs = seqs, .n_kv_heads = kv_heads, .head_dim = head_dim,
                         .max_seq_len = max };
}

static const char *const layouts[] = { "contiguous", "dynamic" };

/* n rows of K and V for (layer, seq) with recognisable values. */
static int append_rows(KvCache *c, size_t layer, size_t seq, size_t n, Err *e)
{
    const KvGeometry *g = &c->geo;
    size_t floats = n * g->n_kv_heads * g->head_dim;
    float *k = malloc(floats * sizeof(float)), *v = malloc(floats * sizeof(float));
    size_t pos = kv_length(c, layer, seq);
    for (size_t i = 0; i < floats; i++) {
        k[i] = (float)(pos * 1000 + i);
        v[i] = -(float)(pos * 1000 + i);
    }
    int rc = kv_append(c, layer, seq, pos, n, k, v, NULL, e);
    free(k);
    free(v);
    return rc;
}

static void test_empty_cache(void **state)
{
    (void)state;
    KvGeometry g = geometry(2, 2, 4, 16, 32);
    for (size_t i = 0; i < 2; i++) {
        Err e = { 0 };
        KvCache *c = kv_open(layouts[i], &g, &e);
        assert_non_null(c);
        for (size_t l = 0; l < 2; l++)
            for (size_t s = 0; s < 2; s++) {
                assert_int_equal(kv_length(c, l, s), 0);
                assert_int_equal(kv_n_blocks(c, l, s), 0);
            }
        assert_int_equal(kv_bytes_used(c), 0);
        kv_free(c);
    }
}

/* The document's test_known_size: 4 layers, batch 2, 8 KV heads, d_k 32,
 * 10 tokens; f32 here where the document used float64. */
static void test_known_size(void **state)
{
    (void)state;
    const size_t n_layers = 4, B = 2, n_kv = 8, d_k = 32, seq_len = 10;
    KvGeometry g = geometry(n_layers, B, n_kv, d_k, 64);
    for (size_t i = 0; i < 2; i++) {
        Err e = { 0 };
        KvCache *c = kv_open(layouts[i], &g, &e);
        for (size_t l = 0; l < n_layers; l++)
            for (size_t s = 0; s < B; s++)
                assert_int_equal(append_rows(c, l, s, seq_len, &e), 0);
        assert_int_equal(kv_bytes_used(c), 2 * n_layers * B * n_kv * seq_len * d_k * sizeof(float));
        kv_free(c);
    }
    Err e = { 0 };
    KvCache *c = kv_open("contiguous", &g, &e);
    assert_int_equal(kv_bytes_reserved(c), 2 * n_layers * B * n_kv * 64 * d_k * sizeof(float));
    kv_free(c);
}

/* The document's test_linear_growth: a constant increment per token. */
static void test_linear_growth(void **state)
{
    (void)state;
    KvGeometry g = geometry(2, 1, 4, 16, 32);
    for (size_t i = 0; i < 2; i++) {
        Err e = { 0 };
        KvCache *c = kv_open(layouts[i], &g, &e);
        size_t prev = kv_bytes_used(c), step = 0;
        for (size_t t = 0; t < 10; t++) {
            assert_int_equal(append_rows(c, 0, 0, 1, &e), 0);
            assert_int_equal(append_rows(c, 1, 0, 1, &e), 0);
            size_t now = kv_bytes_used(c);
            if (t == 0)
                step = now - prev;
            assert_int_equal(now - prev, step);
            prev = now;
        }
        assert_int_equal(step, 2 * 2 * 4 * 16 * sizeof(float)); /* 2 layers, K+V, 4 heads, 16 dims */
        kv_free(c);
    }
}

static void test_rows_read_back(void **state)
{
    (void)state;
    KvGeometry g = geometry(1, 2, 3, 4, 16);
    for (size_t i = 0; i < 2; i++) {
        Err e = { 0 };
        KvCache *c = kv_open(layouts[i], &g, &e);
        assert_int_equal(append_rows(c, 0, 1, 3, &e), 0);
        assert_int_equal(append_rows(c, 0, 1, 2, &e), 0);
        assert_int_equal(kv_length(c, 0, 0), 0);
        assert_int_equal(kv_length(c, 0, 1), 5);
        for (size_t h = 0; h < 3; h++) {
            KvBlock b;
            assert_int_equal(kv_n_blocks(c, 0, 1), 1);
            kv_block(c, 0, 1, h, 0, &b);
            assert_int_equal(b.pos, 0);
            assert_int_equal(b.n, 5);
            /* row at position 4 came from the second append (pos 3), token 1 */
            const float *k = (const float *)((const char *)b.k + 4 * b.k_stride);
            const float *v = (const float *)((const char *)b.v + 4 * b.v_stride);
            assert_true(k[0] == (float)(3 * 1000 + (1 * 3 + h) * 4));
            assert_true(v[2] == -(float)(3 * 1000 + (1 * 3 + h) * 4 + 2));
        }
        kv_free(c);
    }
}

static void test_overflow_is_an_error(void **state)
{
    (void)state;
    KvGeometry g = geometry(1, 1, 2, 8, 4);
    for (size_t i = 0; i < 2; i++) {
        Err e = { 0 };
        KvCache *c = kv_open(layouts[i], &g, &e);
        assert_int_equal(append_rows(c, 0, 0, 3, &e), 0);
        assert_int_equal(append_rows(c, 0, 0, 2, &e), -1);
        assert_int_equal(e.kind, ERR_RUNTIME);
        assert_non_null(strstr(e.msg, "cache overflow"));
        assert_int_equal(kv_length(c, 0, 0), 3); /* nothing half-written */
        assert_int_equal(append_rows(c, 0, 0, 1, &e), 0);
        assert_int_equal(kv_length(c, 0, 0), 4);
        kv_free(c);
    }
}

/* Dynamic: n one-row appends copy 0 + 1 + ... + (n-1) rows of K and of V. */
static void test_dynamic_copy_cost_is_quadratic(void **state)
{
    (void)state;
    KvGeometry g = geometry(1, 1, 2, 8, 64);
    Err e = { 0 };
    KvCache *c = kv_open("dynamic", &g, &e);
    Counters ctr = { 0 };
    const size_t n = 20, row = 2 * 8 * sizeof(float); /* one position, both heads */
    float k[16] = { 0 }, v[16] = { 0 };
    for (size_t t = 0; t < n; t++)
        assert_int_equal(kv_append(c, 0, 0, t, 1, k, v, &ctr, &e), 0);
    uint64_t copied = 0;
    for (size_t t = 0; t < n; t++)
        copied += 2 * t * row;
    assert_int_equal(ctr.allocations, 2 * n);
    assert_int_equal(ctr.bytes_copied, copied);
    assert_int_equal(ctr.kv_bytes_written, 2 * n * row);
    kv_free(c);
}

static void test_bad_specs(void **state)
{
    (void)state;
    KvGeometry g = geometry(1, 1, 2, 8, 16);
    const struct { const char *spec, *want; } bad[] = {
        { "paged-nonsense", "unknown cache 'paged-nonsense' (accepted: contiguous, dynamic, " },
        { "", "empty cache name" },
        { "contiguous:max=abc", "not a whole number" },
        { "contiguous:max=0", "at least 1" },
        { "contiguous:max=99", "beyond the model's max_seq_len 16" },
        { "contiguous:window=3", "has no option 'window'" },
        { "contiguous:max", "is not key=value" },
        { "dynamic:max=4", "has no option 'max'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Err e = { 0 };
        KvCache *c = kv_open(bad[i].spec, &g, &e);
        if (c || e.kind != ERR_USAGE || !strstr(e.msg, bad[i].want))
            fail_msg("spec '%s': got '%s', want a usage error containing '%s'", bad[i].spec, e.msg, bad[i].want);
    }
    Err e = { 0 };
    KvCache *c = kv_open("contiguous:max=8", &g, &e);
    assert_non_null(c);
    assert_int_equal(kv_bytes_reserved(c), 8 * 2 * 2 * 8 * sizeof(float));
    /* its room, known before any append: 8 rows fit, 9 overflow */
    assert_int_equal(kv_capacity(c), 8);
    assert_int_equal(kv_check_room(c, 8, &e), 0);
    assert_int_equal(kv_check_room(c, 9, &e), -1);
    assert_int_equal(e.kind, ERR_RUNTIME);
    assert_non_null(strstr(e.msg, "cache overflow"));
    kv_free(c);
    c = kv_open("dynamic", &g, &e); /* no capacity of its own: max_seq_len */
    assert_non_null(c);
    assert_int_equal(kv_capacity(c), g.max_seq_len);
    kv_free(c);
}

/* Options that size a cache beyond the positions a sequence can reach
 * (issue 21: a fork copied 12 KB per unit of hot=, group=, warm_rows= or
 * window=) are kept at max_seq_len: such a cache reserves and copies what
 * the same cache sized at max_seq_len does. */
static void cache_cost(const char *spec, const KvGeometry *g, size_t *reserved, size_t *copied)
{
    Err e = { 0 };
    KvCache *c = kv_open(spec, g, &e);
    if (!c)
        fail_msg("spec '%s' refused: %s", spec, e.msg);
    for (size_t t = 0; t < 5; t++) /* a row at a time: a ring of pass=1 takes no more */
        for (size_t l = 0; l < g->n_layers; l++)
            if (append_rows(c, l, 0, 1, &e) < 0)
                fail_msg("spec '%s': %s", spec, e.msg);
    Counters ctr = { 0 };
    assert_int_equal(kv_fork(c, 0, 1, &ctr, &e), 0);
    *reserved = kv_bytes_reserved(c);
    *copied = (size_t)ctr.bytes_copied;
    kv_free(c);
}

static void test_options_bounded_by_max_seq_len(void **state)
{
    (void)state;
    KvGeometry g = geometry(2, 2, 2, 8, 20);
    const struct { const char *huge, *at_max; } pairs[] = {
        { "mixed:hot=2000000", "mixed:hot=20" },
        { "mixed:hot=4,group=2,warm_rows=2000000", "mixed:hot=4,group=2,warm_rows=20" },
        { "kivi:group=2000000", "kivi:group=21" }, /* 21: a group that never fills */
        { "ring:window=2000000", "ring:window=20,pass=1" },
        { "ring:window=4,pass=2000000", "ring:window=20,pass=1" },
        { "ring:window=4,sinks=2000000", "ring:window=1,sinks=20,pass=1" },
        { "h2o:budget=2000000,recent=4", "h2o:budget=20,recent=4,pass=1" },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        size_t r_huge, c_huge, r_max, c_max;
        cache_cost(pairs[i].huge, &g, &r_huge, &c_huge);
        cache_cost(pairs[i].at_max, &g, &r_max, &c_max);
        if (r_huge != r_max || c_huge != c_max)
            fail_msg("'%s' reserves %zu B and a fork copies %zu B; '%s' %zu B and %zu B", pairs[i].huge, r_huge,
                     c_huge, pairs[i].at_max, r_max, c_max);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_cache),
        cmocka_unit_test(test_known_size),
        cmocka_unit_test(test_linear_growth),
        cmocka_unit_test(test_rows_read_back),
        cmocka_unit_test(test_overflow_is_an_error),
        cmocka_unit_test(test_dynamic_copy_cost_is_quadratic),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_options_bounded_by_max_seq_len),
    };
    return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
