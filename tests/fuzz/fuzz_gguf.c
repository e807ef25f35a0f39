/* fuzz_gguf.c: libFuzzer target for the GGUF reader (make fuzz).
 *
 * Every input is opened as a llama checkpoint from memory: the parser, the
 * metadata look-ups, the tensor checks and the tokenizer arrays all run on
 * it. Any crash, leak, out-of-bounds read or undefined behaviour is a bug;
 * the input that caused it goes into tests/fuzz/corpus/gguf/, which
 * test_gguf.c replays on every test run and which seeds the next fuzzing
 * run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so ASan catches a read one byte past the end */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    Checkpoint ck;
    Err e;
    if (ckpt_open_gguf_memory(&ck, size ? copy : NULL, size, "fuzz", &e) == 0) {
        CkptTensor t;
        for (int r = 0; r < CK_ROLE_COUNT; r++)
            if (ckpt_tensor(&ck, (CkptRole)r, 0, &t, &e) == 0 && t.rows && t.cols)
                (void)((const volatile uint8_t *)t.data)[format_row_bytes(t.fmt, t.cols) * t.rows - 1];
        CkptVocab v; /* the tokenizer arrays: read, or refused with one line */
        if (ckpt_vocab(&ck, "fuzz", &v, &e) == 0) {
            for (size_t i = 0; v.kind == CKPT_VOCAB_SPM && i < v.n; i++)
                if (v.len[i])
                    (void)((const volatile unsigned char *)v.piece[i])[v.len[i] - 1];
            ckpt_vocab_free(&v);
        } else if (!e.msg[0] || strchr(e.msg, '\n')) {
            abort();
        }
        ckpt_close(&ck);
    } else if (!e.msg[0] || strchr(e.msg, '\n')) {
        abort(); /* every failure has a one-line message */
    }
    GgufFile g;
    if (gguf_parse(&g, size ? copy : NULL, size, &e) == 0)
        gguf_close(&g);
    free(copy);
    return 0;
}
