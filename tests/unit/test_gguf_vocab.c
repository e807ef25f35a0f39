/* test_gguf_vocab.c: a byte-level tokenizer in a GGUF and back
 * (model/gguf_vocab.h).
 *
 * Round trip: a BPE learnt here, exported with a model, comes back from
 * the file as the same merges and encodes text to the same ids; the ids
 * past the tokenizer's are written unused. Layout: a "gpt2" vocabulary
 * not in kvscope's byte order, or whose merges do not make the next id, is
 * named (ids only), never read wrongly. */
#include "testutil.h"

#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "model/checkpoint.h"
#include "model/gguf_vocab.h"
#include "text/byte_alphabet.h"
#include "text/tokenizer.h"

static const char TEXT[] = "In the beginning God created the heaven and the earth.\n"
                           "And the earth was without form, and void; and darkness was upon the face of the deep.\n"
                           "And God said, Let there be light: and there was light.\n";

static Tokenizer *learnt(size_t vocab)
{
    Bpe b;
    Tokenizer *t;
    Err e = { 0 };
    assert_int_equal(bpe_learn(&b, (const unsigned char *)TEXT, sizeof TEXT - 1, vocab, NULL, NULL, &e), 0);
    assert_int_equal(tokenizer_from_bpe(&t, "learnt", &b, &e), 0);
    return t;
}

static void encode(const Tokenizer *t, const char *text, int **ids, size_t *n)
{
    Err e = { 0 };
    if (tokenizer_encode(t, text, strlen(text), ids, n, &e) < 0)
        fail_msg("%s", e.msg);
}

static void test_round_trip(void **state)
{
    (void)state;
    Tokenizer *t = learnt(290);
    Config c = test_config(1, 4, 2);
    c.vocab = 300; /* ten ids the tokenizer never makes */
    Model m;
    test_model(&m, &c);
    char path[256];
    snprintf(path, sizeof path, "%s/kvscope-vocab-%d.gguf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    Err e = { 0 };
    if (model_export_gguf(&m, t, path, FMT_F32, NULL, NULL, NULL, &e) < 0)
        fail_msg("%s", e.msg);
    model_free(&m);

    Config back;
    if (config_from_checkpoint(&back, path, &e) < 0)
        fail_msg("%s", e.msg);
    assert_string_equal(back.tokenizer, CHECKPOINT_TOKENIZER);
    Tokenizer *u;
    if (checkpoint_tokenizer(&back, &u, &e) < 0)
        fail_msg("%s", e.msg);
    assert_int_equal(tokenizer_vocab(u), 290);
    const int (*ma)[2], (*mb)[2];
    size_t na, nb;
    assert_true(tokenizer_byte_level(t, &ma, &na));
    assert_true(tokenizer_byte_level(u, &mb, &nb));
    assert_int_equal(na, 34);
    assert_int_equal(nb, na);
    assert_memory_equal(ma, mb, na * sizeof *ma);
    static const char *texts[] = { TEXT, "the light of the deep earth", "\x01\xff odd bytes \t\t and  spaces " };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int *x, *y;
        size_t nx, ny;
        encode(t, texts[i], &x, &nx);
        encode(u, texts[i], &y, &ny);
        assert_int_equal(nx, ny);
        assert_memory_equal(x, y, nx * sizeof *x);
        free(x);
        free(y);
    }

    /* the types as written: normal, the end-of-text control token right
     * after the tokenizer's ids (BOS and EOS), unused past it */
    Checkpoint ck;
    CkptVocab v;
    assert_int_equal(ckpt_open(&ck, path, &e), 0);
    assert_int_equal(ckpt_vocab(&ck, path, &v, &e), 0);
    assert_int_equal(v.kind, CKPT_VOCAB_BPE);
    assert_string_equal(v.model, "gpt2");
    assert_int_equal(v.n, 300);
    for (size_t i = 0; i < v.n; i++)
        assert_int_equal(v.type[i], i < 290 ? 1 : i == 290 ? 3 : 5);
    assert_int_equal(v.eos, 290);
    assert_int_equal(v.bos, 290);
    assert_int_equal(v.len[290], strlen("<|endoftext|>"));
    assert_memory_equal(v.piece[290], "<|endoftext|>", v.len[290]);
    assert_int_equal(back.eos_token, 290);
    assert_int_equal(v.len[' '], 2);
    assert_memory_equal(v.piece[' '], "\xc4\xa0", 2); /* a space written as GPT-2 writes it */
    ckpt_vocab_free(&v);
    ckpt_close(&ck);
    tokenizer_free(u);
    tokenizer_free(t);
    unlink(path);
}

/* A "gpt2" vocabulary by hand: n tokens (the 256 bytes in order, then the
 * texts given, written in the byte alphabet) and the merges as written. */
typedef struct {
    CkptVocab v;
    unsigned char text[300][16];
    const unsigned char *piece[300];
    size_t len[300];
    const unsigned char *merge[8];
    size_t merge_len[8];
} HandBpe;

static void hand_bpe(HandBpe *h, const char *const *extra, size_t n_extra, const char *const *merges, size_t n_merges)
{
    memset(h, 0, sizeof *h);
    for (size_t i = 0; i < 256 + n_extra; i++) {
        unsigned char b = (unsigned char)i;
        const unsigned char *bytes = i < 256 ? &b : (const unsigned char *)extra[i - 256];
        size_t n = i < 256 ? 1 : strlen(extra[i - 256]);
        h->len[i] = byte_alphabet_write(bytes, n, (char *)h->text[i], sizeof h->text[i]);
        h->piece[i] = h->text[i];
    }
    for (size_t k = 0; k < n_merges; k++) {
        h->merge[k] = (const unsigned char *)merges[k];
        h->merge_len[k] = strlen(merges[k]);
    }
    h->v = (CkptVocab){ .kind = CKPT_VOCAB_BPE, .n = 256 + n_extra, .piece = h->piece, .len = h->len,
                        .merge = h->merge, .merge_len = h->merge_len, .n_merges = n_merges };
}

/* gguf_vocab_merges on h: read (want_why NULL) or named with want_why. */
static void expect_layout(const HandBpe *h, const char *want_why, const int (*want)[2])
{
    int (*pairs)[2];
    char why[96] = "";
    Err e = { 0 };
    int rc = gguf_vocab_merges(&h->v, &pairs, why, sizeof why, &e);
    if (!want_why) {
        if (rc != 1)
            fail_msg("not read: %s", why);
        assert_memory_equal(pairs, want, h->v.n_merges * sizeof *pairs);
        free(pairs);
        return;
    }
    assert_int_equal(rc, 0);
    assert_null(pairs);
    if (!strstr(why, want_why))
        fail_msg("'%s' does not say '%s'", why, want_why);
}

static void test_layouts(void **state)
{
    (void)state;
    HandBpe *h = malloc(sizeof *h);
    assert_non_null(h);
    /* "Ġt" is a space and t: ids 32 and 116; "Ġth" joins 256 and 104 */
    const char *const good[] = { " t", " th", "he" };
    const char *const good_merges[] = { "\xc4\xa0 t", "\xc4\xa0t h", "h e" };
    const int want[][2] = { { 32, 116 }, { 256, 104 }, { 104, 101 } };
    hand_bpe(h, good, 3, good_merges, 3);
    expect_layout(h, NULL, want);

    hand_bpe(h, good, 3, good_merges, 3);
    h->v.n = 258; /* three merges make ids up to 258: the vocabulary must hold them */
    expect_layout(h, "more ids than the vocabulary", NULL);

    hand_bpe(h, good, 3, good_merges, 3);
    h->piece[5] = h->text['a']; /* token 5 is written as 'a' */
    h->len[5] = 1;
    expect_layout(h, "token 5 is not the byte 0x05", NULL);

    hand_bpe(h, good, 3, good_merges, 3);
    h->piece[257] = (const unsigned char *)" th"; /* a raw space: not the alphabet */
    h->len[257] = 3;
    expect_layout(h, "token 257 is not written in GPT-2's byte alphabet", NULL);

    const char *const swapped[] = { "h e" , "\xc4\xa0t h", "\xc4\xa0 t" }; /* merge 0 makes "he", token 256 is " t" */
    hand_bpe(h, good, 3, swapped, 3);
    expect_layout(h, "merge 0 does not join two earlier tokens into token 256", NULL);

    const char *const later[] = { "\xc4\xa0t h", "\xc4\xa0 t", "h e" }; /* merge 0 names id 256, not yet made */
    const char *const later_tokens[] = { " th", " t", "he" };
    hand_bpe(h, later_tokens, 3, later, 3);
    expect_layout(h, "merge 0 does not join", NULL);

    const char *const blank_less[] = { "\xc4\xa0t", "\xc4\xa0t h", "h e" };
    hand_bpe(h, good, 3, blank_less, 3);
    expect_layout(h, "merge 0 is not two tokens with a space between", NULL);

    const char *const twice[] = { " t", " t" };
    const char *const twice_merges[] = { "\xc4\xa0 t", "\xc4\xa0 t" };
    hand_bpe(h, twice, 2, twice_merges, 2);
    expect_layout(h, "tokens 256 and 257 are the same bytes", NULL);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
