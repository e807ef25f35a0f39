/* test_bench.c: the measuring library behind `kvscope bench` (kernels/bench.h).
 *
 * No timing is asserted (the machine may be shared); what is checked is that
 * the figures rest on right results: (a) medians and summaries; (b) every
 * read loop sums every float once (equal to the reference sum) and the read
 * sums to its known total on every kernel table; (c) every table, format,
 * form, group and cache state gives attention within BENCH_TOLERANCE of the
 * reference, and the counters give the bytes the format implies; (d) a
 * broken dot is caught; (e) the kernels' matvecs agree with the exact
 * answer (GSL's and OpenBLAS's live in the app: tests/cli/test_bench.sh); (f)
 * the cold pool holds identical copies, at least two, totalling the target. */
#include "testutil.h"

#include <string.h>

#include "kernels/bench.h"

#define HD 32 /* a small head: fast, and still whole SIMD vectors */

static void test_median_and_summary(void **state)
{
    (void)state;
    double odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 };
    assert_true(bench_median(odd, 3) == 3);
    assert_true(bench_median(even, 4) == 2.5);
    assert_true(bench_median(NULL, 0) == 0);

    BenchResult r[3] = {
        { .seconds = 2, .bytes = 100, .max_rel_diff = 1e-7 },
        { .seconds = 1, .bytes = 100, .max_rel_diff = 3e-7 },
        { .seconds = 9, .bytes = 100, .max_rel_diff = 2e-7 },
    };
    BenchResult s;
    bench_summarize(&s, r, 3);
    assert_true(s.seconds == 2 && s.seconds_min == 1 && s.seconds_max == 9);
    assert_true(s.bytes == 100 && s.max_rel_diff == 3e-7);
    r[2].max_rel_diff = NAN; /* a NaN output is the worst difference */
    bench_summarize(&s, r, 3);
    assert_true(isnan(s.max_rel_diff));
}

/* A loop that reads the first half twice and skips the second: the
 * reference must tell it apart. */
static double skipping_sum(const float *p, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += p[i % (n / 2)];
    return s;
}

/* Every read loop sums every float once: on seeded small integers (all
 * partial sums exact), each equals the reference, whole groups of streams
 * or not; on the bench's own buffer, the known total. */
static void test_read_sums(void **state)
{
    (void)state;
    const Kernels *ks[4];
    size_t n = kernels_available(ks, 4);
    BenchRead b;
    Err e = { 0 };
    assert_int_equal(bench_read_init(&b, 1 << 20, &e), 0);
    float *mixed = aligned_alloc(64, b.n * sizeof *mixed); /* the loops' alignment */
    assert_non_null(mixed);
    uint64_t x = 12345;
    for (size_t i = 0; i < b.n; i++) { /* 0..7: every partial sum below 2^24, exact in float */
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        mixed[i] = (float)(x >> 61);
    }
    const size_t sizes[3] = { b.n, b.n - 256, 256 }; /* the last two end in a partial group of streams */
    assert_true(skipping_sum(mixed, b.n) != bench_sum_ref(mixed, b.n));
    BenchLoop loops[BENCH_MAX_LOOPS];
    for (size_t i = 0; i < n; i++) {
        BenchResult r, d;
        bench_read(ks[i], NULL, &b, &d);
        printf("  %s f32 dot: sum off by %g\n", ks[i]->isa, d.max_rel_diff);
        assert_true(d.max_rel_diff == 0); /* small integers: exact */
        const size_t n_loops = bench_read_loops(ks[i], loops);
        assert_true(n_loops >= 4 && n_loops <= BENCH_MAX_LOOPS);
        for (size_t l = 0; l < n_loops; l++) {
            bench_read(ks[i], &loops[l], &b, &r);
            assert_true(r.max_rel_diff == 0);
            assert_true(r.bytes == (1 << 20) && r.seconds > 0);
            for (size_t z = 0; z < 3; z++) {
                const double want = bench_sum_ref(mixed, sizes[z]), got = loops[l].sum(mixed, sizes[z]);
                if (got != want)
                    printf("  %s over %zu floats: %.1f, the reference %.1f\n", loops[l].name, sizes[z], got, want);
                assert_true(got == want);
            }
        }
        printf("  %s: %zu read loops, each equal to the reference sum\n", ks[i]->isa, n_loops);

        BenchResult each[BENCH_MAX_LOOPS];
        const char *names[BENCH_MAX_LOOPS];
        size_t n_each = bench_read_each(ks[i], &b, 2, each, names);
        assert_int_equal(n_each, n_loops);
        size_t best = bench_fastest(each, n_each);
        for (size_t l = 0; l < n_each; l++) {
            assert_string_equal(names[l], loops[l].name);
            assert_true(each[l].max_rel_diff == 0 && each[best].seconds <= each[l].seconds);
        }
    }
    free(mixed);
    bench_read_free(&b);
}

/* Every table, format, form, group and cache state at a context that ends
 * in a partial tile: within tolerance of the reference, bytes as counted. */
static void test_attention_agrees(void **state)
{
    (void)state;
    const Kernels *ks[4];
    size_t n = kernels_available(ks, 4);
    const size_t context = 100, groups[2] = { 1, 4 };
    const AttendAlgo algos[3] = { ATTEND_FLASH, ATTEND_NAIVE, ATTEND_MATERIALIZE };
    Err e = { 0 };
    BenchScratch s;
    BenchPool pool;
    assert_int_equal(bench_scratch_init(&s, context, 4, HD, &e), 0);
    assert_int_equal(bench_pool_init(&pool, 1 << 20, 1 << 18, &e), 0);
    for (int f = 0; f < FMT_COUNT; f++) {
        BenchKv kv;
        assert_int_equal(bench_kv_init(&kv, (Format)f, context, HD, 7, &e), 0);
        assert_int_equal(bench_pool_fill(&pool, &kv, &e), 0);
        const uint64_t kv_bytes = 2 * context * format_row_bytes((Format)f, HD);
        double worst = 0;
        for (size_t gi = 0; gi < 2; gi++) {
            BenchQuery bq;
            assert_int_equal(bench_query_init(&bq, &kv, groups[gi], 0, &s, 11, &e), 0);
            for (size_t i = 0; i < n; i++)
                for (int a = 0; a < 3; a++)
                    for (int cold = 0; cold < 2; cold++) {
                        BenchResult r;
                        bench_attend(ks[i], &pool, &bq, &s, algos[a], cold, 0, &r);
                        if (!(r.max_rel_diff <= BENCH_TOLERANCE))
                            printf("  %s %s %s G=%zu %s: rel diff %g\n", ks[i]->isa, format_name((Format)f),
                                   attend_algo_name(algos[a]), groups[gi], cold ? "cold" : "warm", r.max_rel_diff);
                        assert_true(r.max_rel_diff <= BENCH_TOLERANCE);
                        worst = fmax(worst, r.max_rel_diff);
                        assert_true(r.bytes == kv_bytes);
                        assert_true(r.view_bytes == (algos[a] == ATTEND_MATERIALIZE ? 4 * context * HD * 4 : 0));
                        assert_true(r.ops_per_rep >= 1 && (!cold || r.ops_per_rep == pool.n_copies));
                    }
            bench_query_free(&bq);
        }
        printf("  %-5s worst rel diff over %zu tables, 3 forms, G 1 and 4, cold and warm: %.2g\n",
               format_name((Format)f), n, worst);
        bench_kv_free(&kv);
    }
    bench_pool_free(&pool);
    bench_scratch_free(&s);
}

/* A format's G = 1 and G = 4 steps and f32's, in turn over two pools of
 * different copy counts: every output right, every query one pass of its
 * own pool, both pools' cursors back where they started. */
static void test_cold_queries_in_turn(void **state)
{
    (void)state;
    const Kernels *ks[4];
    size_t n = kernels_available(ks, 4);
    const size_t context = 100;
    Err e = { 0 };
    BenchScratch s;
    BenchPool pool, f32_pool;
    BenchKv f32_kv;
    BenchQuery f32_q1, f32_q4;
    assert_int_equal(bench_scratch_init(&s, context, 4, HD, &e), 0);
    assert_int_equal(bench_pool_init(&pool, 1 << 20, 1 << 18, &e), 0);
    assert_int_equal(bench_pool_init(&f32_pool, 1 << 20, 1 << 18, &e), 0);
    assert_int_equal(bench_kv_init(&f32_kv, FMT_F32, context, HD, 5, &e), 0);
    assert_int_equal(bench_pool_fill(&f32_pool, &f32_kv, &e), 0);
    assert_int_equal(bench_query_init(&f32_q1, &f32_kv, 1, 0, &s, 13, &e), 0);
    assert_int_equal(bench_query_init(&f32_q4, &f32_kv, 4, 0, &s, 14, &e), 0);
    for (int f = 0; f < FMT_COUNT; f++)
        for (int int_dot = 0; int_dot < 2; int_dot++) {
            BenchKv kv;
            BenchQuery q1, q4;
            assert_int_equal(bench_kv_init(&kv, (Format)f, context, HD, 7, &e), 0);
            assert_int_equal(bench_pool_fill(&pool, &kv, &e), 0);
            assert_int_equal(bench_query_init(&q1, &kv, 1, int_dot, &s, 11, &e), 0);
            assert_int_equal(bench_query_init(&q4, &kv, 4, int_dot, &s, 12, &e), 0);
            BenchQuery *const queries[4] = { &q1, &q4, &f32_q1, &f32_q4 };
            BenchPool *const pools[4] = { &pool, &pool, &f32_pool, &f32_pool };
            for (size_t i = 0; i < n; i++) {
                BenchResult r[4];
                const size_t start = pool.next, f32_start = f32_pool.next;
                bench_attend_cold(ks[i], pools, queries, 4, &s, ATTEND_FLASH, r);
                assert_true(pool.next == start && f32_pool.next == f32_start);
                for (int j = 0; j < 4; j++) {
                    const Format jf = j < 2 ? (Format)f : FMT_F32;
                    if (!(r[j].max_rel_diff <= BENCH_TOLERANCE))
                        printf("  %s %s int_dot %d G=%zu in turn: rel diff %g\n", ks[i]->isa, format_name(jf),
                               int_dot, queries[j]->group, r[j].max_rel_diff);
                    assert_true(r[j].max_rel_diff <= BENCH_TOLERANCE);
                    assert_true(r[j].bytes == 2 * context * format_row_bytes(jf, HD));
                    assert_true(r[j].ops_per_rep == pools[j]->n_copies && r[j].seconds > 0);
                }
            }
            bench_query_free(&q1);
            bench_query_free(&q4);
            bench_kv_free(&kv);
        }
    bench_query_free(&f32_q1);
    bench_query_free(&f32_q4);
    bench_kv_free(&f32_kv);
    bench_pool_free(&f32_pool);
    bench_pool_free(&pool);
    bench_scratch_free(&s);
}

/* A dot that forgets the row: the check must call it wrong. */
static void broken_dot(float *out, const float *q, size_t G, const void *row, size_t n)
{
    (void)q, (void)row, (void)n;
    for (size_t g = 0; g < G; g++)
        out[g] = 0.0f;
}

/* The same forgetting in the tile form, which attention calls. */
static void broken_dot_rows(float *out, size_t ld, const float *q, size_t G, const void *rows, size_t stride,
                            size_t n_rows, size_t n, const RowsAhead *ahead)
{
    (void)q, (void)rows, (void)stride, (void)n, (void)ahead;
    for (size_t g = 0; g < G; g++)
        for (size_t r = 0; r < n_rows; r++)
            out[g * ld + r] = 0.0f;
}

static void test_broken_kernel_caught(void **state)
{
    (void)state;
    Err e = { 0 };
    const Kernels *ref = kernels_select("ref", &e);
    FormatOps codec[FMT_COUNT];
    memcpy(codec, ref->codec, sizeof codec);
    codec[FMT_F32].dot = broken_dot;
    codec[FMT_F32].dot_rows = broken_dot_rows;
    Kernels broken = *ref;
    broken.codec = codec;

    BenchScratch s;
    BenchPool pool;
    BenchKv kv;
    BenchQuery bq;
    assert_int_equal(bench_scratch_init(&s, 64, 1, HD, &e), 0);
    assert_int_equal(bench_pool_init(&pool, 1 << 20, 1 << 16, &e), 0);
    assert_int_equal(bench_kv_init(&kv, FMT_F32, 64, HD, 3, &e), 0);
    assert_int_equal(bench_pool_fill(&pool, &kv, &e), 0);
    assert_int_equal(bench_query_init(&bq, &kv, 1, 0, &s, 5, &e), 0);
    BenchResult r;
    bench_attend(&broken, &pool, &bq, &s, ATTEND_FLASH, 1, 0, &r);
    printf("  f32 with a dot that ignores the row: rel diff %g\n", r.max_rel_diff);
    assert_true(r.max_rel_diff > BENCH_TOLERANCE);

    BenchRead b;
    assert_int_equal(bench_read_init(&b, 1 << 16, &e), 0);
    bench_read(&broken, NULL, &b, &r);
    assert_true(r.max_rel_diff > BENCH_TOLERANCE);
    bench_read_free(&b);
    bench_query_free(&bq);
    bench_kv_free(&kv);
    bench_pool_free(&pool);
    bench_scratch_free(&s);
}

static void test_matvec_agrees(void **state)
{
    (void)state;
    Err e = { 0 };
    BenchMatrix m;
    assert_int_equal(bench_matrix_init(&m, 96, 200, 1, 9, &e), 0); /* odd sizes: tails */
    assert_true(m.n_copies == 2);
    const Kernels *ks[4];
    size_t n = kernels_available(ks, 4);
    BenchResult r;
    for (size_t i = 0; i < n; i++) {
        bench_matvec(bench_matvec_kernels, ks[i], &m, &r);
        printf("  matvec %s: rel diff %.2g\n", ks[i]->isa, r.max_rel_diff);
        assert_true(r.max_rel_diff <= 1e-5 && r.bytes == 96 * 200 * sizeof(float));
    }
    bench_matrix_free(&m);
}

static void test_pool_copies(void **state)
{
    (void)state;
    Err e = { 0 };
    BenchKv kv;
    BenchPool pool;
    assert_int_equal(bench_kv_init(&kv, FMT_Q4_0, 50, HD, 1, &e), 0);
    const size_t target = 10 * kv.copy_bytes + 1;
    assert_int_equal(bench_pool_bytes(kv.copy_bytes, target), 11 * kv.copy_bytes);
    assert_int_equal(bench_pool_bytes(kv.copy_bytes, 1), 2 * kv.copy_bytes); /* never fewer than 2 */
    assert_int_equal(bench_pool_init(&pool, 5 * kv.copy_bytes, target, &e), 0);
    assert_int_equal(bench_pool_fill(&pool, &kv, &e), -1); /* 11 copies do not fit in 5 */
    bench_pool_free(&pool);
    assert_int_equal(bench_pool_init(&pool, 11 * kv.copy_bytes, target, &e), 0);
    assert_int_equal(bench_pool_fill(&pool, &kv, &e), 0);
    assert_int_equal(pool.n_copies, 11);
    for (size_t c = 0; c < pool.n_copies; c++) {
        assert_true(memcmp(pool.mem + c * kv.copy_bytes, kv.master, kv.copy_bytes) == 0);
        assert_ptr_equal(pool.blocks[c].k, pool.mem + c * kv.copy_bytes);
        assert_int_equal(pool.blocks[c].n, 50);
    }
    bench_pool_free(&pool);
    bench_kv_free(&kv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_and_summary),
        cmocka_unit_test(test_read_sums),          cmocka_unit_test(test_attention_agrees),
        cmocka_unit_test(test_cold_queries_in_turn),
        cmocka_unit_test(test_broken_kernel_caught), cmocka_unit_test(test_matvec_agrees),
        cmocka_unit_test(test_pool_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
