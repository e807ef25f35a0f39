/* fuzz_util.h: what the libFuzzer targets share (make fuzz).
 *
 * Inputs come as bytes with no terminator: a parser of C strings gets an
 * exact-size copy with a NUL after it, so ASan catches a read past the end;
 * a parser that only reads files gets the bytes in a temporary file, made
 * once per process and removed when it exits. */
#ifndef KVSCOPE_FUZZ_UTIL_H
#define KVSCOPE_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data[0..size) and a NUL, in a buffer of exactly size + 1 bytes; NULL when
 * out of memory. Caller frees. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}

static char fuzz_tmp[4096];

static inline void fuzz_tmp_remove(void)
{
    unlink(fuzz_tmp);
}

/* data[0..size) written to this process's temporary file (its name ends in
 * suffix); the path, or NULL when it cannot be written. */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    if (!fuzz_tmp[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(fuzz_tmp, sizeof fuzz_tmp, "%s/kvscope-fuzz-XXXXXX%s", dir && *dir ? dir : P_tmpdir, suffix);
        int fd = mkstemps(fuzz_tmp, (int)strlen(suffix));
        if (fd < 0)
            abort(); /* the target cannot run at all */
        close(fd);
        atexit(fuzz_tmp_remove);
    }
    FILE *f = fopen(fuzz_tmp, "wb");
    if (!f)
        return NULL;
    int bad = size && fwrite(data, 1, size, f) != size;
    if (fclose(f) != 0 || bad)
        return NULL;
    return fuzz_tmp;
}

/* Every failure says what went wrong, on one line (unless it quotes an
 * input that itself holds a newline: text is echoed as given). */
static inline void fuzz_check_err(const Err *e, const char *input)
{
    int echoed = input && strchr(input, '\n');
    if (!e->msg[0] || (!echoed && strchr(e->msg, '\n')) || (e->kind != ERR_USAGE && e->kind != ERR_RUNTIME))
        abort();
}

#endif
