/* byte_alphabet.c: bytes to GPT-2's byte-level characters and back
 * (byte_alphabet.h). */
#include "text/byte_alphabet.h"

/* The code point byte b is written as: itself when printable, else the
 * next of U+0100.. in byte order (0x00..0x20, then 0x7F..0xA0, then 0xAD). */
static unsigned code_point(unsigned b)
{
    if (b <= 0x20)
        return 0x100 + b;
    if (b >= 0x7F && b <= 0xA0)
        return 0x121 + (b - 0x7F);
    return b == 0xAD ? 0x143 : b;
}

/* The byte code point c stands for, or -1. */
static int byte_of(unsigned c)
{
    if (c <= 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD || c > 0x143)
        return -1;
    if (c < 0x100)
        return (int)c;
    if (c <= 0x120)
        return (int)(c - 0x100);
    return c <= 0x142 ? (int)(c - 0x121 + 0x7F) : 0xAD;
}

size_t byte_alphabet_write(const unsigned char *bytes, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = code_point(bytes[i]);
        unsigned char u[2];
        size_t k = 1;
        if (c < 0x80) {
            u[0] = (unsigned char)c;
        } else { /* every code point of the alphabet is below U+0800: two bytes */
            u[0] = (unsigned char)(0xC0 | c >> 6);
            u[1] = (unsigned char)(0x80 | (c & 0x3F));
            k = 2;
        }
        for (size_t j = 0; j < k; j++, o++)
            if (o < cap)
                out[o] = (char)u[j];
    }
    return o;
}

int byte_alphabet_read(const char *text, size_t n, unsigned char *out, size_t cap, size_t *out_len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t o = 0;
    for (size_t i = 0; i < n; o++) {
        unsigned c = s[i];
        if (c >= 0x80) { /* only two-byte characters are in the alphabet */
            if ((c & 0xE0) != 0xC0 || i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return -1;
            c = (c & 0x1F) << 6 | (s[i + 1] & 0x3F);
            if (c < 0x80) /* an overlong form */
                return -1;
            i += 2;
        } else {
            i++;
        }
        int b = byte_of(c);
        if (b < 0 || o >= cap)
            return -1;
        out[o] = (unsigned char)b;
    }
    *out_len = o;
    return 0;
}
