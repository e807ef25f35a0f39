/* pretok.h: the pieces BPE works inside. Merges never cross a piece, so a
 * token never spans two words. Two patterns, as llama.cpp splits text for
 * a "gpt2" vocabulary:
 *
 *   GPT-2 (kvscope's own BPE, and pre-tokenizer "gpt-2"): the regular
 *   expression 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
 *   |\s+(?!\S)|\s+ : the contractions on their own, then a run of letters,
 *   of numbers or of other marks, each with the one space before it; a
 *   run of blanks, less its last when a word follows (that one goes with
 *   the word).
 *   Llama 3 ("llama-bpe"): the contractions in either case; letters with
 *   the one mark or blank before them that is not a newline; numbers in
 *   threes; marks with one space before and the newlines after them;
 *   blanks up to their last newline; blanks as GPT-2's.
 *
 * Letters, numbers and blanks are Unicode's (unicode_class.h), read from
 * UTF-8; a byte that is not valid UTF-8 counts as a mark of its own. */
#ifndef KVSCOPE_TEXT_PRETOK_H
#define KVSCOPE_TEXT_PRETOK_H

#include <stddef.h>

typedef enum { PRETOK_GPT2, PRETOK_LLAMA3 } PretokPattern;

/* The length in bytes of the piece that starts at text[0] (n > 0 bytes
 * left); >= 1. pretok_next is GPT-2's. */
size_t pretok_next_as(PretokPattern p, const unsigned char *text, size_t n);
size_t pretok_next(const unsigned char *text, size_t n);

#endif
