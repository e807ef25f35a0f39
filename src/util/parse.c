#include "util/parse.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int parse_ull(const char *s, const char *what, unsigned long long *out, Err *e)
{
    if (!s || !isdigit((unsigned char)s[0]))
        return err_set(e, ERR_USAGE, "%s: '%s' is not a whole number", what, s ? s : "");
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0')
        return err_set(e, ERR_USAGE, "%s: '%s' is not a whole number", what, s);
    if (errno == ERANGE)
        return err_set(e, ERR_USAGE, "%s: '%s' is too large", what, s);
    *out = v;
    return 0;
}

int parse_size0(const char *s, const char *what, size_t *out, Err *e)
{
    unsigned long long v;
    if (parse_ull(s, what, &v, e) < 0)
        return -1;
    if (v > SIZE_MAX / 4) /* leave headroom so later products can be checked */
        return err_set(e, ERR_USAGE, "%s: '%s' is too large", what, s);
    *out = (size_t)v;
    return 0;
}

int parse_size(const char *s, const char *what, size_t *out, Err *e)
{
    if (s && s[0] == '-')
        return err_set(e, ERR_USAGE, "%s: must be at least 1, got '%s'", what, s);
    if (parse_size0(s, what, out, e) < 0)
        return -1;
    if (*out == 0)
        return err_set(e, ERR_USAGE, "%s: must be at least 1, got 0", what);
    return 0;
}

int parse_double(const char *s, const char *what, double *out, Err *e)
{
    if (!s || !*s || isspace((unsigned char)s[0]))
        return err_set(e, ERR_USAGE, "%s: '%s' is not a number", what, s ? s : "");
    /* strtod also reads C's hexadecimal floats: "0x10" would be 16 */
    const char *digits = s + (s[0] == '-' || s[0] == '+');
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
        return err_set(e, ERR_USAGE, "%s: '%s' is not a decimal number", what, s);
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (*end == '\0' && errno == ERANGE && fabs(v) > 1) /* overflow: HUGE_VAL */
        return err_set(e, ERR_USAGE, "%s: '%s' is too large for a double", what, s);
    if (*end != '\0' || !isfinite(v))
        return err_set(e, ERR_USAGE, "%s: '%s' is not a finite number", what, s);
    if (errno == ERANGE || (v != 0 && !isnormal(v))) /* below DBL_MIN: subnormal or rounded to 0 */
        return err_set(e, ERR_USAGE, "%s: '%s' is too close to 0 (the smallest normal number is %g)", what, s,
                       DBL_MIN);
    *out = v;
    return 0;
}

int parse_u64(const char *s, const char *what, unsigned long long *out, Err *e)
{
    return parse_ull(s, what, out, e);
}

int parse_bytes(const char *s, const char *what, size_t *out, Err *e)
{
    static const char units[] = "KMG";
    if (!s || !isdigit((unsigned char)s[0]))
        return err_set(e, ERR_USAGE, "%s: '%s' is not a size (a whole number of bytes, or with K, M or G)", what,
                       s ? s : "");
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end) {
        const char *u = strchr(units, toupper((unsigned char)*end));
        const char *rest = end + 1;
        if (u && (rest[0] == '\0' || strcasecmp(rest, "iB") == 0 || strcasecmp(rest, "B") == 0))
            shift = 10 * (unsigned)(u - units + 1);
        else
            return err_set(e, ERR_USAGE, "%s: '%s' is not a size (a whole number of bytes, or with K, M or G)",
                           what, s);
    }
    if (errno == ERANGE || v > (SIZE_MAX / 4) >> shift)
        return err_set(e, ERR_USAGE, "%s: '%s' is too large", what, s);
    if (v == 0)
        return err_set(e, ERR_USAGE, "%s: must be at least 1 byte, got '%s'", what, s);
    *out = (size_t)v << shift;
    return 0;
}
