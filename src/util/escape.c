#include "util/escape.h"

#include <stdio.h>
#include <string.h>

/* The length of the valid UTF-8 sequence that starts s and is not a C1
 * control, or 0 when s starts with a byte that must be escaped. */
static size_t printable_length(const unsigned char *s)
{
    const unsigned char c = s[0];
    if (c < 0x80)
        return c >= 0x20 && c != 0x7f;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (n == 2 && c == 0xc2 && s[1] <= 0x9f) /* U+0080..U+009F */
        return 0;
    if ((n == 3 && c == 0xe0 && s[1] < 0xa0) || (n == 4 && c == 0xf0 && s[1] < 0x90) ||
        (n == 4 && c == 0xf4 && s[1] > 0x8f)) /* overlong, or beyond U+10FFFF */
        return 0;
    return n;
}

char *escape_controls(char *dst, size_t cap, const char *src)
{
    size_t at = 0;
    const unsigned char *s = (const unsigned char *)src;
    while (*s) {
        size_t n = printable_length(s);
        size_t width = n ? n : 4; /* "\xNN" */
        if (at + width >= cap)
            break;
        if (n)
            memcpy(dst + at, s, n);
        else
            snprintf(dst + at, 5, "\\x%02x", *s);
        at += width;
        s += n ? n : 1;
    }
    dst[at] = '\0';
    return dst;
}
