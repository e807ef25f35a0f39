/* parse.h: strict conversions of user text to numbers.
 *
 * Each function accepts the whole string or nothing: "12abc", "", " 5" and
 * out-of-range values fail with a message naming `what`. */
#ifndef KVSCOPE_UTIL_PARSE_H
#define KVSCOPE_UTIL_PARSE_H

#include <stddef.h>

#include "util/err.h"

/* A positive whole number (>= 1) that fits in size_t. */
int parse_size(const char *s, const char *what, size_t *out, Err *e);
/* A whole number >= 0. */
int parse_size0(const char *s, const char *what, size_t *out, Err *e);
/* A finite real number written in decimal (no hexadecimal floats), zero or
 * at least DBL_MIN in size: a subnormal is refused as too close to 0. */
int parse_double(const char *s, const char *what, double *out, Err *e);
/* A byte count >= 1: a whole number with an optional binary unit, K, M or
 * G (also KiB, MiB, GiB; any case): "32M" is 33554432. */
int parse_bytes(const char *s, const char *what, size_t *out, Err *e);
/* An unsigned 64-bit seed. */
int parse_u64(const char *s, const char *what, unsigned long long *out, Err *e);

#endif
