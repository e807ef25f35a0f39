/* cmocka.h (cross build only): the few cmocka calls the ISA tests use, so
 * test_kernels.c, test_attend.c and test_codec.c run unchanged on a target
 * without a cmocka build (AArch64 under qemu). The native build uses the
 * real cmocka; this file is found first only by `make cross-test`. */
#ifndef KVSCOPE_CROSS_CMOCKA_H
#define KVSCOPE_CROSS_CMOCKA_H

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CMUnitTest {
    const char *name;
    void (*fn)(void **state);
};

static jmp_buf cross_fail_jump;

#define cmocka_unit_test(f) { #f, f }

#define fail_msg(...)                                                        \
    do {                                                                     \
        printf("  failure at %s:%d: ", __FILE__, __LINE__);                 \
        printf(__VA_ARGS__);                                                 \
        printf("\n");                                                        \
        longjmp(cross_fail_jump, 1);                                         \
    } while (0)
#define cross_check(cond, text) \
    do { if (!(cond)) fail_msg("%s", text); } while (0)
#define assert_true(c) cross_check((c), #c)
#define assert_int_equal(a, b) cross_check((intmax_t)(a) == (intmax_t)(b), #a " == " #b)
#define assert_ptr_equal(a, b) cross_check((const void *)(a) == (const void *)(b), #a " == " #b)
#define assert_non_null(p) cross_check((p) != NULL, #p " != NULL")
#define assert_null(p) cross_check((p) == NULL, #p " == NULL")
#define assert_string_equal(a, b) cross_check(strcmp((a), (b)) == 0, #a " equals " #b)

static inline int cross_run(const char *group, const struct CMUnitTest *t, size_t n)
{
    volatile size_t failed = 0; /* survives the longjmp of a failing test */
    printf("[==========] Running %zu test(s) of %s.\n", n, group);
    for (size_t i = 0; i < n; i++) {
        printf("[ RUN      ] %s\n", t[i].name);
        if (setjmp(cross_fail_jump) == 0) {
            t[i].fn(NULL);
            printf("[       OK ] %s\n", t[i].name);
        } else {
            printf("[  FAILED  ] %s\n", t[i].name);
            failed++;
        }
    }
    printf("[==========] %zu test(s) run, %zu failed.\n", n, failed);
    return failed ? 1 : 0;
}
#define cmocka_run_group_tests_name(name, tests, setup, teardown) \
    cross_run(name, tests, sizeof(tests) / sizeof((tests)[0]))
#define cmocka_run_group_tests(tests, setup, teardown) \
    cross_run(#tests, tests, sizeof(tests) / sizeof((tests)[0]))

#endif
