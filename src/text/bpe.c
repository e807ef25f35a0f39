/* bpe.c: a byte-level BPE's tables, its file and its encoder (bpe.h). */
#include "text/bpe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/pretok.h"
#include "util/files.h"
#include "util/outfile.h"

#define MAGIC "kvscope-bpe 1"

void bpe_free(Bpe *b)
{
    for (size_t i = 0; b->piece && i < b->vocab; i++)
        free(b->piece[i]);
    free(b->piece);
    free(b->piece_len);
    free(b->merge);
    free(b->rank);
    memset(b, 0, sizeof *b);
}

int bpe_init(Bpe *b, const int (*merges)[2], size_t n, Err *e)
{
    memset(b, 0, sizeof *b);
    const size_t V = 256 + n;
    if (V > BPE_MAX_VOCAB)
        return err_set(e, ERR_USAGE, "BPE: %zu ids, at most %d", V, BPE_MAX_VOCAB);
    b->vocab = V;
    b->merge = malloc((n ? n : 1) * sizeof *b->merge);
    b->piece = calloc(V, sizeof *b->piece);
    b->piece_len = calloc(V, sizeof *b->piece_len);
    b->rank = calloc(V * V, sizeof *b->rank);
    if (!b->merge || !b->piece || !b->piece_len || !b->rank) {
        bpe_free(b);
        return err_set(e, ERR_RUNTIME, "out of memory for a BPE of %zu ids", V);
    }
    for (size_t i = 0; i < 256; i++) {
        if (!(b->piece[i] = malloc(1))) {
            bpe_free(b);
            return err_set(e, ERR_RUNTIME, "out of memory");
        }
        b->piece[i][0] = (unsigned char)i;
        b->piece_len[i] = 1;
    }
    for (size_t m = 0; m < n; m++) {
        const int x = merges[m][0], y = merges[m][1];
        const size_t id = 256 + m;
        if (x < 0 || y < 0 || (size_t)x >= id || (size_t)y >= id) {
            bpe_free(b);
            return err_set(e, ERR_USAGE, "BPE merge %zu joins %d and %d, not both earlier ids", m, x, y);
        }
        b->merge[m][0] = x, b->merge[m][1] = y;
        b->piece_len[id] = b->piece_len[x] + b->piece_len[y];
        if (!(b->piece[id] = malloc(b->piece_len[id]))) {
            bpe_free(b);
            return err_set(e, ERR_RUNTIME, "out of memory");
        }
        memcpy(b->piece[id], b->piece[x], b->piece_len[x]);
        memcpy(b->piece[id] + b->piece_len[x], b->piece[y], b->piece_len[y]);
        if (!b->rank[(size_t)x * V + (size_t)y]) /* a pair learnt twice keeps its first rank */
            b->rank[(size_t)x * V + (size_t)y] = (unsigned short)(m + 1);
    }
    return 0;
}

int bpe_load(Bpe *b, const char *path, Err *e)
{
    memset(b, 0, sizeof *b);
    FILE *f = files_fopen_input(path, e);
    if (!f)
        return e && e->kind == ERR_USAGE ? -1
                                         : err_set(e, ERR_RUNTIME, "cannot read merges file '%s': %s", path,
                                                   strerror(errno));
    char line[128];
    size_t vocab = 0, n = 0, line_no = 2;
    int (*merges)[2] = NULL;
    int rc = 0;
    if (!fgets(line, sizeof line, f) || strcmp(line, MAGIC "\n") != 0)
        rc = err_set(e, ERR_USAGE, "%s: line 1: not a kvscope merges file (it starts with '" MAGIC "')", path);
    else if (!fgets(line, sizeof line, f) || sscanf(line, "vocab %zu", &vocab) != 1 || vocab < 256 ||
             vocab > BPE_MAX_VOCAB)
        rc = err_set(e, ERR_USAGE, "%s: line 2: 'vocab N' with N from 256 to %d expected", path, BPE_MAX_VOCAB);
    else if (!(merges = malloc((vocab - 256 + 1) * sizeof *merges)))
        rc = err_set(e, ERR_RUNTIME, "out of memory");
    while (rc == 0 && n < vocab - 256) {
        line_no++;
        char extra;
        if (!fgets(line, sizeof line, f)) {
            rc = err_set(e, ERR_USAGE, "%s: line %zu: the file ends after %zu of %zu merges (truncated?)", path,
                         line_no, n, vocab - 256);
            break;
        }
        if (sscanf(line, "%d %d %c", &merges[n][0], &merges[n][1], &extra) != 2)
            rc = err_set(e, ERR_USAGE, "%s: line %zu: 'A B' (two ids) expected", path, line_no);
        n++;
    }
    if (rc == 0 && fgets(line, sizeof line, f))
        rc = err_set(e, ERR_USAGE, "%s: line %zu: more merges than vocab %zu says", path, line_no + 1, vocab);
    fclose(f);
    if (rc == 0 && bpe_init(b, merges, n, e) < 0)
        rc = err_wrap(e, "%s", path);
    free(merges);
    return rc;
}

int bpe_save(const Bpe *b, const char *path, Err *e)
{
    OutFile o;
    if (outfile_open(&o, path, e) < 0)
        return -1;
    fprintf(o.f, MAGIC "\nvocab %zu\n", b->vocab);
    for (size_t m = 0; m + 256 < b->vocab; m++)
        fprintf(o.f, "%d %d\n", b->merge[m][0], b->merge[m][1]);
    return outfile_commit(&o, e);
}

/* One piece's ids, merged in place: the adjacent pair of lowest rank
 * first, until no pair has a merge. Returns the count left. */
static size_t merge_piece(const Bpe *b, int *ids, size_t n)
{
    const size_t V = b->vocab;
    while (n > 1) {
        size_t best = 0;
        unsigned best_rank = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            unsigned r = b->rank[(size_t)ids[i] * V + (size_t)ids[i + 1]];
            if (r && (!best_rank || r < best_rank))
                best_rank = r, best = i;
        }
        if (!best_rank)
            break;
        ids[best] = 256 + (int)best_rank - 1;
        memmove(ids + best + 1, ids + best + 2, (n - best - 2) * sizeof *ids);
        n--;
    }
    return n;
}

size_t bpe_encode(const Bpe *b, const unsigned char *text, size_t len, int *ids, size_t cap)
{
    size_t total = 0;
    int buf[256];
    for (size_t i = 0; i < len;) {
        size_t plen = pretok_next(text + i, len - i);
        for (size_t off = 0; off < plen; off += sizeof buf / sizeof buf[0]) {
            /* a piece is merged 256 bytes at a time: longer runs (rare) split there */
            size_t n = plen - off < sizeof buf / sizeof buf[0] ? plen - off : sizeof buf / sizeof buf[0];
            for (size_t k = 0; k < n; k++)
                buf[k] = text[i + off + k];
            n = merge_piece(b, buf, n);
            for (size_t k = 0; k < n; k++, total++)
                if (total < cap)
                    ids[total] = buf[k];
        }
        i += plen;
    }
    return total;
}
