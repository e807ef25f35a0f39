/* vocab_bpe.c: a "gpt2" vocabulary's BPE (vocab_bpe.h): two hash tables,
 * bytes to token and token pair to merge rank. */
#include "text/vocab_bpe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/byte_alphabet.h"

struct VocabBpe {
    size_t n;
    unsigned char **bytes; /* [n] each token's bytes (its text where it is not in the alphabet) */
    size_t *len;           /* [n] */
    unsigned char *text_ok; /* [n] 1: bytes decoded from the alphabet, a token text can produce */
    int *slot;             /* [cap] token ids by their bytes' hash, -1 empty */
    size_t cap;
    uint64_t *pair;        /* [pcap] (a << 32 | b) + 1 of each merge, 0 empty */
    uint32_t *rank;        /* [pcap] */
    size_t pcap;
    PretokPattern pre;
    int ignore_merges;
};

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static uint64_t hash_pair(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    return k ^ k >> 33;
}

/* the token whose bytes are p[0..n), or -1 */
static int find(const VocabBpe *v, const unsigned char *p, size_t n)
{
    for (size_t i = hash_bytes(p, n) & (v->cap - 1);; i = (i + 1) & (v->cap - 1)) {
        int id = v->slot[i];
        if (id < 0)
            return -1;
        if (v->len[id] == n && memcmp(v->bytes[id], p, n) == 0)
            return id;
    }
}

static uint32_t rank_of(const VocabBpe *v, int a, int b)
{
    const uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    for (size_t i = hash_pair(key) & (v->pcap - 1);; i = (i + 1) & (v->pcap - 1)) {
        if (v->pair[i] == 0)
            return UINT32_MAX;
        if (v->pair[i] == key)
            return v->rank[i];
    }
}

void vocab_bpe_free(VocabBpe *v)
{
    if (!v)
        return;
    for (size_t i = 0; v->bytes && i < v->n; i++)
        free(v->bytes[i]);
    free(v->bytes);
    free(v->len);
    free(v->text_ok);
    free(v->slot);
    free(v->pair);
    free(v->rank);
    free(v);
}

static size_t pow2_above(size_t n)
{
    size_t c = 16;
    while (c < 2 * n)
        c *= 2;
    return c;
}

/* merge k's two halves as token ids (*a, *b); 0 when they are not tokens */
static int merge_ids(const VocabBpe *v, const unsigned char *m, size_t n, int *a, int *b, unsigned char *scratch)
{
    const unsigned char *blank = n > 1 ? memchr(m + 1, ' ', n - 1) : NULL; /* llama.cpp splits there too */
    size_t la, lb;
    if (!blank || byte_alphabet_read((const char *)m, (size_t)(blank - m), scratch, n, &la) < 0)
        return 0;
    *a = find(v, scratch, la);
    if (byte_alphabet_read((const char *)blank + 1, n - (size_t)(blank - m) - 1, scratch, n, &lb) < 0)
        return 0;
    *b = find(v, scratch, lb);
    return *a >= 0 && *b >= 0;
}

int vocab_bpe_new(VocabBpe **out, const VocabBpeSpec *s, Err *e)
{
    *out = NULL;
    VocabBpe *v = calloc(1, sizeof *v);
    if (!v)
        return err_set(e, ERR_RUNTIME, "out of memory");
    v->n = s->n, v->pre = s->pre, v->ignore_merges = s->ignore_merges;
    v->cap = pow2_above(s->n), v->pcap = pow2_above(s->n_merges);
    v->bytes = calloc(s->n ? s->n : 1, sizeof *v->bytes);
    v->len = calloc(s->n ? s->n : 1, sizeof *v->len);
    v->text_ok = calloc(s->n ? s->n : 1, 1);
    v->slot = malloc(v->cap * sizeof *v->slot);
    v->pair = calloc(v->pcap, sizeof *v->pair);
    v->rank = calloc(v->pcap, sizeof *v->rank);
    size_t longest = 1;
    for (size_t k = 0; k < s->n_merges; k++)
        longest = s->merge_len[k] > longest ? s->merge_len[k] : longest;
    unsigned char *scratch = malloc(longest);
    if (!v->bytes || !v->len || !v->text_ok || !v->slot || !v->pair || !v->rank || !scratch) {
        free(scratch);
        vocab_bpe_free(v);
        return err_set(e, ERR_RUNTIME, "out of memory for a vocabulary of %zu tokens", s->n);
    }
    memset(v->slot, 0xff, v->cap * sizeof *v->slot);
    for (size_t i = 0; i < s->n; i++) {
        const int control = s->type && s->type[i] == 3;
        if (!(v->bytes[i] = malloc(s->len[i] ? s->len[i] : 1))) {
            free(scratch);
            vocab_bpe_free(v);
            return err_set(e, ERR_RUNTIME, "out of memory");
        }
        if (!control && byte_alphabet_read((const char *)s->piece[i], s->len[i], v->bytes[i], s->len[i],
                                           &v->len[i]) == 0)
            v->text_ok[i] = 1;
        else if (!control)
            memcpy(v->bytes[i], s->piece[i], v->len[i] = s->len[i]);
        /* the first token of the same bytes keeps them, as llama.cpp's map */
        if (v->text_ok[i] && find(v, v->bytes[i], v->len[i]) < 0) {
            size_t h = hash_bytes(v->bytes[i], v->len[i]) & (v->cap - 1);
            while (v->slot[h] >= 0)
                h = (h + 1) & (v->cap - 1);
            v->slot[h] = (int)i;
        }
    }
    for (size_t k = 0; k < s->n_merges; k++) {
        int a, b;
        if (!merge_ids(v, s->merge[k], s->merge_len[k], &a, &b, scratch))
            continue; /* a merge of a token the vocabulary lacks never applies */
        const uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
        size_t h = hash_pair(key) & (v->pcap - 1);
        while (v->pair[h] && v->pair[h] != key)
            h = (h + 1) & (v->pcap - 1);
        if (!v->pair[h]) /* a pair listed twice keeps its first rank */
            v->pair[h] = key, v->rank[h] = (uint32_t)k;
    }
    free(scratch);
    *out = v;
    return 0;
}

size_t vocab_bpe_size(const VocabBpe *v)
{
    return v->n;
}

const unsigned char *vocab_bpe_piece(const VocabBpe *v, int id, size_t *len)
{
    if (id < 0 || (size_t)id >= v->n) {
        *len = 0;
        return NULL;
    }
    *len = v->len[id];
    return v->bytes[id];
}

typedef struct {
    size_t at, len; /* the part's bytes in the piece */
    int id;         /* its token, -1 when none */
} Part;

/* one piece p[0..n) into ids (appended at *count, room assured) */
static int encode_piece(const VocabBpe *v, const unsigned char *p, size_t n, int *ids, size_t *count, Part *part)
{
    int whole = v->ignore_merges ? find(v, p, n) : -1;
    if (whole >= 0) {
        ids[(*count)++] = whole;
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        part[k++] = (Part){ i, 1, find(v, p + i, 1) };
    while (k > 1) {
        size_t best = 0;
        uint32_t best_rank = UINT32_MAX;
        for (size_t i = 0; i + 1 < k; i++) {
            if (part[i].id < 0 || part[i + 1].id < 0)
                continue;
            uint32_t r = rank_of(v, part[i].id, part[i + 1].id);
            if (r < best_rank)
                best_rank = r, best = i;
        }
        if (best_rank == UINT32_MAX)
            break;
        part[best].len += part[best + 1].len;
        part[best].id = find(v, p + part[best].at, part[best].len);
        memmove(part + best + 1, part + best + 2, (k - best - 2) * sizeof *part);
        k--;
    }
    for (size_t i = 0; i < k; i++) {
        if (part[i].id >= 0) {
            ids[(*count)++] = part[i].id;
            continue;
        }
        for (size_t j = 0; j < part[i].len; j++) { /* no token: its bytes' */
            int b = find(v, p + part[i].at + j, 1);
            if (b < 0)
                return -1;
            ids[(*count)++] = b;
        }
    }
    return 0;
}

int vocab_bpe_encode(const VocabBpe *v, const unsigned char *text, size_t len, int **ids, size_t *n, Err *e)
{
    *n = 0;
    *ids = malloc((len ? len : 1) * sizeof **ids); /* never more tokens than bytes */
    Part *part = malloc((len ? len : 1) * sizeof *part);
    if (!*ids || !part) {
        free(part);
        free(*ids);
        *ids = NULL;
        return err_set(e, ERR_RUNTIME, "out of memory for %zu tokens", len);
    }
    for (size_t i = 0; i < len;) {
        const size_t plen = pretok_next_as(v->pre, text + i, len - i);
        if (encode_piece(v, text + i, plen, *ids, n, part) < 0) {
            free(part);
            free(*ids);
            *ids = NULL;
            return err_set(e, ERR_USAGE, "the vocabulary has no token for a byte of '%.*s'", (int)plen, text + i);
        }
        i += plen;
    }
    free(part);
    return 0;
}
