/* fuzz_bpe.c: libFuzzer target for the BPE merges reader (text/bpe.h).
 *
 * bpe_load reads only files, so each input is written to a temporary file
 * and loaded. A vocabulary that loads must encode a fixed text and decode
 * it back byte for byte, with every id inside the vocabulary. */
#include "fuzz_util.h"
#include "text/bpe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".bpe");
    if (!path)
        return 0;
    Bpe b;
    Err e;
    if (bpe_load(&b, path, &e) < 0) {
        fuzz_check_err(&e, NULL);
        return 0;
    }
    static const unsigned char text[] = "In the beginning God created the heaven and the earth.\n\t  1:2 \xff\x00\xe2\x80\x99s";
    const size_t len = sizeof text - 1;
    int ids[sizeof text];
    size_t n = bpe_encode(&b, text, len, ids, sizeof text);
    if (n > len)
        abort(); /* never more ids than bytes */
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= b.vocab)
            abort();
        size_t pl = b.piece_len[ids[i]];
        if (pl > len - at || memcmp(b.piece[ids[i]], text + at, pl) != 0)
            abort();
        at += pl;
    }
    if (at != len)
        abort();
    bpe_free(&b);
    return 0;
}
