/* test_bench_report.c: how `kvscope bench` prints a figure against the read
 * bandwidth (report/bench_report.h): a percentage up to the ceiling's
 * slack, ">100%" and a note naming the figure past it. */
#include "testutil.h"

#include <string.h>

#include "report/bench_report.h"

static void test_pct_text(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(bench_pct_text(buf, sizeof buf, 5, 0.97), "  97%");
    assert_string_equal(bench_pct_text(buf, sizeof buf, 1, 0.5), "50%");
    assert_string_equal(bench_pct_text(buf, sizeof buf, 5, 1.04), " 104%"); /* within the slack: a percentage */
    assert_string_equal(bench_pct_text(buf, sizeof buf, 5, 1.0 + BENCH_CEILING_SLACK + 1e-9), ">100%");
    assert_string_equal(bench_pct_text(buf, sizeof buf, 6, 1.55), " >100%");
    assert_string_equal(bench_pct_text(buf, sizeof buf, 1, 3.0), ">100%");
}

static void test_over_text(void **state)
{
    (void)state;
    char buf[256];
    const char *t = bench_over_text(buf, sizeof buf, "the OpenBLAS matvec", 1.234, NULL);
    printf("  %s\n", t);
    assert_ptr_equal(t, buf);
    assert_true(strncmp(t, "note: the OpenBLAS matvec read at 1.23x the read bandwidth", 58) == 0);
    assert_non_null(strstr(t, "no ceiling"));
    assert_non_null(strstr(bench_over_text(buf, sizeof buf, "x", 1.5, "cached"), "x read at 1.50x the read "
                                                                                    "bandwidth:\n      cached"));
    char tiny[16]; /* cut short, still a string */
    bench_over_text(tiny, sizeof tiny, "x", 2.0, NULL);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pct_text),
        cmocka_unit_test(test_over_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
