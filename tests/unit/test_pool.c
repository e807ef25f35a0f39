/* test_pool.c: the worker threads of util/pool.h: every iteration once,
 * jobs back to back, a run inside a run, and the thread count's limits. */
#include <stdatomic.h>

#include "testutil.h"
#include "util/pool.h"

#define N_ITEMS 1000

typedef struct {
    atomic_int seen[N_ITEMS]; /* how often each iteration ran */
    size_t n;
} Tally;

static void count(void *ctx, size_t i)
{
    Tally *t = ctx;
    atomic_fetch_add(&t->seen[i], 1);
}

static void expect_once(Tally *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (atomic_load(&t->seen[i]) != 1)
            fail_msg("iteration %zu of %zu ran %d times", i, t->n, atomic_load(&t->seen[i]));
}

/* Many short jobs in a row, of every size from 0: a worker late to one job
 * must never take an iteration of the next. */
static void test_every_iteration_once(void **state)
{
    (void)state;
    Err e = { 0 };
    for (size_t threads = 1; threads <= 4; threads++) {
        assert_int_equal(pool_set_threads(threads, &e), 0);
        assert_int_equal(pool_threads(), threads);
        for (size_t round = 0; round < 300; round++) {
            static Tally t;
            memset(&t, 0, sizeof t);
            t.n = (round * 37) % (N_ITEMS + 1);
            pool_run(t.n, count, &t);
            expect_once(&t);
        }
    }
}

/* A run from inside an iteration runs on its caller's thread, whole. */
typedef struct {
    Tally inner[4];
} Nest;

static void nested(void *ctx, size_t i)
{
    Nest *n = ctx;
    n->inner[i].n = 100;
    pool_run(n->inner[i].n, count, &n->inner[i]);
}

static void test_nested_run(void **state)
{
    (void)state;
    Err e = { 0 };
    assert_int_equal(pool_set_threads(2, &e), 0);
    static Nest n;
    memset(&n, 0, sizeof n);
    pool_run(4, nested, &n);
    for (size_t i = 0; i < 4; i++)
        expect_once(&n.inner[i]);
}

static void test_limits(void **state)
{
    (void)state;
    Err e = { 0 };
    assert_int_equal(pool_set_threads(POOL_MAX_THREADS + 1, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "--threads: at most"));
    assert_int_equal(pool_set_threads(0, &e), 0); /* the CPUs this process may use */
    assert_true(pool_threads() >= 1);
    assert_int_equal(pool_set_threads(1, &e), 0); /* fewer again: the caller alone */
    static Tally t;
    memset(&t, 0, sizeof t);
    t.n = 10;
    pool_run(t.n, count, &t);
    expect_once(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_iteration_once),
        cmocka_unit_test(test_nested_run),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
