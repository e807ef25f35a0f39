#include "util/npy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NPY_PREFIX 10 /* magic (6) + version (2) + header length (2) */

const char *npy_descr(NpyType type)
{
    switch (type) {
    case NPY_I32: return "<i4";
    case NPY_U8: return "|u1";
    case NPY_F16: return "<f2";
    default: return "<f4";
    }
}

size_t npy_elem_size(NpyType type)
{
    return type == NPY_U8 ? 1 : type == NPY_F16 ? 2 : 4;
}

static int type_ok(NpyType type)
{
    return type == NPY_F32 || type == NPY_I32 || type == NPY_U8 || type == NPY_F16;
}

size_t npy_header(char *buf, size_t cap, NpyType type, const size_t *shape, size_t ndim)
{
    char dict[256];
    if (!type_ok(type) || ndim < 1 || ndim > NPY_MAX_DIMS)
        return 0;

    /* the shape as Python writes a tuple: (5,) or (2, 3) */
    char tuple[128];
    size_t t = 0;
    tuple[t++] = '(';
    for (size_t i = 0; i < ndim; i++)
        t += (size_t)snprintf(tuple + t, sizeof tuple - t, "%s%zu", i ? ", " : "", shape[i]);
    snprintf(tuple + t, sizeof tuple - t, "%s", ndim == 1 ? ",)" : ")");

    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     npy_descr(type), tuple);
    if (n < 0 || (size_t)n >= sizeof dict)
        return 0;

    /* pad with spaces so that prefix + dict + '\n' is a multiple of 64 */
    size_t used = NPY_PREFIX + (size_t)n + 1;
    size_t total = (used + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    size_t header_len = total - NPY_PREFIX; /* dict, spaces and '\n' */
    if (total > cap || header_len > UINT16_MAX)
        return 0;

    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(header_len & 0xff);
    buf[9] = (char)(header_len >> 8);
    memcpy(buf + NPY_PREFIX, dict, (size_t)n);
    memset(buf + NPY_PREFIX + n, ' ', total - used);
    buf[total - 1] = '\n';
    return total;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* Write n elements of `size` bytes little-endian, swapping through a small
 * buffer on a big-endian host. Returns 0 or -1 (errno set by stdio). */
static int write_le(FILE *f, const unsigned char *src, size_t n, size_t size)
{
    if (size == 1 || host_is_little_endian())
        return fwrite(src, size, n, f) == n ? 0 : -1;
    unsigned char buf[4096];
    while (n > 0) {
        size_t m = n < sizeof buf / size ? n : sizeof buf / size;
        for (size_t i = 0; i < m; i++)
            for (size_t b = 0; b < size; b++)
                buf[size * i + b] = src[size * i + size - 1 - b];
        if (fwrite(buf, size, m, f) != m)
            return -1;
        src += size * m;
        n -= m;
    }
    return 0;
}

int npy_write(const char *path, NpyType type, const size_t *shape, size_t ndim, const void *data, Err *e)
{
    if (!type_ok(type))
        return err_set(e, ERR_USAGE, "%s: unknown npy element type %d", path, (int)type);
    if (ndim < 1 || ndim > NPY_MAX_DIMS)
        return err_set(e, ERR_USAGE, "%s: %zu dimensions; npy_write takes 1 to %d", path, ndim, NPY_MAX_DIMS);
    size_t count = 1;
    for (size_t i = 0; i < ndim; i++) {
        if (shape[i] != 0 && count > SIZE_MAX / npy_elem_size(type) / shape[i])
            return err_set(e, ERR_USAGE, "%s: shape too large to address", path);
        count *= shape[i];
    }
    if (count > 0 && !data)
        return err_set(e, ERR_USAGE, "%s: no data for %zu elements", path, count);

    char header[256];
    size_t hlen = npy_header(header, sizeof header, type, shape, ndim);
    if (hlen == 0)
        return err_set(e, ERR_USAGE, "%s: header does not fit", path);

    FILE *f = fopen(path, "wb");
    if (!f)
        return err_set(e, ERR_RUNTIME, "cannot write %s: %s", path, strerror(errno));
    int bad = fwrite(header, 1, hlen, f) != hlen || write_le(f, data, count, npy_elem_size(type)) < 0;
    int saved = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        remove(path);
        return err_set(e, ERR_RUNTIME, "cannot write %s: %s", path, strerror(saved));
    }
    return 0;
}
