/* test_machine.c: the sizes a buffer takes from the machine (util/machine.h),
 * and the byte counts KVSCOPE_LLC is written in (parse_bytes). */
#include <stdlib.h>

#include "testutil.h"
#include "util/human.h"
#include "util/machine.h"
#include "util/parse.h"

#define MIB MACHINE_MIB

static void test_parse_bytes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t bytes;
    } good[] = {
        { "33554432", 33554432 }, { "32M", 32 * MIB }, { "32MiB", 32 * MIB }, { "32mib", 32 * MIB },
        { "512K", 512 << 10 },    { "512KB", 512 << 10 }, { "2G", 2048 * MIB }, { "1", 1 },
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t v = 0;
        Err e = { 0 };
        if (parse_bytes(good[i].text, "size", &v, &e) < 0 || v != good[i].bytes)
            fail_msg("'%s': got %zu (%s), want %zu", good[i].text, v, e.msg, good[i].bytes);
    }
    static const char *const bad[] = { "", "0", "0M", "-1", " 32M", "32 M", "32X", "32MB2", "M", "32Mi", "1e9",
                                       "99999999999999999999", "9999999999999G" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 7;
        Err e = { 0 };
        if (parse_bytes(bad[i], "size", &v, &e) == 0)
            fail_msg("'%s' was taken as %zu bytes", bad[i], v);
        assert_int_equal(e.kind, ERR_USAGE);
        assert_int_equal(v, 7);
        assert_non_null(strstr(e.msg, "size: "));
    }
}

/* The plausible LLC grows with the CPUs, from a floor. */
static void test_llc_cap(void **state)
{
    (void)state;
    assert_int_equal(machine_llc_cap(1), MACHINE_LLC_FLOOR);
    assert_int_equal(machine_llc_cap(2), MACHINE_LLC_FLOOR);
    assert_int_equal(machine_llc_cap(4), 4 * MACHINE_LLC_PER_CPU);
    assert_int_equal(machine_llc_cap(64), 64 * MACHINE_LLC_PER_CPU);
    assert_int_equal(machine_llc_cap(SIZE_MAX), MACHINE_LLC_FLOOR); /* the product overflows: no cap above */
}

/* want, capped by the ceiling and by an eighth of the available memory, at least 1 MiB. */
static void test_buffer_rule(void **state)
{
    (void)state;
    Machine m = { .llc = 32 * MIB, .cpus = 2, .mem_available = (size_t)24 << 30 };
    assert_int_equal(machine_buffer_bytes(&m, 256 * MIB, 256 * MIB), 256 * MIB);
    assert_int_equal(machine_buffer_bytes(&m, 4064 * MIB, 256 * MIB), 256 * MIB); /* 8x a 508 MiB LLC */
    assert_int_equal(machine_buffer_bytes(&m, 64 * MIB, 256 * MIB), 64 * MIB);
    m.mem_available = 1024 * MIB;
    assert_int_equal(machine_buffer_bytes(&m, 256 * MIB, 256 * MIB), 1024 * MIB / MACHINE_MEM_SHARE);
    m.mem_available = 0; /* unknown: the ceiling alone */
    assert_int_equal(machine_buffer_bytes(&m, 4096 * MIB, 256 * MIB), 256 * MIB);
    m.mem_available = 4 * MIB;
    assert_int_equal(machine_buffer_bytes(&m, 256 * MIB, 256 * MIB), MIB);
}

/* KVSCOPE_LLC stands for what the system reports: the same cap applies. */
static void test_llc_override(void **state)
{
    (void)state;
    Machine m;
    Err e = { 0 };
    char note[256], text[128];
    assert_int_equal(setenv(MACHINE_LLC_ENV, "512M", 1), 0);
    assert_int_equal(machine_read(&m, &e), 0);
    assert_string_equal(m.llc_source, MACHINE_LLC_ENV);
    assert_int_equal(m.llc_reported, 512 * MIB);
    assert_true(m.cpus >= 1);
    const size_t cap = machine_llc_cap(m.cpus);
    assert_int_equal(m.llc_capped, 512 * MIB > cap);
    assert_int_equal(m.llc, 512 * MIB > cap ? cap : 512 * MIB);
    machine_llc_note(&m, note, sizeof note);
    assert_int_equal(*note != '\0', m.llc_capped);
    char want[32];
    human_bytes(want, sizeof want, 512.0 * MIB);
    if (m.llc_capped)
        assert_non_null(strstr(note, want));
    machine_llc_text(&m, text, sizeof text);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, MACHINE_LLC_ENV));
    printf("  %s on %zu CPUs: %s\n", MACHINE_LLC_ENV, m.cpus, text);

    assert_int_equal(setenv(MACHINE_LLC_ENV, "8M", 1), 0); /* small enough for any count of CPUs */
    assert_int_equal(machine_read(&m, &e), 0);
    assert_int_equal(m.llc, 8 * MIB);
    assert_false(m.llc_capped);
    assert_string_equal(machine_llc_note(&m, note, sizeof note), "");

    assert_int_equal(setenv(MACHINE_LLC_ENV, "lots", 1), 0);
    assert_int_equal(machine_read(&m, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, MACHINE_LLC_ENV ": 'lots'"));
    assert_true(m.llc >= MIB); /* still filled, from the system */
    assert_string_not_equal(m.llc_source, MACHINE_LLC_ENV);

    assert_int_equal(unsetenv(MACHINE_LLC_ENV), 0);
    assert_int_equal(machine_read(&m, &e), 0);
    assert_string_not_equal(m.llc_source, MACHINE_LLC_ENV);
    assert_true(m.llc >= MIB && m.llc <= machine_llc_cap(m.cpus));
    assert_int_equal(m.llc_capped, m.llc_reported > machine_llc_cap(m.cpus));
    printf("  this machine: %s, %zu CPUs, %zu MiB available\n", machine_llc_text(&m, text, sizeof text), m.cpus,
           m.mem_available / MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_llc_cap),
        cmocka_unit_test(test_buffer_rule),
        cmocka_unit_test(test_llc_override),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
