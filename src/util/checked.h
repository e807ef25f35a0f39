/* checked.h: products and sums of sizes, with overflow caught instead of
 * wrapped. Every size that a user's number can reach (a batch, a prompt's
 * length, tokens to generate, a cache option) is multiplied through these:
 * a wrapped product allocates a small buffer that the copy then overruns.
 *
 * size_mul / size_add: 0 with *out set, or -1 (and *out untouched) when the
 * result does not fit in a size_t. For a buffer's size: refuse on -1.
 *
 * size_mul_sat / size_add_sat: the result, or SIZE_MAX when it does not
 * fit. For a figure that is only compared against a limit (memory needed
 * against memory present): too large to count is then larger than any
 * machine, and the comparison refuses it. */
#ifndef KVSCOPE_UTIL_CHECKED_H
#define KVSCOPE_UTIL_CHECKED_H

#include <stddef.h>
#include <stdint.h>

static inline int size_mul(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

static inline int size_add(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r))
        return -1;
    *out = r;
    return 0;
}

static inline size_t size_mul_sat(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

static inline size_t size_add_sat(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* a * b * c, saturating: the common shape of "rows x sequences x bytes". */
static inline size_t size_mul3_sat(size_t a, size_t b, size_t c)
{
    return size_mul_sat(size_mul_sat(a, b), c);
}

#endif
