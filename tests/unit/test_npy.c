/* test_npy.c: the .npy writer, byte for byte against hand-built headers. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util/npy.h"

/* Read a whole file into a malloc'd buffer; *n gets its size. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *buf = malloc(4096);
    assert_non_null(buf);
    *n = fread(buf, 1, 4096, f);
    fclose(f);
    return buf;
}

static void temp_path(char *buf, size_t cap, const char *name)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, cap, "%s/kvscope_test_npy_%ld_%s", dir && *dir ? dir : "/tmp", (long)getpid(), name);
}

/* The expected header, assembled by hand: prefix, dict, spaces, '\n'.
 * header_len is what bytes 8..9 must hold. */
static size_t expected_header(char *buf, const char *dict, size_t header_len)
{
    size_t dlen = strlen(dict);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(header_len & 0xff);
    buf[9] = (char)(header_len >> 8);
    memcpy(buf + 10, dict, dlen);
    memset(buf + 10 + dlen, ' ', header_len - dlen - 1);
    buf[10 + header_len - 1] = '\n';
    return 10 + header_len;
}

/* A 2 x 3 float array: the dict is 59 characters, so 10 + 59 + 1 = 70 bytes
 * round up to 128: header_len 118 (0x76), 58 spaces, then the data. */
static void test_2d_float_file(void **state)
{
    (void)state;
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_int_equal(strlen(dict), 59);
    char want[128];
    assert_int_equal(expected_header(want, dict, 118), 128);
    assert_int_equal((unsigned char)want[8], 0x76);
    assert_int_equal(want[9], 0);

    char path[256];
    temp_path(path, sizeof path, "a.npy");
    const float data[6] = { 0.0f, 1.0f, -2.5f, 3.25f, 1e-3f, 42.0f };
    const size_t shape[2] = { 2, 3 };
    Err e = { 0 };
    assert_int_equal(npy_write(path, NPY_F32, shape, 2, data, &e), 0);

    size_t n;
    unsigned char *got = slurp(path, &n);
    assert_int_equal(n, 128 + sizeof data);
    assert_memory_equal(got, want, 128);
    /* 1.0f is 0x3f800000: little-endian 00 00 80 3f */
    const unsigned char one_le[4] = { 0x00, 0x00, 0x80, 0x3f };
    assert_memory_equal(got + 128 + 4, one_le, 4);
    float back[6];
    memcpy(back, got + 128, sizeof back); /* the test host is little-endian (x86, ARM) */
    assert_memory_equal(back, data, sizeof data);
    free(got);
    remove(path);
}

/* A 1-d int32 array of 5: Python writes a one-tuple as (5,). The dict is
 * 57 characters; 10 + 57 + 1 = 68 rounds up to 128: header_len 118. */
static void test_1d_int_file(void **state)
{
    (void)state;
    const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }";
    assert_int_equal(strlen(dict), 57);
    char want[128];
    expected_header(want, dict, 118);

    char path[256];
    temp_path(path, sizeof path, "b.npy");
    const int data[5] = { 0, 1, 2, -1, 7 };
    const size_t shape[1] = { 5 };
    Err e = { 0 };
    assert_int_equal(npy_write(path, NPY_I32, shape, 1, data, &e), 0);
    size_t n;
    unsigned char *got = slurp(path, &n);
    assert_int_equal(n, 128 + 20);
    assert_memory_equal(got, want, 128);
    const unsigned char minus_one[4] = { 0xff, 0xff, 0xff, 0xff };
    assert_memory_equal(got + 128 + 12, minus_one, 4);
    free(got);
    remove(path);
}

/* Bytes ('|u1', one byte each) and binary16 ('<f2', two little-endian
 * bytes each): the stored blocks and per-channel scales of dump's caches.
 * Both dicts are 60 characters: 10 + 60 + 1 = 71 rounds up to 128. */
static void test_u8_and_f16_files(void **state)
{
    (void)state;
    char want[128], path[256];
    size_t n;
    Err e = { 0 };
    const size_t shape[2] = { 2, 3 };

    expected_header(want, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", 118);
    temp_path(path, sizeof path, "u8.npy");
    const unsigned char bytes[6] = { 0, 1, 0x7f, 0x80, 0xfe, 0xff };
    assert_int_equal(npy_write(path, NPY_U8, shape, 2, bytes, &e), 0);
    unsigned char *got = slurp(path, &n);
    assert_int_equal(n, 128 + 6);
    assert_memory_equal(got, want, 128);
    assert_memory_equal(got + 128, bytes, 6);
    free(got);
    remove(path);

    expected_header(want, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", 118);
    temp_path(path, sizeof path, "f16.npy");
    const unsigned short halves[6] = { 0x3c00, 0xc000, 0, 0x7bff, 0x0001, 0x8000 }; /* 1, -2, 0, max, tiny, -0 */
    assert_int_equal(npy_write(path, NPY_F16, shape, 2, halves, &e), 0);
    got = slurp(path, &n);
    assert_int_equal(n, 128 + 12);
    assert_memory_equal(got, want, 128);
    const unsigned char one_le[2] = { 0x00, 0x3c }, minus_two_le[2] = { 0x00, 0xc0 };
    assert_memory_equal(got + 128, one_le, 2);
    assert_memory_equal(got + 130, minus_two_le, 2);
    free(got);
    remove(path);
}

/* A 3-d shape (2, 1, 4) as a file, and every header padded to 64. */
static void test_3d_and_padding(void **state)
{
    (void)state;
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 4), }";
    assert_int_equal(strlen(dict), 62);
    char want[128];
    expected_header(want, dict, 118);

    char path[256];
    temp_path(path, sizeof path, "c.npy");
    float data[8];
    for (size_t i = 0; i < 8; i++)
        data[i] = (float)i;
    const size_t shape[3] = { 2, 1, 4 };
    Err e = { 0 };
    assert_int_equal(npy_write(path, NPY_F32, shape, 3, data, &e), 0);
    size_t n;
    unsigned char *got = slurp(path, &n);
    assert_int_equal(n, 128 + sizeof data);
    assert_memory_equal(got, want, 128);
    free(got);
    remove(path);

    /* four 16-digit dimensions push the dict to 125 characters: 10 + 125 +
     * 1 = 136 rounds up to 192, the next multiple of 64 (header_len 182) */
    const size_t big[4] = { 1000000000000000, 2000000000000000, 3000000000000000, 4000000000000000 };
    char hdr[256];
    size_t len = npy_header(hdr, sizeof hdr, NPY_F32, big, 4);
    assert_int_equal(len, 192);
    assert_int_equal((unsigned char)hdr[8] | (unsigned char)hdr[9] << 8, 182);
    assert_int_equal(hdr[191], '\n');
    assert_int_equal(hdr[190], ' ');
    const char *tuple = "(1000000000000000, 2000000000000000, 3000000000000000, 4000000000000000)";
    assert_memory_equal(hdr + 10 + 50, tuple, 72);

    /* every shape of 1..4 dims: the length is a multiple of 64, ends in '\n' */
    for (size_t ndim = 1; ndim <= NPY_MAX_DIMS; ndim++)
        for (size_t v = 1; v < 100000000; v *= 7) {
            size_t s[4] = { v, v + 1, v * 3, 1 };
            len = npy_header(hdr, sizeof hdr, NPY_I32, s, ndim);
            assert_true(len >= 64 && len % 64 == 0);
            assert_int_equal(hdr[len - 1], '\n');
            assert_int_equal((size_t)((unsigned char)hdr[8] | (unsigned char)hdr[9] << 8), len - 10);
        }
}

static void test_errors(void **state)
{
    (void)state;
    const float x[1] = { 1.0f };
    const size_t shape[5] = { 1, 1, 1, 1, 1 };
    Err e = { 0 };
    assert_int_equal(npy_write("/nonexistent-dir/kvscope/x.npy", NPY_F32, shape, 1, x, &e), -1);
    assert_int_equal(e.kind, ERR_RUNTIME);
    assert_non_null(strstr(e.msg, "/nonexistent-dir/kvscope/x.npy"));

    /* bad dimension counts fail before any file is touched */
    char path[256];
    temp_path(path, sizeof path, "never.npy");
    e = (Err){ 0 };
    assert_int_equal(npy_write(path, NPY_F32, shape, 0, x, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_int_equal(npy_write(path, NPY_F32, shape, 5, x, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_int_equal(access(path, F_OK), -1);

    char small[64];
    assert_int_equal(npy_header(small, sizeof small, NPY_F32, shape, 1), 0); /* needs 128 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_2d_float_file),
        cmocka_unit_test(test_1d_int_file),
        cmocka_unit_test(test_u8_and_f16_files),
        cmocka_unit_test(test_3d_and_padding),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
