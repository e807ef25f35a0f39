/* text/: turning text into the token ids a model reads and back: the
 * byte-level tokenizers kvscope's models use, and the vocabulary a
 * checkpoint carries. Uses util/ only.
 *
 * tokenizer.h: one interface over a model's tokenizer. "bytes" reads text
 * as its bytes (token = byte value, 256 ids); a learnt byte-level BPE
 * (bpe.h) and a checkpoint's SentencePiece-style vocabulary (spm.h) are
 * the other kinds behind the same calls. Every byte sequence encodes (a
 * vocabulary's: when it has byte or unknown tokens), and the pieces of its
 * ids concatenate back to it (a vocabulary's: with the one space it puts
 * in front, spm.h). */
#ifndef KVSCOPE_TEXT_TOKENIZER_H
#define KVSCOPE_TEXT_TOKENIZER_H

#include <stddef.h>

#include "text/bpe.h"
#include "text/spm.h"
#include "text/vocab_bpe.h"
#include "util/err.h"

typedef struct Tokenizer Tokenizer;

/* The tokenizer a config names: "bytes", the name of a merges file in
 * data/tokenizer/ ("kjv-bpe"), or a path to one. *out is NULL on failure
 * (ERR_USAGE for an unknown name or a bad file). Free with tokenizer_free. */
int tokenizer_open(Tokenizer **out, const char *name, Err *e);

/* A tokenizer over a BPE just learnt (taken over: *b is emptied). */
int tokenizer_from_bpe(Tokenizer **out, const char *name, Bpe *b, Err *e);
/* A tokenizer over a checkpoint's vocabulary (spm_new's errors). */
int tokenizer_from_vocab(Tokenizer **out, const char *name, const SpmVocab *v, Err *e);
/* A tokenizer over a "gpt2" vocabulary laid out otherwise than kvscope's
 * own (GPT-2's, Llama 3's: vocab_bpe.h; vocab_bpe_new's errors). */
int tokenizer_from_vocab_bpe(Tokenizer **out, const char *name, const VocabBpeSpec *s, Err *e);
void tokenizer_free(Tokenizer *t);

/* Its name, as configs write it ("bytes"). */
const char *tokenizer_name(const Tokenizer *t);
/* Ids it can produce: 0 .. vocab - 1. */
size_t tokenizer_vocab(const Tokenizer *t);

/* 1 when t is byte-level (ids 0..255 are the bytes: "bytes" or a BPE),
 * with its merges (*n of them, the one that makes id 256 first; NULL and 0
 * for "bytes"); 0 for a checkpoint's vocabulary. */
int tokenizer_byte_level(const Tokenizer *t, const int (**merges)[2], size_t *n);

/* From now on every encode puts id first: a model's fixed first token
 * (a config's add_bos). id is a control token: one past the tokenizer's own
 * ids (then tokenizer_vocab grows by one), or, for a checkpoint's
 * vocabulary, one of its ids. Its piece is empty. ERR_USAGE otherwise. */
int tokenizer_set_bos(Tokenizer *t, int id, Err *e);
/* The id tokenizer_set_bos put first, or -1. */
int tokenizer_bos(const Tokenizer *t);
/* text[0..len) into *ids (malloc'd, *n of them; the caller frees).
 * ERR_RUNTIME when memory runs out; ERR_USAGE when a vocabulary has no
 * token for a byte of the text. */
int tokenizer_encode(const Tokenizer *t, const char *text, size_t len, int **ids, size_t *n, Err *e);
/* The same for text that continues a sequence already begun (its first
 * token placed by an earlier tokenizer_encode): never a first token, so
 * fragments encoded apart concatenate into a sequence with one BOS, at 0.
 * Without a first token it is tokenizer_encode. Same ownership and errors. */
int tokenizer_encode_continuation(const Tokenizer *t, const char *text, size_t len, int **ids, size_t *n, Err *e);

/* The bytes id stands for (*len of them; 0 for a control token such as
 * BOS), or NULL for an id it never produces (then *len is 0). */
const unsigned char *tokenizer_piece(const Tokenizer *t, int id, size_t *len);

/* A piece as people read it in a terminal, into buf (cap bytes, always
 * terminated): printable ASCII and valid UTF-8 as they are, a space as
 * "␣" when show_space is set, newline and tab as \n and \t, any other
 * byte as \xHH. Returns buf. */
char *tokenizer_show(const unsigned char *piece, size_t len, int show_space, char *buf, size_t cap);

#endif
