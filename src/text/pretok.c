/* pretok.c: where a BPE piece ends (pretok.h). */
#include "text/pretok.h"

typedef enum { C_LETTER, C_DIGIT, C_MARK, C_SPACE, C_NEWLINE, C_WHITE } ByteClass;

static ByteClass byte_class(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80)
        return C_LETTER;
    if (c >= '0' && c <= '9')
        return C_DIGIT;
    if (c == ' ')
        return C_SPACE;
    if (c == '\n')
        return C_NEWLINE;
    if (c == '\t' || c == '\r' || c == '\v' || c == '\f')
        return C_WHITE;
    return C_MARK;
}

static int is_word(ByteClass k)
{
    return k == C_LETTER || k == C_DIGIT || k == C_MARK;
}

size_t pretok_next(const unsigned char *text, size_t n)
{
    ByteClass first = byte_class(text[0]);
    if (first == C_NEWLINE)
        return 1;
    size_t i = 0;
    if (first == C_SPACE && n > 1 && is_word(byte_class(text[1]))) /* a space leads the word after it */
        first = byte_class(text[++i]);
    if (first == C_SPACE || first == C_WHITE) { /* a run of blanks; its last space goes with a word after it */
        while (i < n && byte_class(text[i]) == first)
            i++;
        return i > 1 && i < n && text[i - 1] == ' ' && is_word(byte_class(text[i])) ? i - 1 : i;
    }
    while (i < n && byte_class(text[i]) == first)
        i++;
    return i;
}
