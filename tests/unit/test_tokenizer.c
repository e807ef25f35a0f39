/* test_tokenizer.c: the tokenizer interface: "bytes" gives every byte
 * sequence back, a first token starts an encode but not a continuation,
 * and pieces are shown as a terminal can print them. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "text/tokenizer.h"

static void test_bytes_round_trip(void **state)
{
    (void)state;
    Tokenizer *t;
    Err e = { 0 };
    assert_int_equal(tokenizer_open(&t, "bytes", &e), 0);
    assert_int_equal(tokenizer_vocab(t), 256);
    char text[512];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (char)(i * 131 + 7); /* every byte value, NUL and invalid UTF-8 included */
    int *ids;
    size_t n;
    assert_int_equal(tokenizer_encode(t, text, sizeof text, &ids, &n, &e), 0);
    assert_int_equal(n, sizeof text);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const unsigned char *p = tokenizer_piece(t, ids[i], &len);
        assert_non_null(p);
        assert_int_equal(len, 1);
        assert_int_equal(p[0], (unsigned char)text[i]);
    }
    size_t len;
    assert_null(tokenizer_piece(t, 256, &len));
    assert_int_equal(len, 0);
    assert_null(tokenizer_piece(t, -1, &len));
    free(ids);
    tokenizer_free(t);
    assert_int_equal(tokenizer_open(&t, "nope", &e), -1);
    assert_null(t);
    assert_int_equal(e.kind, ERR_USAGE);
}

/* With a first token, tokenizer_encode puts it at 0 and a continuation
 * never does: a sequence of fragments has exactly one, at position 0, and
 * its text ids are each fragment's bytes. */
static void test_bos_continuation(void **state)
{
    (void)state;
    Tokenizer *t;
    Err e = { 0 };
    assert_int_equal(tokenizer_open(&t, "bytes", &e), 0);
    const char *frag[] = { "And the name", " of the man", " was Boaz." };
    int *ids;
    size_t n;
    assert_int_equal(tokenizer_encode_continuation(t, frag[1], strlen(frag[1]), &ids, &n, &e), 0);
    assert_int_equal(n, strlen(frag[1])); /* without a first token: the plain encode */
    free(ids);
    assert_int_equal(tokenizer_set_bos(t, 256, &e), 0);
    assert_int_equal(tokenizer_bos(t), 256);
    int seq[64];
    size_t len = 0;
    for (size_t f = 0; f < 3; f++) {
        const int rc = f == 0 ? tokenizer_encode(t, frag[f], strlen(frag[f]), &ids, &n, &e)
                              : tokenizer_encode_continuation(t, frag[f], strlen(frag[f]), &ids, &n, &e);
        assert_int_equal(rc, 0);
        assert_int_equal(n, strlen(frag[f]) + (f == 0)); /* the first fragment alone gets the BOS */
        assert_true(len + n <= 64);
        memcpy(seq + len, ids, n * sizeof *ids);
        len += n;
        free(ids);
    }
    size_t bos_count = 0;
    for (size_t i = 0; i < len; i++)
        bos_count += seq[i] == 256;
    assert_int_equal(bos_count, 1);
    assert_int_equal(seq[0], 256);
    char joined[64];
    snprintf(joined, sizeof joined, "%s%s%s", frag[0], frag[1], frag[2]);
    assert_int_equal(len, strlen(joined) + 1);
    for (size_t i = 1; i < len; i++)
        assert_int_equal(seq[i], (unsigned char)joined[i - 1]);
    tokenizer_free(t);
}

static void test_show(void **state)
{
    (void)state;
    char buf[64];
    const unsigned char plain[] = "a b";
    assert_string_equal(tokenizer_show(plain, 3, 0, buf, sizeof buf), "a b");
    assert_string_equal(tokenizer_show(plain, 3, 1, buf, sizeof buf), "a\xe2\x90\xa3" "b");
    const unsigned char ctrl[] = { '\n', '\t', 0x1b, 0x00, 0xff };
    assert_string_equal(tokenizer_show(ctrl, sizeof ctrl, 0, buf, sizeof buf), "\\n\\t\\x1b\\x00\\xff");
    const unsigned char utf8[] = { 0xc3, 0xa9, 0xe2, 0x82, 0xac }; /* é and € stay as they are */
    assert_string_equal(tokenizer_show(utf8, sizeof utf8, 0, buf, sizeof buf), "\xc3\xa9\xe2\x82\xac");
    const unsigned char cut[] = { 0xe2, 0x82 }; /* a sequence cut short: its bytes escaped */
    assert_string_equal(tokenizer_show(cut, sizeof cut, 0, buf, sizeof buf), "\\xe2\\x82");
    char tiny[6]; /* never past cap, never half an escape */
    assert_string_equal(tokenizer_show(ctrl, sizeof ctrl, 0, tiny, sizeof tiny), "\\n\\t");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_round_trip),
        cmocka_unit_test(test_bos_continuation),
        cmocka_unit_test(test_show),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
