/* spm.c: the SentencePiece-style tokenizer (spm.h): pieces in a hash table,
 * joins chosen from a max-heap of adjacent pairs. */
#include "text/spm.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"

#define NONE SIZE_MAX
#define MARKER "\xe2\x96\x81" /* U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space */

struct Spm {
    size_t n;
    unsigned char **raw;  /* [n] pieces as written, for look-ups */
    size_t *raw_len;
    unsigned char **dec;  /* [n] pieces decoded (spm.h) */
    size_t *dec_len;
    float *score;         /* [n] */
    unsigned char *bytes; /* both kinds of pieces, one block */
    int *slot;            /* hash table of joinable ids, -1 empty; mask + 1 slots */
    size_t mask;
    int byte_id[256];     /* the byte token of each byte value, -1 none */
    int bos, unk, add_space_prefix; /* bos -1: none put first */
    const char *marker;
    size_t marker_len;
};

static size_t hash(const unsigned char *p, size_t len)
{
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

/* The joinable id whose piece is p[0..len), -1 if none. */
static int lookup(const Spm *s, const unsigned char *p, size_t len)
{
    for (size_t i = hash(p, len) & s->mask;; i = (i + 1) & s->mask) {
        int id = s->slot[i];
        if (id < 0)
            return -1;
        if (s->raw_len[id] == len && memcmp(s->raw[id], p, len) == 0)
            return id;
    }
}

static void insert(Spm *s, int id)
{
    if (lookup(s, s->raw[id], s->raw_len[id]) >= 0)
        return; /* a piece listed twice: the first id stands */
    size_t i = hash(s->raw[id], s->raw_len[id]) & s->mask;
    while (s->slot[i] >= 0)
        i = (i + 1) & s->mask;
    s->slot[i] = id;
}

/* "<0xXX>" -> XX, or -1. */
static int byte_value(const unsigned char *p, size_t len)
{
    if (len != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
        return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        int c = p[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

int spm_type(const SpmVocab *v, size_t i)
{
    if (v->type)
        return v->type[i];
    if ((int)i == v->unk)
        return SPM_UNKNOWN;
    if ((int)i == v->bos || (int)i == v->eos)
        return SPM_CONTROL;
    return byte_value(v->piece[i], v->len[i]) >= 0 ? SPM_BYTE : SPM_NORMAL;
}

/* The decoded form of piece i into out (room for its raw length). */
static size_t decode_piece(const Spm *s, int type, size_t i, unsigned char *out)
{
    const unsigned char *p = s->raw[i];
    size_t len = s->raw_len[i], o = 0;
    if (type == SPM_CONTROL || type == SPM_UNUSED)
        return 0;
    if (type == SPM_BYTE) {
        out[0] = (unsigned char)byte_value(p, len);
        return 1;
    }
    for (size_t k = 0; k < len;) {
        if (type != SPM_UNKNOWN && len - k >= s->marker_len && memcmp(p + k, s->marker, s->marker_len) == 0) {
            out[o++] = ' ';
            k += s->marker_len;
        } else {
            out[o++] = p[k++];
        }
    }
    return o;
}

static int check_vocab(const SpmVocab *v, Err *e)
{
    if (v->n == 0 || v->n > INT_MAX)
        return err_set(e, ERR_USAGE, "a vocabulary of %zu tokens", v->n);
    const int ids[3] = { v->bos, v->eos, v->unk };
    for (int k = 0; k < 3; k++)
        if (ids[k] < -1 || (ids[k] >= 0 && (size_t)ids[k] >= v->n))
            return err_set(e, ERR_USAGE, "the %s token id %d is outside the vocabulary of %zu tokens",
                           k == 0 ? "BOS" : k == 1 ? "EOS" : "unknown", ids[k], v->n);
    for (size_t i = 0; i < v->n; i++) {
        int t = spm_type(v, i);
        if (t < SPM_NORMAL || t > SPM_BYTE)
            return err_set(e, ERR_USAGE, "token %zu has type %d (types are 1 to 6)", i, t);
        if (t == SPM_BYTE && byte_value(v->piece[i], v->len[i]) < 0)
            return err_set(e, ERR_USAGE, "token %zu is a byte token but is not written <0xXX>", i);
    }
    return 0;
}

int spm_new(Spm **out, const SpmVocab *v, Err *e)
{
    *out = NULL;
    if (check_vocab(v, e) < 0)
        return -1;
    size_t total = 0, slots = 16;
    for (size_t i = 0; i < v->n; i++)
        if (size_add(total, v->len[i], &total) < 0)
            return err_set(e, ERR_USAGE, "a vocabulary too large to count");
    while (slots < 2 * v->n) /* n <= INT_MAX: no overflow */
        slots *= 2;
    Spm *s = calloc(1, sizeof *s);
    size_t block;
    if (!s || size_mul(total, 2, &block) < 0)
        return free(s), err_set(e, ERR_RUNTIME, "out of memory for a vocabulary of %zu tokens", v->n);
    s->n = v->n;
    s->raw = calloc(v->n, sizeof *s->raw);
    s->dec = calloc(v->n, sizeof *s->dec);
    s->raw_len = calloc(v->n, sizeof *s->raw_len);
    s->dec_len = calloc(v->n, sizeof *s->dec_len);
    s->score = calloc(v->n, sizeof *s->score);
    s->bytes = malloc(block ? block : 1);
    s->slot = malloc(slots * sizeof *s->slot);
    if (!s->raw || !s->dec || !s->raw_len || !s->dec_len || !s->score || !s->bytes || !s->slot) {
        spm_free(s);
        return err_set(e, ERR_RUNTIME, "out of memory for a vocabulary of %zu tokens", v->n);
    }
    s->mask = slots - 1;
    memset(s->slot, 0xff, slots * sizeof *s->slot); /* every slot -1 */
    memset(s->byte_id, 0xff, sizeof s->byte_id);
    s->bos = v->add_bos ? v->bos : -1;
    s->unk = v->unk;
    s->add_space_prefix = v->add_space_prefix;
    s->marker = v->raw_spaces ? " " : MARKER;
    s->marker_len = strlen(s->marker);
    unsigned char *at = s->bytes;
    for (size_t i = 0; i < v->n; i++) {
        int t = spm_type(v, i);
        s->raw[i] = at;
        s->raw_len[i] = v->len[i];
        if (v->len[i])
            memcpy(at, v->piece[i], v->len[i]);
        at += v->len[i];
        s->score[i] = v->score ? v->score[i] : 0.0f;
        s->dec[i] = s->bytes + total + (size_t)(s->raw[i] - s->bytes);
        s->dec_len[i] = decode_piece(s, t, i, s->dec[i]);
        if (t == SPM_NORMAL || t == SPM_USER)
            insert(s, (int)i);
        else if (t == SPM_BYTE && s->byte_id[byte_value(s->raw[i], s->raw_len[i])] < 0)
            s->byte_id[byte_value(s->raw[i], s->raw_len[i])] = (int)i;
    }
    *out = s;
    return 0;
}

void spm_free(Spm *s)
{
    if (!s)
        return;
    free(s->raw);
    free(s->dec);
    free(s->raw_len);
    free(s->dec_len);
    free(s->score);
    free(s->bytes);
    free(s->slot);
    free(s);
}

size_t spm_vocab(const Spm *s)
{
    return s->n;
}

const unsigned char *spm_piece(const Spm *s, int id, size_t *len)
{
    if (id < 0 || (size_t)id >= s->n) {
        *len = 0;
        return NULL;
    }
    *len = s->dec_len[id];
    return s->dec[id];
}

/* --- encoding ----------------------------------------------------------- */

/* A candidate join: symbols left and right, size bytes together, the score
 * of their piece. Stale once either symbol changed (checked when popped). */
typedef struct {
    float score;
    size_t left, right, size;
} Pair;

typedef struct {
    const Spm *s;
    const unsigned char *text; /* the text with the markers */
    size_t *start, *len, *prev, *next; /* [symbols]: len 0 = joined into its left neighbour */
    Pair *heap;
    size_t n_heap;
} Work;

/* a before b: the higher score, then the leftmost */
static int better(const Pair *a, const Pair *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(Work *w, Pair p)
{
    size_t i = w->n_heap++;
    while (i > 0 && better(&p, &w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = p;
}

static Pair heap_pop(Work *w)
{
    Pair top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->n_heap)
            break;
        if (c + 1 < w->n_heap && better(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!better(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->n_heap)
        w->heap[i] = last;
    return top;
}

static void try_pair(Work *w, size_t left, size_t right)
{
    if (left == NONE || right == NONE)
        return;
    size_t size = w->len[left] + w->len[right];
    int id = lookup(w->s, w->text + w->start[left], size);
    if (id >= 0)
        heap_push(w, (Pair){ .score = w->s->score[id], .left = left, .right = right, .size = size });
}

/* Join the best pair, again and again, until no adjacent pair is a piece. */
static void join_all(Work *w, size_t syms)
{
    for (size_t i = 0; i + 1 < syms; i++)
        try_pair(w, i, i + 1);
    while (w->n_heap) {
        Pair p = heap_pop(w);
        if (w->len[p.left] == 0 || w->len[p.right] == 0 || w->next[p.left] != p.right ||
            w->len[p.left] + w->len[p.right] != p.size)
            continue; /* one of its symbols has joined another since */
        w->len[p.left] += w->len[p.right];
        w->len[p.right] = 0;
        w->next[p.left] = w->next[p.right];
        if (w->next[p.right] != NONE)
            w->prev[w->next[p.right]] = p.left;
        try_pair(w, w->prev[p.left], p.left);
        try_pair(w, p.left, w->next[p.left]);
    }
}

/* Bytes of the UTF-8 character led by c (a stray byte alone), at most left. */
static size_t char_len(unsigned char c, size_t left)
{
    size_t n = c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    return n < left ? n : left;
}

/* The text with its spaces as markers, one in front: *out malloc'd. */
static int escape(const Spm *s, const unsigned char *text, size_t len, unsigned char **out, size_t *n, Err *e)
{
    size_t cap;
    if (size_add(len, 1, &cap) < 0 || size_mul(cap, s->marker_len, &cap) < 0) /* every byte a space, and the prefix */
        return err_set(e, ERR_USAGE, "a text of %zu bytes is too long to encode", len);
    unsigned char *t = malloc(cap ? cap : 1);
    if (!t)
        return err_set(e, ERR_RUNTIME, "out of memory for a text of %zu bytes", len);
    size_t o = 0;
    if (s->add_space_prefix && len) {
        memcpy(t, s->marker, s->marker_len);
        o = s->marker_len;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(t + o, s->marker, s->marker_len);
            o += s->marker_len;
        } else {
            t[o++] = text[i];
        }
    }
    *out = t;
    *n = o;
    return 0;
}

/* The ids of the symbols left after joining, byte tokens for the others. */
static int emit(const Work *w, size_t first, int *ids, size_t *n, Err *e)
{
    const Spm *s = w->s;
    for (size_t i = first; i != NONE; i = w->next[i]) {
        const unsigned char *p = w->text + w->start[i];
        int id = lookup(s, p, w->len[i]);
        if (id >= 0) {
            ids[(*n)++] = id;
            continue;
        }
        size_t k = 0;
        while (k < w->len[i] && s->byte_id[p[k]] >= 0)
            k++;
        if (k < w->len[i] && s->unk < 0)
            return err_set(e, ERR_USAGE, "byte 0x%02x has no token and the vocabulary has no unknown token", p[k]);
        if (k < w->len[i]) {
            ids[(*n)++] = s->unk;
            continue;
        }
        for (k = 0; k < w->len[i]; k++)
            ids[(*n)++] = s->byte_id[p[k]];
    }
    return 0;
}

int spm_encode(const Spm *s, const unsigned char *text, size_t len, int **ids, size_t *n, Err *e)
{
    *ids = NULL;
    *n = 0;
    Work w = { .s = s };
    unsigned char *t = NULL;
    size_t tlen = 0, syms = 0, heap_cap = 0;
    if (escape(s, text, len, &t, &tlen, e) < 0)
        return -1;
    w.text = t;
    /* at most tlen symbols; each join adds at most two pairs to the first tlen */
    size_t each = 4 * sizeof(size_t);
    int rc = size_mul(tlen, 3, &heap_cap) < 0 || size_mul(tlen, each, &each) < 0
                 ? err_set(e, ERR_USAGE, "a text of %zu bytes is too long to encode", len) : 0;
    if (rc == 0) {
        w.start = malloc(each ? each : 1);
        w.heap = malloc((heap_cap ? heap_cap : 1) * sizeof *w.heap);
        *ids = malloc((tlen + 1) * sizeof **ids); /* never more ids than bytes, and BOS */
        if (!w.start || !w.heap || !*ids)
            rc = err_set(e, ERR_RUNTIME, "out of memory for a text of %zu bytes", len);
    }
    if (rc == 0) {
        w.len = w.start + tlen;
        w.prev = w.len + tlen;
        w.next = w.prev + tlen;
        for (size_t i = 0; i < tlen; syms++) {
            w.start[syms] = i;
            w.len[syms] = char_len(t[i], tlen - i);
            w.prev[syms] = syms ? syms - 1 : NONE;
            w.next[syms] = NONE;
            if (syms)
                w.next[syms - 1] = syms;
            i += w.len[syms];
        }
        join_all(&w, syms);
        if (s->bos >= 0)
            (*ids)[(*n)++] = s->bos;
        rc = emit(&w, syms ? 0 : NONE, *ids, n, e);
    }
    free(t);
    free(w.start);
    free(w.heap);
    if (rc < 0) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}
