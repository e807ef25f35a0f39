/* format.h: how a stored K or V row is encoded, and what it costs.
 *
 * Sizes only, for now: every format is a row of whole blocks, each block
 * holding block_values values in block_bytes bytes, plus row_extra bytes once
 * per row (a per-row scale). A row whose length is not a multiple of the
 * block size is padded up to whole blocks, as a real store would have to:
 *
 *   row_bytes(n) = ceil(n / block_values) * block_bytes + row_extra
 *
 *   format  block_values  block_bytes  row_extra  layout
 *   f32          1             4           0      IEEE binary32
 *   f16          1             2           0      IEEE binary16
 *   q8_0        32            34           0      fp16 scale + 32 int8 (llama.cpp block_q8_0)
 *   q4_0        32            18           0      fp16 scale + 16 bytes of nibbles (block_q4_0)
 *   int4         8             4           2      8 signed nibbles per uint32, fp16 scale per row
 *   fp4          8             4           2      8 E2M1 nibbles per uint32, fp16 scale per row
 *
 * The codecs (quantize, dequantize, dot) join this file's traits table
 * later, so that caches and attention ask the format, never branch on it. */
#ifndef KVSCOPE_KERNELS_FORMAT_H
#define KVSCOPE_KERNELS_FORMAT_H

#include <stddef.h>

typedef enum {
    FMT_F32 = 0,
    FMT_F16,
    FMT_Q8_0,
    FMT_Q4_0,
    FMT_INT4,
    FMT_FP4,
    FMT_COUNT /* not a format: the number of them */
} Format;

/* Bytes one row of n values takes in format f (0 for an unknown f).
 * Rounds up to whole blocks; see the table above. */
size_t format_row_bytes(Format f, size_t n);

/* The format's short name ("f32", "q4_0", ...); "?" for an unknown f. */
const char *format_name(Format f);

/* The block layout behind format_row_bytes: values per block, bytes per
 * block, and bytes added once per row. All 0 for an unknown f. */
size_t format_block_values(Format f);
size_t format_block_bytes(Format f);
size_t format_row_extra(Format f);

/* Find the format named `name` (exact, lower case). Returns 0 and sets *out,
 * or -1 when no format has that name (then list format_names to the user). */
int format_parse(const char *name, Format *out);

/* Every format name, comma-separated, for error messages and help. */
extern const char format_names[];

#endif
