/* test_fit.c: the fits plots print (stats/fit.h), on synthetic data whose
 * slopes are known: exact lines, exact and noisy power laws, the sums that
 * figure 1 fits, and the inputs a fit must refuse. */
#include "testutil.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "stats/fit.h"

/* How close a fit of exact data must come: double rounding only. */
#define EXACT_TOL 1e-9

static void test_exact_line(void **state)
{
    (void)state;
    double x[20], y[20];
    for (size_t i = 0; i < 20; i++) {
        x[i] = (double)i - 5.0;
        y[i] = 3.25 - 0.5 * x[i];
    }
    FitLine f;
    Err e = { 0 };
    assert_int_equal(fit_linear(x, y, 20, &f, &e), 0);
    assert_true(fabs(f.slope + 0.5) < EXACT_TOL);
    assert_true(fabs(f.intercept - 3.25) < EXACT_TOL);
    assert_true(fabs(f.r2 - 1.0) < EXACT_TOL);
    assert_true(f.slope_err < EXACT_TOL);
    assert_int_equal(f.n, 20);
}

/* y = a x^k over x = 1 .. 1000, log-spaced: the exponent comes back. */
static void test_exact_power_laws(void **state)
{
    (void)state;
    const double k[] = { 0.5, 1.0, 2.0, 3.0 }, a[] = { 7.0, 1.0, 0.5, 1e-3 };
    double x[40], y[40];
    for (size_t t = 0; t < 4; t++) {
        for (size_t i = 0; i < 40; i++) {
            x[i] = pow(10.0, 3.0 * (double)i / 39.0);
            y[i] = a[t] * pow(x[i], k[t]);
        }
        FitLine f;
        Err e = { 0 };
        assert_int_equal(fit_power_law(x, y, 40, &f, &e), 0);
        printf("  y = %g x^%g: slope %.12f, prefactor %.12g\n", a[t], k[t], f.slope, exp(f.intercept));
        assert_true(fabs(f.slope - k[t]) < EXACT_TOL);
        assert_true(fabs(exp(f.intercept) - a[t]) < EXACT_TOL * a[t] * 10);
    }
}

/* Multiplicative noise of 5% (seeded): the slope is still within 0.02 and
 * its standard error says how far off it might be. */
static void test_noisy_power_law(void **state)
{
    (void)state;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 12345);
    double x[200], y[200];
    for (size_t i = 0; i < 200; i++) {
        x[i] = 1.0 + (double)i;
        y[i] = 2.0 * x[i] * x[i] * exp(gsl_ran_gaussian(rng, 0.05));
    }
    gsl_rng_free(rng);
    FitLine f;
    Err e = { 0 };
    assert_int_equal(fit_power_law(x, y, 200, &f, &e), 0);
    printf("  noisy x^2: slope %.4f +- %.4f, r2 %.5f\n", f.slope, f.slope_err, f.r2);
    assert_true(fabs(f.slope - 2.0) < 0.02);
    assert_true(f.slope_err > 0 && f.slope_err < 0.02);
    assert_true(fabs(f.slope - 2.0) < 5 * f.slope_err);
    assert_true(f.r2 > 0.99 && f.r2 < 1.0);
}

/* Figure 1's curves: from a one-token prompt, cached generation of n tokens
 * projects n rows in all, uncached n(n+1)/2; over n = 16 .. 256 the fitted
 * exponents are 1 and just under 2 (the +1 bends the curve at small n). */
static void test_generation_sums(void **state)
{
    (void)state;
    double x[241], cached[241], uncached[241];
    for (size_t i = 0; i < 241; i++) {
        double n = 16.0 + (double)i;
        x[i] = n;
        cached[i] = n;
        uncached[i] = n * (n + 1) / 2;
    }
    FitLine fc, fu;
    Err e = { 0 };
    assert_int_equal(fit_power_law(x, cached, 241, &fc, &e), 0);
    assert_int_equal(fit_power_law(x, uncached, 241, &fu, &e), 0);
    printf("  cumulative rows: cached slope %.4f, uncached slope %.4f\n", fc.slope, fu.slope);
    assert_true(fabs(fc.slope - 1.0) < EXACT_TOL);
    assert_true(fu.slope > 1.9 && fu.slope < 2.0);
}

static void test_refuses_bad_input(void **state)
{
    (void)state;
    double x[3] = { 1, 2, 3 }, y[3] = { 1, 4, 9 }, same[3] = { 2, 2, 2 }, neg[3] = { 1, -4, 9 };
    double bad[3] = { 1, NAN, 3 };
    FitLine f;
    Err e = { 0 };
    assert_int_equal(fit_linear(x, y, 1, &f, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "at least 2"));
    assert_int_equal(fit_linear(same, y, 3, &f, &e), -1);
    assert_non_null(strstr(e.msg, "vary"));
    assert_int_equal(fit_linear(x, bad, 3, &f, &e), -1);
    assert_non_null(strstr(e.msg, "not finite"));
    assert_int_equal(fit_power_law(x, neg, 3, &f, &e), -1);
    assert_non_null(strstr(e.msg, "not positive"));
    assert_int_equal(fit_power_law(x, y, 0, &f, &e), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_line),
        cmocka_unit_test(test_exact_power_laws),
        cmocka_unit_test(test_noisy_power_law),
        cmocka_unit_test(test_generation_sums),
        cmocka_unit_test(test_refuses_bad_input),
    };
    return cmocka_run_group_tests_name("fit", tests, NULL, NULL);
}
