/* escape.h: text from outside (an argument, a key read from a file) made
 * safe to print on a terminal. A byte that a terminal would act on instead
 * of showing (ESC starting a colour or a cursor move, a bell, a newline
 * that would split a one-line error) is written as \xNN, and so is a byte
 * that is not part of valid UTF-8 (a lone 0x9b is CSI on 8-bit terminals);
 * the C1 controls, U+0080..U+009F, too. Printable ASCII and other valid
 * UTF-8 pass through unchanged. */
#ifndef KVSCOPE_UTIL_ESCAPE_H
#define KVSCOPE_UTIL_ESCAPE_H

#include <stddef.h>

/* src, escaped, into dst of cap bytes (cap >= 1), always NUL-terminated;
 * cut at a whole character or escape when it does not fit. Returns dst. */
char *escape_controls(char *dst, size_t cap, const char *src);

#endif
