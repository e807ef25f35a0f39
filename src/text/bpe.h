/* bpe.h: a byte-level BPE: the 256 byte values are the first ids, and each
 * learnt merge (a, b) makes the next id, whose piece is a's bytes followed
 * by b's. Encoding splits text into pieces (pretok.h) and, inside each,
 * merges the adjacent pair of lowest rank until none is left: every byte
 * sequence encodes, the same way every time, and decodes back to itself.
 *
 * The merges file ("kvscope-bpe 1", then "vocab N", then N - 256 lines
 * "a b", the merge that makes id 256, 257, ...) is what is shipped. */
#ifndef KVSCOPE_TEXT_BPE_H
#define KVSCOPE_TEXT_BPE_H

#include <stddef.h>

#include "util/err.h"

#define BPE_MAX_VOCAB 8192

typedef struct {
    size_t vocab;              /* 256 + merges */
    int (*merge)[2];           /* [vocab - 256] the pair each learnt id joins */
    unsigned char **piece;     /* [vocab] each id's bytes */
    size_t *piece_len;         /* [vocab] */
    unsigned short *rank;      /* [vocab][vocab] merge rank + 1 of (a, b), 0: no merge; vocab <= 65536 */
} Bpe;

/* A BPE of the merges given (n of them, each joining two earlier ids). */
int bpe_init(Bpe *b, const int (*merges)[2], size_t n, Err *e);
void bpe_free(Bpe *b);

/* Read a merges file; ERR_USAGE naming the file and line when it is
 * missing, truncated or not one. */
int bpe_load(Bpe *b, const char *path, Err *e);
/* Write one (to a temporary file, renamed into place). */
int bpe_save(const Bpe *b, const char *path, Err *e);

/* text[0..len) into ids (at most cap; the count returned, which may pass
 * cap: then call again with more room). */
size_t bpe_encode(const Bpe *b, const unsigned char *text, size_t len, int *ids, size_t cap);

/* Learn merges from text until the vocabulary holds `vocab` ids (256 to
 * BPE_MAX_VOCAB): the most frequent adjacent pair inside pieces first, a
 * tie going to the smaller (a, b). progress, when not NULL, is called
 * after each merge with the merges made and wanted. */
int bpe_learn(Bpe *b, const unsigned char *text, size_t len, size_t vocab,
              void (*progress)(void *user, size_t done, size_t total), void *user, Err *e);

#endif
