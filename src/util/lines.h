/* lines.h: buffers that begin on a cache line, for the vectors the SIMD
 * kernels load. malloc aligns to 16 bytes, so a run of 32-byte loads from
 * its buffers may cross a 64-byte line every other load, and a load split
 * between two lines costs about two. Measured on an AVX2 EPYC (cold flash
 * steps over 65536 rows, a group of four heads, passes over the copies
 * taken in turn, three series): with the query and output 16 bytes past a
 * line, f16 took 1.06 to 1.07 times as long as on one; f32, bound by
 * memory, no longer.
 *
 * lines_alloc(bytes): bytes (> 0) starting on a 64-byte boundary,
 * uninitialized, or NULL; free() releases it. */
#ifndef KVSCOPE_UTIL_LINES_H
#define KVSCOPE_UTIL_LINES_H

#include <stdlib.h>

#define CACHE_LINE 64

static inline void *lines_alloc(size_t bytes)
{
    void *p = NULL;
    return bytes && posix_memalign(&p, CACHE_LINE, bytes) == 0 ? p : NULL;
}

#endif
