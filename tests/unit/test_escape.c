/* test_escape.c: what reaches the terminal from text the user typed. */
#include "testutil.h"
#include "util/escape.h"

static void expect(const char *in, const char *want)
{
    char out[64];
    escape_controls(out, sizeof out, in);
    if (strcmp(out, want) != 0)
        fail_msg("escape of '%s': got '%s', want '%s'", in, out, want);
}

static void test_controls_escaped(void **state)
{
    (void)state;
    expect("plain words, 1,2;3", "plain words, 1,2;3");
    expect("\x1b[31mred", "\\x1b[31mred");    /* a colour */
    expect("a\nb\rc\td\a", "a\\x0ab\\x0dc\\x09d\\x07");
    expect("del\x7f", "del\\x7f");
    expect("\xc3\xbc \xe2\x82\xac \xf0\x9f\x99\x82", "\xc3\xbc \xe2\x82\xac \xf0\x9f\x99\x82"); /* u euro emoji */
    expect("\xc2\x9b" "2J", "\\xc2\\x9b2J"); /* U+009B, CSI as UTF-8 */
    expect("\x9b" "2J", "\\x9b2J");          /* CSI as one byte: not UTF-8 */
    expect("\xe2\x82", "\\xe2\\x82");        /* a cut character */
    expect("\xc0\xaf", "\\xc0\\xaf");        /* overlong '/' */
}

static void test_cut_whole(void **state)
{
    (void)state;
    char out[6];
    assert_string_equal(escape_controls(out, sizeof out, "abcdefgh"), "abcde");
    assert_string_equal(escape_controls(out, sizeof out, "ab\x1b"), "ab"); /* no half escape */
    assert_string_equal(escape_controls(out, sizeof out, "abc\xe2\x82\xac"), "abc"); /* no half character */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_controls_escaped),
        cmocka_unit_test(test_cut_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
