/* byte_alphabet.h: GPT-2's byte-level alphabet, the way a byte-level BPE
 * vocabulary is written as text (GGUF's "gpt2" tokenizer model, Hugging
 * Face's vocab.json and merges.txt).
 *
 * Each byte value stands for one Unicode character: the printable bytes
 * '!'..'~', 0xA1..0xAC and 0xAE..0xFF for the character of the same
 * number; the other 68 (controls, space, DEL, 0x80..0xA0, soft hyphen
 * 0xAD), in increasing order, for U+0100, U+0101, ... U+0143. So a space
 * is written "Ġ" (U+0120) and a newline "Ċ" (U+010A), and every piece,
 * whatever its bytes, becomes valid UTF-8 with no blank in it, which lets
 * a merge be written as its two halves with one space between. */
#ifndef KVSCOPE_TEXT_BYTE_ALPHABET_H
#define KVSCOPE_TEXT_BYTE_ALPHABET_H

#include <stddef.h>

/* The most bytes one byte becomes when written (a character below U+0800). */
#define BYTE_ALPHABET_MAX_UTF8 2

/* bytes[0..n) written in the alphabet into out (cap bytes; no NUL added).
 * Returns the length the text needs; when it passes cap, nothing past cap
 * is written. */
size_t byte_alphabet_write(const unsigned char *bytes, size_t n, char *out, size_t cap);

/* text[0..n) read back into out (cap >= n is always enough): 0 with
 * *out_len set, or -1 when the text holds a character outside the
 * alphabet or is not valid UTF-8. */
int byte_alphabet_read(const char *text, size_t n, unsigned char *out, size_t cap, size_t *out_len);

#endif
