/* format.h: how a stored K or V row is encoded.
 *
 * The foundation stores f32 only; the quantized formats (f16, q8_0, q4_0,
 * int4, fp4) join this enum with a traits table each, so that caches and
 * attention ask the format, never branch on it. */
#ifndef KVSCOPE_KERNELS_FORMAT_H
#define KVSCOPE_KERNELS_FORMAT_H

#include <stddef.h>

typedef enum {
    FMT_F32 = 0,
} Format;

/* Bytes one row of n elements takes in format f. */
size_t format_row_bytes(Format f, size_t n);
const char *format_name(Format f);

#endif
