/* block.h: a run of stored K/V rows, as attention consumes them.
 *
 * Kernels know nothing of caches; a cache describes what it holds as blocks
 * and attention walks them. All rows of a block belong to one (layer,
 * sequence, KV head), sit at consecutive absolute positions and share one
 * format.
 *
 * Keys quantized per channel (KIVI) share a scale and a minimum per channel
 * over a group of rows: such a block is one group, its rows hold codes, and
 * k_chan points at the group's head_dim fp16 scales followed by head_dim
 * fp16 minimums: key[i] = scale[i] * code[i] + min[i]. NULL for every
 * per-row format. */
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
    const unsigned short *k_chan; /* per-channel keys: [2][head_dim] fp16, else NULL */
} KvBlock;

#endif
