/* fuzz_kvw.c: libFuzzer target for the .kvw weights reader (ckpt/kvw.h).
 *
 * kvw_read reads only files, so each input is written to a temporary file
 * and read as the weights of a small fixed shape, asking for three tensors
 * (f32, f16 on disk, raw bytes), any of which may be absent. The seeds in
 * tests/fuzz/corpus/kvw/: files of that shape written by kvw_write (all
 * three tensors, the f16 one alone, none), and kjv-tiny.kvw's header and
 * tensor table without its data (another shape: refused by name). */
#include "ckpt/kvw.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".kvw");
    if (!path)
        return 0;
    static const KvwShape want = { 8, 1, 2, 1, 4, 16, 256, 32, 10000.0, 1e-5 };
    /* exact-size buffers, so ASan catches a tensor read past its room */
    float *a = malloc(2 * 3 * sizeof *a), *h = malloc(3 * 4 * sizeof *h);
    unsigned char *raw = malloc(5);
    if (!a || !h || !raw)
        abort();
    KvwTensor t[3] = {
        { "a", KVW_F32, 2, 3, a },
        { "h", KVW_F16, 3, 4, h },
        { "raw", KVW_BYTES, 1, 5, raw },
    };
    Err e;
    if (kvw_read(path, &want, t, 3, 1, &e) < 0)
        fuzz_check_err(&e, NULL);
    else if ((t[0].rows && t[0].rows != 2) || (t[1].rows && t[1].rows != 3) || (t[2].rows && t[2].rows != 1))
        abort();
    free(a);
    free(h);
    free(raw);
    return 0;
}
