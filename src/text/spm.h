/* spm.h: a SentencePiece-style tokenizer over a vocabulary a checkpoint
 * carries (llama.cpp's "llama" tokenizer model; llama2.c's tokenizer.bin).
 *
 * Each token has its piece (bytes), a score and a type. Encoding:
 *   1. spaces become the marker U+2581 "▁" and one is put in front
 *      (add_space_prefix); a vocabulary that writes spaces as they are
 *      (llama2.c's, raw_spaces) keeps ' ' as the marker;
 *   2. the text is split into UTF-8 characters, the first symbols;
 *   3. of the adjacent pairs whose joined bytes are a normal or
 *      user-defined piece, the one of highest score is joined (a tie: the
 *      leftmost), again and again until no pair joins;
 *   4. a symbol that is a piece is its id; any other falls back to its
 *      bytes as the byte tokens "<0xXX>", or to the unknown token (one per
 *      symbol) when the vocabulary has no token for a byte.
 * BOS goes first when add_bos is set. Decoding: the marker back to a space,
 * a byte token to its byte, control and unused tokens to nothing, the
 * unknown token to its piece as written. So the pieces of an encoding
 * concatenate to the text with one space in front (the prefix). */
#ifndef KVSCOPE_TEXT_SPM_H
#define KVSCOPE_TEXT_SPM_H

#include <stddef.h>

#include "util/err.h"

/* Token types, numbered as GGUF's tokenizer.ggml.token_type writes them. */
typedef enum { SPM_NORMAL = 1, SPM_UNKNOWN, SPM_CONTROL, SPM_USER, SPM_UNUSED, SPM_BYTE } SpmType;

/* A vocabulary as a checkpoint gives it; spm_new copies what it keeps. */
typedef struct {
    size_t n;
    const unsigned char *const *piece; /* [n] each token's bytes as the vocabulary writes them ("▁the", "<0x0A>") */
    const size_t *len;                 /* [n] */
    const float *score;                /* [n], or NULL: every score 0 */
    const int *type;                   /* [n] SpmType, or NULL: the unk id is unknown, bos and eos are control,
                                          "<0xXX>" is a byte, any other is normal (llama2.c gives no types) */
    int bos, eos, unk;                 /* ids, -1: none */
    int add_bos, add_space_prefix, raw_spaces;
} SpmVocab;

/* Token i's type: v->type's, or, when the vocabulary gives none, as above. */
int spm_type(const SpmVocab *v, size_t i);

typedef struct Spm Spm;

/* ERR_USAGE for a vocabulary that is not one (a type out of range, an id
 * past the end, a byte token not written "<0xXX>"), ERR_RUNTIME out of memory. */
int spm_new(Spm **out, const SpmVocab *v, Err *e);
void spm_free(Spm *s);

size_t spm_vocab(const Spm *s);

/* text[0..len) into *ids (malloc'd, *n; the caller frees). ERR_USAGE when
 * a byte has neither a byte token nor an unknown token to fall back to. */
int spm_encode(const Spm *s, const unsigned char *text, size_t len, int **ids, size_t *n, Err *e);

/* The decoded bytes of id (*len, maybe 0), NULL for an id past the end. */
const unsigned char *spm_piece(const Spm *s, int id, size_t *len);

#endif
