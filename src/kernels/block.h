/* block.h: a run of stored K/V rows, as attention consumes them.
 *
 * Kernels know nothing of caches; a cache describes what it holds as blocks
 * and attention walks them. All rows of a block belong to one (layer,
 * sequence, KV head), sit at consecutive absolute positions and share one
 * format. */
#ifndef KVSCOPE_KERNELS_BLOCK_H
#define KVSCOPE_KERNELS_BLOCK_H

#include <stddef.h>

#include "kernels/format.h"

typedef struct {
    size_t pos;        /* absolute position of row 0 */
    size_t n;          /* rows */
    const void *k, *v; /* row r starts at k + r * k_stride bytes */
    size_t k_stride, v_stride;
    Format k_fmt, v_fmt;
} KvBlock;

#endif
