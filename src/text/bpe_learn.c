/* bpe_learn.c: learning a BPE's merges from a text (bpe.h). The text is
 * counted once as distinct pieces (pretok.h); every round counts the
 * adjacent pairs over those pieces, weighted by how often each occurs,
 * merges the most frequent pair everywhere, and records it. */
#include "text/bpe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/pretok.h"

#define PIECE_MAX 256 /* longer pieces are cut here, as bpe_encode cuts them */

/* A distinct piece of the text: its ids (bytes at first, merged as the
 * rounds go) and how often it occurs. */
typedef struct {
    const unsigned char *at; /* its first occurrence */
    size_t len;              /* bytes */
    int *ids;
    size_t n;                /* ids left */
    uint64_t count;
} Word;

typedef struct {
    Word *w;
    size_t n, cap;
    size_t *slot;            /* [slots] index + 1 into w, 0 = empty: open addressing */
    size_t slots;
} WordSet;

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static int grow(WordSet *s)
{
    size_t slots = s->slots ? 2 * s->slots : 1 << 16;
    size_t *slot = calloc(slots, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        size_t h = hash_bytes(s->w[i].at, s->w[i].len) & (slots - 1);
        while (slot[h])
            h = (h + 1) & (slots - 1);
        slot[h] = i + 1;
    }
    free(s->slot);
    s->slot = slot;
    s->slots = slots;
    return 0;
}

/* Count one occurrence of the piece p[0..n). */
static int add(WordSet *s, const unsigned char *p, size_t n)
{
    if (2 * (s->n + 1) > s->slots && grow(s) < 0)
        return -1;
    size_t h = hash_bytes(p, n) & (s->slots - 1);
    for (; s->slot[h]; h = (h + 1) & (s->slots - 1)) {
        Word *w = &s->w[s->slot[h] - 1];
        if (w->len == n && memcmp(w->at, p, n) == 0) {
            w->count++;
            return 0;
        }
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        Word *w = realloc(s->w, cap * sizeof *w);
        if (!w)
            return -1;
        s->w = w;
        s->cap = cap;
    }
    s->w[s->n] = (Word){ .at = p, .len = n, .count = 1 };
    s->slot[h] = ++s->n;
    return 0;
}

static void set_free(WordSet *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->w[i].ids);
    free(s->w);
    free(s->slot);
}

static int count_pieces(WordSet *s, const unsigned char *text, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t plen = pretok_next(text + i, len - i);
        for (size_t off = 0; off < plen; off += PIECE_MAX)
            if (add(s, text + i + off, plen - off < PIECE_MAX ? plen - off : PIECE_MAX) < 0)
                return -1;
        i += plen;
    }
    for (size_t i = 0; i < s->n; i++) {
        Word *w = &s->w[i];
        if (!(w->ids = malloc(w->len * sizeof *w->ids)))
            return -1;
        for (size_t k = 0; k < w->len; k++)
            w->ids[k] = w->at[k];
        w->n = w->len;
    }
    return 0;
}

/* The most frequent adjacent pair (the smaller on a tie) into best; its count. */
static uint64_t best_pair(const WordSet *s, uint64_t *counts, size_t V, int best[2])
{
    memset(counts, 0, V * V * sizeof *counts);
    for (size_t i = 0; i < s->n; i++) {
        const Word *w = &s->w[i];
        for (size_t k = 0; k + 1 < w->n; k++)
            counts[(size_t)w->ids[k] * V + (size_t)w->ids[k + 1]] += w->count;
    }
    uint64_t top = 0;
    size_t at = 0;
    for (size_t p = 0; p < V * V; p++)
        if (counts[p] > top)
            top = counts[p], at = p;
    best[0] = (int)(at / V), best[1] = (int)(at % V);
    return top;
}

/* (a, b) -> id everywhere, left to right. */
static void apply_merge(WordSet *s, int a, int b, int id)
{
    for (size_t i = 0; i < s->n; i++) {
        Word *w = &s->w[i];
        size_t out = 0;
        for (size_t k = 0; k < w->n; k++) {
            if (k + 1 < w->n && w->ids[k] == a && w->ids[k + 1] == b) {
                w->ids[out++] = id;
                k++;
            } else {
                w->ids[out++] = w->ids[k];
            }
        }
        w->n = out;
    }
}

int bpe_learn(Bpe *b, const unsigned char *text, size_t len, size_t vocab,
              void (*progress)(void *user, size_t done, size_t total), void *user, Err *e)
{
    memset(b, 0, sizeof *b);
    if (vocab < 256 || vocab > BPE_MAX_VOCAB)
        return err_set(e, ERR_USAGE, "--vocab: 256 to %d, got %zu", BPE_MAX_VOCAB, vocab);
    const size_t n_merges = vocab - 256;
    WordSet s = { 0 };
    uint64_t *counts = malloc(vocab * vocab * sizeof *counts);
    int (*merges)[2] = malloc((n_merges ? n_merges : 1) * sizeof *merges);
    int rc = 0;
    if (!counts || !merges || count_pieces(&s, text, len) < 0)
        rc = err_set(e, ERR_RUNTIME, "out of memory learning merges");
    size_t m = 0;
    for (; rc == 0 && m < n_merges; m++) {
        int pair[2];
        if (best_pair(&s, counts, vocab, pair) == 0)
            break; /* nothing left to merge: a smaller vocabulary */
        merges[m][0] = pair[0], merges[m][1] = pair[1];
        apply_merge(&s, pair[0], pair[1], (int)(256 + m));
        if (progress)
            progress(user, m + 1, n_merges);
    }
    if (rc == 0)
        rc = bpe_init(b, (const int(*)[2])merges, m, e);
    set_free(&s);
    free(counts);
    free(merges);
    return rc;
}
