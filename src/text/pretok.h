/* pretok.h: the pieces BPE works inside. Merges never cross a piece, so
 * a token never spans two words: a piece is a run of letters (bytes of
 * 0x80 and up count as letters, so UTF-8 stays whole), a run of digits or
 * a run of other marks, each with the one space before it if there is
 * one; a newline alone; any other whitespace run alone. */
#ifndef KVSCOPE_TEXT_PRETOK_H
#define KVSCOPE_TEXT_PRETOK_H

#include <stddef.h>

/* The length of the piece that starts at text[0] (n > 0 bytes left); >= 1. */
size_t pretok_next(const unsigned char *text, size_t n);

#endif
