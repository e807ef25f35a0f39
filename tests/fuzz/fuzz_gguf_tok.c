/* fuzz_gguf_tok.c: libFuzzer target for a GGUF's vocabulary as kvscope's
 * tokenizer (make fuzz): the path `--weights F --prompt TEXT` takes, from
 * the bytes of the file to the ids of a text.
 *
 * Each input is opened as a llama checkpoint from memory and its
 * tokenizer.ggml.* keys read (ckpt_vocab); a "llama" vocabulary becomes the
 * SentencePiece-style tokenizer, a "gpt2" one in kvscope's layout the
 * byte-level BPE of its merges (model/checkpoint.c does the same). A
 * tokenizer that is made must encode a fixed text (ASCII, UTF-8, bytes
 * that are no UTF-8, a NUL) into ids inside the vocabulary whose pieces
 * exist. Every refusal is one line. Seeds in tests/fuzz/corpus/gguf_tok/:
 * small exports with a "gpt2" and a "llama" vocabulary. */
#include "ckpt/ckpt.h"
#include "fuzz_util.h"
#include "model/gguf_vocab.h"
#include "text/bpe.h"
#include "text/tokenizer.h"

static int make_tokenizer(const CkptVocab *v, Tokenizer **out, Err *e)
{
    *out = NULL;
    if (v->kind == CKPT_VOCAB_SPM) {
        const SpmVocab sv = gguf_vocab_spm(v);
        return tokenizer_from_vocab(out, "checkpoint", &sv, e);
    }
    if (v->kind != CKPT_VOCAB_BPE)
        return 0; /* none, or one kvscope names and does not read */
    int (*merges)[2] = NULL;
    char why[72];
    int rc = gguf_vocab_merges(v, &merges, why, sizeof why, e);
    if (rc > 0) {
        Bpe b;
        rc = bpe_init(&b, (const int (*)[2])merges, v->n_merges, e);
        if (rc == 0 && tokenizer_from_bpe(out, "checkpoint", &b, e) < 0) {
            bpe_free(&b);
            rc = -1;
        }
    } else if (rc == 0 && !why[0]) {
        abort(); /* a vocabulary not read says why */
    }
    free(merges);
    return rc < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1); /* exact size: ASan sees a read past the end */
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    Checkpoint ck;
    CkptVocab v;
    Err e;
    if (ckpt_open_gguf_memory(&ck, size ? copy : NULL, size, "fuzz", &e) < 0) {
        fuzz_check_err(&e, NULL);
        free(copy);
        return 0;
    }
    Tokenizer *tok = NULL;
    const int have_v = ckpt_vocab(&ck, "fuzz", &v, &e) == 0; /* freed by ckpt_vocab on failure */
    if (!have_v || make_tokenizer(&v, &tok, &e) < 0) {
        fuzz_check_err(&e, NULL);
    } else if (tok) {
        static const char text[] = "In the beginning God created the heaven and the earth.\n\t 1:2 \xff\xc3\xa9\xe2\x80\x99s \x00x";
        int *ids = NULL;
        size_t n = 0;
        if (tokenizer_encode(tok, text, sizeof text - 1, &ids, &n, &e) == 0) {
            for (size_t i = 0; i < n; i++) {
                size_t len;
                if (ids[i] < 0 || (size_t)ids[i] >= tokenizer_vocab(tok) || !tokenizer_piece(tok, ids[i], &len))
                    abort();
            }
            free(ids);
        } else {
            fuzz_check_err(&e, NULL);
        }
        tokenizer_free(tok);
    }
    if (have_v)
        ckpt_vocab_free(&v);
    ckpt_close(&ck);
    free(copy);
    return 0;
}
