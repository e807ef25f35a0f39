/* fuzz_number.c: libFuzzer target for the strict number parsers (util/parse.h).
 *
 * Each input is given whole to parse_size, parse_size0, parse_double and
 * parse_u64. Beyond not crashing, what they promise is checked: a size is
 * >= 1 (>= 0 for size0), a real is finite, and a string with a leading
 * space, or one that is empty, is refused by all four. */
#include <ctype.h>
#include <math.h>

#include "fuzz_util.h"
#include "util/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    if (!s)
        return 0;
    Err e;
    size_t z;
    double d;
    unsigned long long u;
    const int never = s[0] == '\0' || isspace((unsigned char)s[0]);
    if (parse_size(s, "n", &z, &e) == 0) {
        if (z < 1 || never)
            abort();
    } else {
        fuzz_check_err(&e, s);
    }
    if (parse_size0(s, "n", &z, &e) == 0) {
        if (never)
            abort();
    } else {
        fuzz_check_err(&e, s);
    }
    if (parse_double(s, "x", &d, &e) == 0) {
        if (!isfinite(d) || never)
            abort();
    } else {
        fuzz_check_err(&e, s);
    }
    if (parse_u64(s, "seed", &u, &e) == 0) {
        if (never)
            abort();
    } else {
        fuzz_check_err(&e, s);
    }
    free(s);
    return 0;
}
