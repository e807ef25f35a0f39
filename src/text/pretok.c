/* pretok.c: where a BPE piece ends (pretok.h), llama.cpp's two patterns
 * followed step by step over code points. */
#include "text/pretok.h"

#include <stdint.h>

#include "text/unicode_class.h"

#define NONE (-1) /* past the end: no class at all */

typedef struct {
    const unsigned char *s;
    size_t n;
} Text;

/* The code point at byte i (its length in *len); a byte that does not
 * start valid UTF-8 is U+FFFD, a mark, one byte long. */
static uint32_t cp_at(Text t, size_t i, size_t *len)
{
    const unsigned char c = t.s[i];
    size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (k == 0 || i + k > t.n) {
        *len = 1;
        return c < 0x80 ? c : 0xFFFD;
    }
    uint32_t v = k == 1 ? c : c & (0x7F >> k);
    for (size_t j = 1; j < k; j++) {
        if ((t.s[i + j] & 0xC0) != 0x80) {
            *len = 1;
            return 0xFFFD;
        }
        v = v << 6 | (t.s[i + j] & 0x3F);
    }
    *len = k;
    return v;
}

static int class_at(Text t, size_t i)
{
    size_t len;
    return i < t.n ? (int)unicode_class(cp_at(t, i, &len)) : NONE;
}

/* the byte after the code point at i */
static size_t next(Text t, size_t i)
{
    size_t len;
    cp_at(t, i, &len);
    return i + len;
}

static uint32_t lower_ascii(uint32_t c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's 't 're 've 'm 'll 'd at 0 (any case when fold): its length, or 0 */
static size_t contraction(Text t, int fold)
{
    if (t.n < 2 || t.s[0] != '\'')
        return 0;
    uint32_t a = fold ? lower_ascii(t.s[1]) : t.s[1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if (t.n < 3)
        return 0;
    uint32_t b = fold ? lower_ascii(t.s[2]) : t.s[2];
    return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
}

/* from i, the end of the run of class k */
static size_t run_of(Text t, size_t i, int k)
{
    while (class_at(t, i) == k)
        i = next(t, i);
    return i;
}

/* a run of blanks from 0 (the first is one): all of it, less its last
 * code point when more text follows (that one leads the word after it) */
static size_t blanks(Text t)
{
    size_t i = 0, last = 0, count = 0;
    while (class_at(t, i) == UC_SPACE) {
        last = i;
        i = next(t, i);
        count++;
    }
    return count > 1 && i < t.n ? last : i;
}

static size_t gpt2(Text t)
{
    size_t c = contraction(t, 0);
    if (c)
        return c;
    const int space = t.s[0] == ' ';
    const int k = space ? class_at(t, 1) : class_at(t, 0);
    if (k == UC_LETTER || k == UC_NUMBER || k == UC_OTHER)
        return run_of(t, space ? 1 : 0, k);
    size_t b = blanks(t);
    return b ? b : next(t, 0);
}

static size_t llama3(Text t)
{
    size_t c = contraction(t, 1);
    if (c)
        return c;
    size_t len;
    const uint32_t c0 = cp_at(t, 0, &len);
    const int k0 = class_at(t, 0);
    if (c0 != '\r' && c0 != '\n' && k0 != UC_NUMBER && (k0 == UC_LETTER || class_at(t, len) == UC_LETTER))
        return run_of(t, len, UC_LETTER); /* one mark or blank, then letters */
    if (k0 == UC_NUMBER) { /* numbers three at a time */
        size_t i = 0;
        for (int d = 0; d < 3 && class_at(t, i) == UC_NUMBER; d++)
            i = next(t, i);
        return i;
    }
    const int space = c0 == ' ';
    if ((space ? class_at(t, 1) : k0) == UC_OTHER) {
        size_t i = run_of(t, space ? 1 : 0, UC_OTHER);
        while (i < t.n && (t.s[i] == '\r' || t.s[i] == '\n'))
            i++;
        return i;
    }
    size_t i = 0, after_newline = 0;
    while (class_at(t, i) == UC_SPACE) {
        if (t.s[i] == '\r' || t.s[i] == '\n')
            after_newline = i + 1;
        i = next(t, i);
    }
    if (after_newline)
        return after_newline;
    size_t b = blanks(t);
    return b ? b : len;
}

size_t pretok_next_as(PretokPattern p, const unsigned char *text, size_t n)
{
    const Text t = { text, n };
    return p == PRETOK_LLAMA3 ? llama3(t) : gpt2(t);
}

size_t pretok_next(const unsigned char *text, size_t n)
{
    return pretok_next_as(PRETOK_GPT2, text, n);
}
