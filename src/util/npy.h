/* npy.h: write arrays as NumPy .npy files (format version 1.0).
 *
 * A file is the magic "\x93NUMPY", the version bytes 1 0, a little-endian
 * uint16 header length, then a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ended by '\n' so that the data starts at a multiple
 * of 64 bytes, then the elements in C (row-major) order, little-endian.
 * `np.load(path)` reads it back. */
#ifndef KVSCOPE_UTIL_NPY_H
#define KVSCOPE_UTIL_NPY_H

#include <stddef.h>

#include "util/err.h"

#define NPY_MAX_DIMS 4
#define NPY_ALIGN 64

typedef enum {
    NPY_F32 = 0, /* float, descr '<f4' */
    NPY_I32,     /* int32_t / int, descr '<i4' */
    NPY_U8,      /* bytes as stored (a quantized cache's blocks), descr '|u1' */
    NPY_F16,     /* IEEE binary16 bit patterns (uint16_t), descr '<f2' */
} NpyType;

/* The descr string of a type ("<f4"), and its element size in bytes. */
const char *npy_descr(NpyType type);
size_t npy_elem_size(NpyType type);

/* Format the whole header (magic to '\n') of an array of `shape` (ndim 1 to
 * NPY_MAX_DIMS) into buf. Returns its length, a multiple of NPY_ALIGN, or 0
 * when ndim or type is out of range or buf is too small (256 bytes always
 * suffice). buf is not NUL-terminated. */
size_t npy_header(char *buf, size_t cap, NpyType type, const size_t *shape, size_t ndim);

/* Write data (prod(shape) elements of `type`, C order, host byte order) to
 * path as one .npy file, replacing any file there. The caller keeps data.
 * Fails with ERR_USAGE on a bad type, ndim or a size that overflows, and with
 * ERR_RUNTIME (naming path and the system's reason) when the file cannot be
 * written; a partly written file is removed. */
int npy_write(const char *path, NpyType type, const size_t *shape, size_t ndim, const void *data, Err *e);

#endif
