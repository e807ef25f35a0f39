/* vocab_bpe.h: the BPE of a "gpt2" vocabulary as GGUF files carry it
 * (GPT-2's own, Llama 3's, and kvscope's exports), encoded as llama.cpp
 * encodes it: the text split into pieces by the vocabulary's pre-tokenizer
 * (pretok.h); inside each piece, starting from its bytes, the adjacent
 * pair whose merge comes first in the merges list joined, leftmost first,
 * until no pair has a merge; each part's token found by its bytes (a part
 * without one as its bytes' tokens). With ignore_merges (Llama 3) a piece
 * that is a token as a whole is that token.
 *
 * The tokens are written in GPT-2's byte alphabet (byte_alphabet.h); a
 * token that is not (a special one such as <|endoftext|>) never comes out
 * of text, and its piece is empty for a control token, its text otherwise. */
#ifndef KVSCOPE_TEXT_VOCAB_BPE_H
#define KVSCOPE_TEXT_VOCAB_BPE_H

#include <stddef.h>

#include "text/pretok.h"
#include "util/err.h"

typedef struct {
    size_t n;                     /* tokens */
    const unsigned char *const *piece; /* [n] as written */
    const size_t *len;            /* [n] */
    const int *type;              /* [n] GGUF's token types (3: control), or NULL */
    const unsigned char *const *merge; /* [n_merges] "A B" as written, in rank order */
    const size_t *merge_len;
    size_t n_merges;
    PretokPattern pre;
    int ignore_merges;
} VocabBpeSpec;

typedef struct VocabBpe VocabBpe;

/* Copies what it needs of s. ERR_RUNTIME when memory runs out; ERR_USAGE
 * when a merge is not two tokens with a space between. */
int vocab_bpe_new(VocabBpe **out, const VocabBpeSpec *s, Err *e);
void vocab_bpe_free(VocabBpe *v);
size_t vocab_bpe_size(const VocabBpe *v);

/* text[0..len) into *ids (malloc'd, *n of them); ERR_USAGE when a byte has
 * no token. */
int vocab_bpe_encode(const VocabBpe *v, const unsigned char *text, size_t len, int **ids, size_t *n, Err *e);

/* The bytes id stands for (*len of them). */
const unsigned char *vocab_bpe_piece(const VocabBpe *v, int id, size_t *len);

#endif
