/* test_bpe.c: the byte-level BPE: pieces, merges learnt by hand, encoding
 * that round-trips every byte sequence, the shipped merges on known text,
 * and merges files that are not one. */
#include "testutil.h"

#include <string.h>

#include "text/bpe.h"
#include "text/pretok.h"
#include "text/tokenizer.h"

static void expect_pieces_as(PretokPattern pat, const char *text, const char *const *want, size_t n_want)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t len = strlen(text), i = 0, k = 0;
    while (i < len) {
        size_t n = pretok_next_as(pat, p + i, len - i);
        assert_true(k < n_want);
        if (n != strlen(want[k]) || memcmp(p + i, want[k], n) != 0)
            fail_msg("piece %zu of '%s': '%.*s', want '%s'", k, text, (int)n, text + i, want[k]);
        i += n, k++;
    }
    assert_int_equal(k, n_want);
}

static void expect_pieces(const char *text, const char *const *want, size_t n_want)
{
    expect_pieces_as(PRETOK_GPT2, text, want, n_want);
}

static void test_pieces(void **state)
{
    (void)state;
    const char *a[] = { "In", " the", " year", " 1611", ",", " they", "\n", "said", ":", " \"", "Amen", "!\"" };
    expect_pieces("In the year 1611, they\nsaid: \"Amen!\"", a, sizeof a / sizeof *a);
    const char *b[] = { "a", "  ", " b", "\t", "\t", "c", " \n" }; /* blanks at the end: one run */
    expect_pieces("a   b\t\tc \n", b, sizeof b / sizeof *b);
    const char *c[] = { "caf\xc3\xa9", " \xe2\x82\xac", "5" }; /* UTF-8 stays inside words */
    expect_pieces("caf\xc3\xa9 \xe2\x82\xac" "5", c, sizeof c / sizeof *c);
}

/* GPT-2's contractions are pieces of their own, lower case only, wherever
 * an apostrophe is followed by them; Unicode letters, numbers and blanks. */
static void test_gpt2_pattern(void **state)
{
    (void)state;
    const char *a[] = { "a", "'t", "his", " it", "'s", "weet", " we", "'re", "nt", " x", "'ve", "al" };
    expect_pieces("a'this it'sweet we'rent x'veal", a, sizeof a / sizeof *a);
    const char *b[] = { "I", "'m", " you", "'ll", " he", "'d", " don", "'t", " IT", "'", "S", " '", "x" };
    expect_pieces("I'm you'll he'd don't IT'S 'x", b, sizeof b / sizeof *b);
    const char *c[] = { "\n", "\n", "A", "\n\n\n" }; /* a blank before a word leads it, unless a newline */
    expect_pieces("\n\nA\n\n\n", c, sizeof c / sizeof *c);
    const char *d[] = { "\xe2\x80\x94", "caf\xc3\xa9", "\xe3\x80\x80", "\xd9\xa3" }; /* dash a mark, U+3000 a blank, an Arabic digit */
    expect_pieces("\xe2\x80\x94" "caf\xc3\xa9\xe3\x80\x80\xd9\xa3", d, sizeof d / sizeof *d);
    const char *e[] = { "12345", " 67", "\xff", "ab" }; /* a byte that is not UTF-8: a mark of its own */
    expect_pieces("12345 67\xff" "ab", e, sizeof e / sizeof *e);
}

/* Llama 3's: contractions in any case, letters after one mark, numbers in
 * threes, marks with the newlines after them, blanks to their last newline. */
static void test_llama3_pattern(void **state)
{
    (void)state;
    /* a blank before a number is a piece of its own */
    const char *a[] = { "IT", "'S", " we", "'RE", " (", "x", " ", "123", "456", "7", "(x" };
    expect_pieces_as(PRETOK_LLAMA3, "IT'S we'RE (x 1234567(x", a, sizeof a / sizeof *a);
    const char *b[] = { "Hello", ",", " y", "'all", "!\n\n", "  \n", " ok" };
    expect_pieces_as(PRETOK_LLAMA3, "Hello, y'all!\n\n  \n ok", b, sizeof b / sizeof *b);
}

/* Worked by hand: in "abab abab ab" the pair (a, b) occurs 5 times, so it
 * merges first (256); then (' ', 256) and (256, 256) both occur twice and
 * the smaller pair wins (257); then (256, 256) once more (258). */
static void test_learn_by_hand(void **state)
{
    (void)state;
    const char *text = "abab abab ab";
    Bpe b;
    Err e = { 0 };
    assert_int_equal(bpe_learn(&b, (const unsigned char *)text, strlen(text), 259, NULL, NULL, &e), 0);
    assert_int_equal(b.vocab, 259);
    const int want[3][2] = { { 'a', 'b' }, { ' ', 256 }, { 256, 256 } };
    for (int m = 0; m < 3; m++) {
        assert_int_equal(b.merge[m][0], want[m][0]);
        assert_int_equal(b.merge[m][1], want[m][1]);
    }
    int ids[8];
    assert_int_equal(bpe_encode(&b, (const unsigned char *)"abab ab", 7, ids, 8), 2);
    assert_int_equal(ids[0], 258);
    assert_int_equal(ids[1], 257);
    assert_int_equal(b.piece_len[258], 4);
    assert_memory_equal(b.piece[258], "abab", 4);
    bpe_free(&b);
}

/* Encode then concatenate the pieces: the bytes come back, whatever they are. */
static void round_trip(const Bpe *b, const unsigned char *text, size_t len)
{
    int *ids = malloc((len + 1) * sizeof *ids);
    unsigned char *back = malloc(len + 1);
    assert_non_null(ids);
    assert_non_null(back);
    size_t n = bpe_encode(b, text, len, ids, len + 1), at = 0;
    assert_true(n <= len);
    for (size_t i = 0; i < n; i++) {
        assert_true(ids[i] >= 0 && (size_t)ids[i] < b->vocab);
        assert_true(at + b->piece_len[ids[i]] <= len);
        memcpy(back + at, b->piece[ids[i]], b->piece_len[ids[i]]);
        at += b->piece_len[ids[i]];
    }
    assert_int_equal(at, len);
    assert_memory_equal(back, text, len);
    int *again = malloc((len + 1) * sizeof *again);
    assert_int_equal(bpe_encode(b, text, len, again, len + 1), n); /* deterministic */
    assert_memory_equal(again, ids, n * sizeof *ids);
    free(again);
    free(ids);
    free(back);
}

static void test_round_trip_random_bytes(void **state)
{
    (void)state;
    Bpe b;
    Err e = { 0 };
    if (bpe_load(&b, "data/tokenizer/kjv-bpe.txt", &e) < 0)
        fail_msg("%s", e.msg);
    uint64_t s = 12345;
    unsigned char text[600];
    for (int t = 0; t < 10000; t++) {
        size_t len = (size_t)(t % 599) + 1;
        for (size_t i = 0; i < len; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            /* every byte value, NUL and invalid UTF-8 included; text-like bytes more often */
            unsigned r = (unsigned)(s >> 56);
            text[i] = t % 2 ? (unsigned char)r : (unsigned char)" etaoinshrdlu\n,.TGAL"[r % 20];
        }
        round_trip(&b, text, len);
    }
    bpe_free(&b);
}

/* The shipped merges on a verse: whole words of the text are single
 * tokens, and the count is what the merges make of it. */
static void test_shipped_merges(void **state)
{
    (void)state;
    Tokenizer *t;
    Err e = { 0 };
    use_repo_data();
    if (tokenizer_open(&t, "kjv-bpe", &e) < 0)
        fail_msg("%s", e.msg);
    assert_int_equal(tokenizer_vocab(t), 1024);
    const char *verse = "And God said, Let there be light: and there was light.";
    int *ids;
    size_t n, len;
    assert_int_equal(tokenizer_encode(t, verse, strlen(verse), &ids, &n, &e), 0);
    assert_true(n < strlen(verse) / 2); /* the merges compress it */
    char back[128] = "";
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = tokenizer_piece(t, ids[i], &len);
        strncat(back, (const char *)p, len);
    }
    assert_string_equal(back, verse);
    /* " God" and " said", among the commonest words of the training text,
     * are one token each */
    int god = 0, said = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = tokenizer_piece(t, ids[i], &len);
        god |= len == 4 && memcmp(p, " God", 4) == 0;
        said |= len == 5 && memcmp(p, " said", 5) == 0;
    }
    assert_true(god && said);
    free(ids);
    tokenizer_free(t);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_bad_files(void **state)
{
    (void)state;
    const char *path = "/tmp/kvscope-test-bpe.txt";
    static const struct {
        const char *text, *want;
    } cases[] = {
        { "not-bpe 1\nvocab 258\n97 98\n256 97\n", "line 1: not a kvscope merges file" },
        { "kvscope-bpe 1\nvocab 12\n", "line 2: 'vocab N'" },
        { "kvscope-bpe 1\nvocab 259\n97 98\n256 97\n", "line 5: the file ends after 2 of 3 merges" },
        { "kvscope-bpe 1\nvocab 258\n97 98\nfoo\n", "line 4: 'A B' (two ids) expected" },
        { "kvscope-bpe 1\nvocab 258\n97 98\n300 97\n", "merge 1 joins 300 and 97" },
        { "kvscope-bpe 1\nvocab 257\n97 98\n97 97\n", "more merges than vocab 257" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].text);
        Bpe b;
        Err e = { 0 };
        assert_int_equal(bpe_load(&b, path, &e), -1);
        if (!strstr(e.msg, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].want);
    }
    Bpe b;
    Err e = { 0 };
    assert_int_equal(bpe_load(&b, "/tmp/kvscope-no-such-file", &e), -1);
    assert_non_null(strstr(e.msg, "cannot read merges file"));
    /* a file written by bpe_save reads back to the same merges */
    const int m[2][2] = { { 'a', 'b' }, { 256, 'c' } };
    assert_int_equal(bpe_init(&b, m, 2, &e), 0);
    assert_int_equal(bpe_save(&b, path, &e), 0);
    Bpe c;
    assert_int_equal(bpe_load(&c, path, &e), 0);
    assert_int_equal(c.vocab, 258);
    assert_memory_equal(c.merge, b.merge, sizeof m);
    bpe_free(&b);
    bpe_free(&c);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_gpt2_pattern),
        cmocka_unit_test(test_llama3_pattern),
        cmocka_unit_test(test_learn_by_hand),
        cmocka_unit_test(test_round_trip_random_bytes),
        cmocka_unit_test(test_shipped_merges),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
