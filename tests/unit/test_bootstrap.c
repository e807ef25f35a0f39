/* test_bootstrap.c: the segment bootstrap behind eval's intervals
 * (stats/bootstrap.h): a case worked by hand, segments that all score the
 * same (an interval of width 0), the seeded draws, an interval that narrows
 * as segments multiply, a paired difference, and the input it refuses. */
#include "testutil.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <string.h>

#include "stats/bootstrap.h"

/* Double rounding only. */
#define EXACT_TOL 1e-12

/* Two segments, four resamples given: (2, 0), (1, 1), (1, 1), (0, 2).
 * num = {0, 1}, den = {1, 3}: the ratios of sums are 0, 1/4, 1/4 and
 * 2/6 = 1/3 (a mean of the segments' own ratios, 0 and 1/3, would give 1/6
 * for the middle two). Sorted: 0, 1/4, 1/4, 1/3. The 2.5th percentile sits
 * at 0.025 x 3 = 0.075 of the way from the first to the second: 0.01875;
 * the 97.5th at 2.925: 1/4 + 0.925 x (1/3 - 1/4) = 0.32708333... */
static void test_worked_by_hand(void **state)
{
    (void)state;
    const unsigned counts[] = { 2, 0, 1, 1, 1, 1, 0, 2 };
    const double num[] = { 0, 1 }, den[] = { 1, 3 };
    Bootstrap b;
    Err e = { 0 };
    assert_int_equal(bootstrap_init_counts(&b, 2, 4, counts, &e), 0);
    BootInterval iv;
    assert_int_equal(bootstrap_ratio(&b, num, den, 0.95, &iv, &e), 0);
    assert_true(fabs(iv.lo - 0.01875) < EXACT_TOL);
    assert_true(fabs(iv.hi - (0.25 + 0.925 / 12)) < EXACT_TOL);
    /* at level 0.5: the 25th percentile at 0.75 (3/16), the 75th at 2.25 */
    assert_int_equal(bootstrap_ratio(&b, num, den, 0.5, &iv, &e), 0);
    assert_true(fabs(iv.lo - 0.1875) < EXACT_TOL);
    assert_true(fabs(iv.hi - (0.25 + 0.25 / 12)) < EXACT_TOL);
    bootstrap_free(&b);
}

/* Every segment the same: every resample the same ratio, an interval of
 * width exactly 0 at it. */
static void test_same_segments(void **state)
{
    (void)state;
    double num[40], den[40];
    for (size_t i = 0; i < 40; i++) {
        num[i] = 0.75;
        den[i] = 2.0;
    }
    Bootstrap b;
    Err e = { 0 };
    assert_int_equal(bootstrap_init(&b, 40, 500, 1, &e), 0);
    BootInterval iv;
    assert_int_equal(bootstrap_ratio(&b, num, den, 0.95, &iv, &e), 0);
    assert_true(iv.lo == 0.375 && iv.hi == 0.375);
    bootstrap_free(&b);
}

/* The draws: n items a resample, every item drawn about once a resample
 * on average, the same for the same seed, others for another. */
static void test_seeded_draws(void **state)
{
    (void)state;
    Bootstrap a, b, c;
    Err e = { 0 };
    assert_int_equal(bootstrap_init(&a, 32, 1000, 1, &e), 0);
    assert_int_equal(bootstrap_init(&b, 32, 1000, 1, &e), 0);
    assert_int_equal(bootstrap_init(&c, 32, 1000, 2, &e), 0);
    assert_memory_equal(a.counts, b.counts, 32 * 1000 * sizeof *a.counts);
    assert_true(memcmp(a.counts, c.counts, 32 * 1000 * sizeof *a.counts) != 0);
    double per_item[32] = { 0 };
    for (size_t s = 0; s < 1000; s++) {
        size_t drawn = 0;
        for (size_t k = 0; k < 32; k++) {
            drawn += a.counts[s * 32 + k];
            per_item[k] += a.counts[s * 32 + k];
        }
        assert_int_equal(drawn, 32);
    }
    for (size_t k = 0; k < 32; k++) /* mean 1, sd about (31/32)^0.5 / 1000^0.5 = 0.031 */
        assert_true(fabs(per_item[k] / 1000 - 1) < 0.15);
    bootstrap_free(&a);
    bootstrap_free(&b);
    bootstrap_free(&c);
}

/* The width of the interval of a mean of n noisy segments (sd 1) on the
 * same draws' seed. */
static double width_of(size_t n, double *lo_out, double *hi_out, double *mean_out)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    double *num = malloc(n * sizeof *num), *den = malloc(n * sizeof *den), mean = 0;
    assert_non_null(num);
    assert_non_null(den);
    for (size_t i = 0; i < n; i++) {
        num[i] = 1.5 + gsl_ran_gaussian(r, 1.0);
        den[i] = 1;
        mean += num[i] / (double)n;
    }
    Bootstrap b;
    Err e = { 0 };
    assert_int_equal(bootstrap_init(&b, n, 2000, 1, &e), 0);
    BootInterval iv;
    assert_int_equal(bootstrap_ratio(&b, num, den, 0.95, &iv, &e), 0);
    bootstrap_free(&b);
    free(num);
    free(den);
    gsl_rng_free(r);
    *lo_out = iv.lo;
    *hi_out = iv.hi;
    *mean_out = mean;
    return iv.hi - iv.lo;
}

/* Sixteen times the segments, a quarter of the width (about 2 x 1.96 /
 * sqrt(n)); the mean inside its interval each time. */
static void test_narrows(void **state)
{
    (void)state;
    double lo, hi, mean;
    const double w16 = width_of(16, &lo, &hi, &mean);
    assert_true(lo <= mean && mean <= hi);
    const double w256 = width_of(256, &lo, &hi, &mean);
    assert_true(lo <= mean && mean <= hi);
    assert_true(w256 < 0.4 * w16 && w256 > 0.15 * w16);
    assert_true(fabs(w256 - 2 * 1.96 / 16) < 0.05);
}

/* A paired difference: b is a plus a constant 0.1 a segment, so the
 * difference is 0.1 in every resample, however noisy a is; unpaired, each
 * interval is far wider than 0.1. */
static void test_paired(void **state)
{
    (void)state;
    double a[64], b[64], d[64], one[64];
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 3);
    for (size_t i = 0; i < 64; i++) {
        a[i] = gsl_ran_gaussian(r, 1.0);
        b[i] = a[i] + 0.125;
        d[i] = b[i] - a[i];
        one[i] = 1;
    }
    gsl_rng_free(r);
    Bootstrap bs;
    Err e = { 0 };
    assert_int_equal(bootstrap_init(&bs, 64, 1000, 1, &e), 0);
    BootInterval ia, id;
    assert_int_equal(bootstrap_ratio(&bs, a, one, 0.95, &ia, &e), 0);
    assert_int_equal(bootstrap_ratio(&bs, d, one, 0.95, &id, &e), 0);
    assert_true(ia.hi - ia.lo > 0.25);
    assert_true(fabs(id.lo - 0.125) < EXACT_TOL && fabs(id.hi - 0.125) < EXACT_TOL);
    bootstrap_free(&bs);
}

static void test_refuses(void **state)
{
    (void)state;
    Bootstrap b;
    Err e = { 0 };
    assert_int_equal(bootstrap_init(&b, 0, 100, 1, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_int_equal(bootstrap_init(&b, BOOTSTRAP_MAX_ITEMS + 1, 100, 1, &e), -1);
    assert_int_equal(bootstrap_init(&b, 4, 1, 1, &e), -1);
    const unsigned short_row[] = { 1, 0, 2, 0 };
    assert_int_equal(bootstrap_init_counts(&b, 2, 2, short_row, &e), -1);
    assert_non_null(strstr(e.msg, "draws 1 items, not 2"));
    assert_int_equal(bootstrap_init(&b, 4, 10, 1, &e), 0);
    const double x[4] = { 1, 2, 3, 4 };
    BootInterval iv;
    assert_int_equal(bootstrap_ratio(&b, x, x, 1.0, &iv, &e), -1);
    assert_int_equal(bootstrap_ratio(&b, x, x, 0.0, &iv, &e), -1);
    bootstrap_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_by_hand), cmocka_unit_test(test_same_segments),
        cmocka_unit_test(test_seeded_draws),   cmocka_unit_test(test_narrows),
        cmocka_unit_test(test_paired),         cmocka_unit_test(test_refuses),
    };
    return cmocka_run_group_tests_name("bootstrap", tests, NULL, NULL);
}
