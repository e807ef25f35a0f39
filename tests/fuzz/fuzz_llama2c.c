/* fuzz_llama2c.c: libFuzzer target for the llama2.c readers (make fuzz):
 * the checkpoint (ckpt/llama2c.c) and the tokenizer.bin beside it
 * (ckpt/ckpt_vocab.c).
 *
 * The first byte picks the reader. Even: the rest is a checkpoint, parsed
 * from an exact-size copy in memory; one that parses has every tensor of
 * its first and last layer read at its last byte, so ASan catches a layout
 * that runs past the file. Odd: the rest is a tokenizer.bin, written into
 * a folder of its own and read for a checkpoint whose vocabulary is the
 * first byte's upper seven bits plus one (1 to 128 tokens); each token it
 * reads is touched at its last byte. Every refusal is one line. */
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "fuzz_util.h"

static char dir[4096], bin[4200];

static void remove_dir(void)
{
    unlink(bin);
    rmdir(dir);
}

/* data[0..size) as dir/tokenizer.bin; 0, or -1 when it cannot be written. */
static int write_bin(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/kvscope-fuzz-XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
        if (!mkdtemp(dir))
            abort(); /* the target cannot run at all */
        snprintf(bin, sizeof bin, "%s/tokenizer.bin", dir);
        atexit(remove_dir);
    }
    FILE *f = fopen(bin, "wb");
    if (!f)
        return -1;
    int bad = size && fwrite(data, 1, size, f) != size;
    return fclose(f) != 0 || bad ? -1 : 0;
}

static void checkpoint(const uint8_t *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy)
        return;
    memcpy(copy, data, size);
    Checkpoint ck = { .kind = CKPT_LLAMA2C, .map = { size ? copy : NULL, size } };
    Err e;
    if (llama2c_parse(&ck, "fuzz", &e) == 0) {
        const size_t layers[2] = { 0, ck.shape.n_layers - 1 };
        for (int r = 0; r < CK_ROLE_COUNT; r++)
            for (size_t k = 0; k < 2; k++) {
                CkptTensor t;
                if (llama2c_tensor(&ck, (CkptRole)r, layers[k], &t, &e) < 0)
                    abort(); /* the layout was checked: every tensor is there */
                (void)((const volatile uint8_t *)t.data)[format_row_bytes(t.fmt, t.cols) * t.rows - 1];
            }
    } else {
        fuzz_check_err(&e, NULL);
    }
    free(copy); /* the map is the copy: not ckpt_close, which would unmap it */
}

static void tokenizer_bin(size_t vocab, const uint8_t *data, size_t size)
{
    if (write_bin(data, size) < 0)
        return;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.bin", dir); /* the folder is what counts */
    Checkpoint ck = { .kind = CKPT_LLAMA2C, .shape = { .vocab = vocab } };
    CkptVocab v;
    Err e;
    if (ckpt_vocab(&ck, path, &v, &e) < 0) {
        fuzz_check_err(&e, NULL);
        return;
    }
    if (v.kind != CKPT_VOCAB_SPM)
        abort(); /* the file is there: it is read or refused */
    for (size_t i = 0; i < vocab; i++)
        if (v.len[i])
            (void)((const volatile unsigned char *)v.piece[i])[v.len[i] - 1];
    ckpt_vocab_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        tokenizer_bin((size_t)(data[0] >> 1) + 1, data + 1, size - 1);
    else
        checkpoint(data + 1, size - 1);
    return 0;
}
