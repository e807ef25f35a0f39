/* test_byte_alphabet.c: GPT-2's byte-level alphabet: the characters known
 * from its vocabularies, every byte there and back, and text that is not
 * in the alphabet refused. */
#include "testutil.h"

#include <string.h>

#include "text/byte_alphabet.h"

/* What GPT-2's vocabularies write for a few bytes (UTF-8 of the character). */
static void test_known_characters(void **state)
{
    (void)state;
    static const struct { unsigned char byte; const char *written; } known[] = {
        { ' ', "\xc4\xa0" },   /* U+0120 Ġ */
        { '\n', "\xc4\x8a" },  /* U+010A Ċ */
        { '\t', "\xc4\x89" },  /* U+0109 ĉ */
        { 0x00, "\xc4\x80" },  /* U+0100 Ā */
        { 0x7F, "\xc4\xa1" },  /* U+0121 ġ */
        { 0xA0, "\xc5\x82" },  /* U+0142 ł */
        { 0xAD, "\xc5\x83" },  /* U+0143 Ń */
        { 'a', "a" },
        { '!', "!" },
        { 0xE9, "\xc3\xa9" },  /* U+00E9 é stands for itself */
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        char out[4];
        size_t n = byte_alphabet_write(&known[i].byte, 1, out, sizeof out);
        assert_int_equal(n, strlen(known[i].written));
        assert_memory_equal(out, known[i].written, n);
    }
}

static void test_every_byte_there_and_back(void **state)
{
    (void)state;
    unsigned char bytes[256], back[256];
    for (size_t b = 0; b < 256; b++)
        bytes[b] = (unsigned char)b;
    char text[256 * BYTE_ALPHABET_MAX_UTF8];
    size_t n = byte_alphabet_write(bytes, 256, text, sizeof text);
    assert_int_equal(n, 256 + 68 + 94); /* 68 bytes to U+0100..; 94 printable bytes from 0xA1 up take two too */
    assert_null(memchr(text, ' ', n));
    size_t got;
    assert_int_equal(byte_alphabet_read(text, n, back, sizeof back, &got), 0);
    assert_int_equal(got, 256);
    assert_memory_equal(back, bytes, 256);
    /* each of the 256 characters is a different one */
    for (size_t b = 0; b < 256; b++) {
        char one[2];
        size_t k = byte_alphabet_write(&bytes[b], 1, one, sizeof one);
        unsigned char r;
        assert_int_equal(byte_alphabet_read(one, k, &r, 1, &got), 0);
        assert_int_equal(r, b);
    }
    /* a short buffer: the length still counts all, nothing written past cap */
    char small[3] = { 'x', 'x', 'x' };
    assert_int_equal(byte_alphabet_write((const unsigned char *)"  ", 2, small, 2), 4);
    assert_int_equal(small[2], 'x');
}

static void test_text_outside_the_alphabet(void **state)
{
    (void)state;
    static const char *bad[] = {
        " ",              /* a space is written Ġ */
        "\n",             /* so is every control */
        "\xc2\xa0",       /* U+00A0 is written ł */
        "\xc5\x84",       /* U+0144: past the alphabet */
        "\xe2\x96\x81",   /* U+2581, SentencePiece's space */
        "\xc0\xa0",       /* an overlong form */
        "\xc4",           /* cut short */
        "\x80",           /* a lone continuation byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char out[8];
        size_t got = 99;
        assert_int_equal(byte_alphabet_read(bad[i], strlen(bad[i]), out, sizeof out, &got), -1);
    }
    unsigned char one;
    size_t got;
    assert_int_equal(byte_alphabet_read("ab", 2, &one, 1, &got), -1); /* no room */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_characters),
        cmocka_unit_test(test_every_byte_there_and_back),
        cmocka_unit_test(test_text_outside_the_alphabet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
