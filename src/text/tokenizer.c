/* tokenizer.c: the tokenizer interface (tokenizer.h): "bytes", a BPE
 * read from its merges file (bpe.h), or a checkpoint's vocabulary (spm.h). */
#include "text/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bpe.h"
#include "text/vocab_bpe.h"
#include "util/files.h"

struct Tokenizer {
    char name[64];
    size_t vocab;
    int is_bpe;
    Bpe bpe;                 /* is_bpe */
    Spm *spm;                /* a checkpoint's vocabulary, or NULL */
    VocabBpe *vb;            /* a checkpoint's "gpt2" vocabulary in another layout than kvscope's, or NULL */
    unsigned char byte[256]; /* bytes: piece of id i is byte[i] */
    int has_bos, bos;        /* tokenizer_set_bos: every encode starts with bos */
};

/* NAME -> data/tokenizer/NAME.txt, or a path to a merges file as it is. */
static int merges_path(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/')) {
        snprintf(out, cap, "%s", name);
        return 0;
    }
    char rel[128];
    snprintf(rel, sizeof rel, "tokenizer/%s.txt", name);
    return files_find("KVSCOPE_DATA", "data", rel, out, cap);
}

int tokenizer_open(Tokenizer **out, const char *name, Err *e)
{
    *out = NULL;
    Tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_RUNTIME, "out of memory");
    snprintf(t->name, sizeof t->name, "%s", name);
    if (strcmp(name, "bytes") == 0) {
        t->vocab = 256;
        for (size_t i = 0; i < 256; i++)
            t->byte[i] = (unsigned char)i;
        *out = t;
        return 0;
    }
    char path[4096];
    if (merges_path(name, path, sizeof path) < 0) {
        free(t);
        return err_set(e, ERR_USAGE, "tokenizer '%s' is not one kvscope knows (bytes, or a merges file in "
                       "data/tokenizer/)", name);
    }
    if (bpe_load(&t->bpe, path, e) < 0) {
        free(t);
        return -1;
    }
    t->is_bpe = 1;
    t->vocab = t->bpe.vocab;
    *out = t;
    return 0;
}

int tokenizer_from_bpe(Tokenizer **out, const char *name, Bpe *b, Err *e)
{
    Tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_RUNTIME, "out of memory");
    snprintf(t->name, sizeof t->name, "%s", name);
    t->is_bpe = 1;
    t->bpe = *b;
    memset(b, 0, sizeof *b);
    t->vocab = t->bpe.vocab;
    *out = t;
    return 0;
}

int tokenizer_from_vocab(Tokenizer **out, const char *name, const SpmVocab *v, Err *e)
{
    *out = NULL;
    Tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_RUNTIME, "out of memory");
    if (spm_new(&t->spm, v, e) < 0) {
        free(t);
        return -1;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    t->vocab = spm_vocab(t->spm);
    *out = t;
    return 0;
}

int tokenizer_from_vocab_bpe(Tokenizer **out, const char *name, const VocabBpeSpec *s, Err *e)
{
    *out = NULL;
    Tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_RUNTIME, "out of memory");
    if (vocab_bpe_new(&t->vb, s, e) < 0) {
        free(t);
        return -1;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    t->vocab = vocab_bpe_size(t->vb);
    *out = t;
    return 0;
}

void tokenizer_free(Tokenizer *t)
{
    if (!t)
        return;
    vocab_bpe_free(t->vb);
    if (t->is_bpe)
        bpe_free(&t->bpe);
    spm_free(t->spm);
    free(t);
}

const char *tokenizer_name(const Tokenizer *t)
{
    return t->name;
}

size_t tokenizer_vocab(const Tokenizer *t)
{
    return t->vocab;
}

int tokenizer_byte_level(const Tokenizer *t, const int (**merges)[2], size_t *n)
{
    *merges = t->is_bpe ? (const int (*)[2])t->bpe.merge : NULL;
    *n = t->is_bpe ? t->bpe.vocab - 256 : 0;
    return !t->spm && !t->vb;
}

int tokenizer_set_bos(Tokenizer *t, int id, Err *e)
{
    if (id < 0 || (size_t)id > t->vocab)
        return err_set(e, ERR_USAGE, "tokenizer '%s': a first token %d is neither one of its ids 0..%zu nor the "
                       "next one", t->name, id, t->vocab - 1);
    if ((size_t)id < t->vocab && !t->spm && !t->vb) /* a byte-level id stands for text */
        return err_set(e, ERR_USAGE, "tokenizer '%s': id %d stands for text; a first token must be a control "
                       "token (id %zu, one past its own)", t->name, id, t->vocab);
    t->has_bos = 1;
    t->bos = id;
    if ((size_t)id == t->vocab)
        t->vocab++;
    return 0;
}

int tokenizer_bos(const Tokenizer *t)
{
    return t->has_bos ? t->bos : -1;
}

/* The tokens of text[0..len) as the tokenizer's kind makes them. */
static int encode_text(const Tokenizer *t, const char *text, size_t len, int **ids, size_t *n, Err *e)
{
    if (t->spm)
        return spm_encode(t->spm, (const unsigned char *)text, len, ids, n, e);
    if (t->vb)
        return vocab_bpe_encode(t->vb, (const unsigned char *)text, len, ids, n, e);
    *ids = malloc((len ? len : 1) * sizeof **ids); /* never more tokens than bytes */
    if (!*ids)
        return err_set(e, ERR_RUNTIME, "out of memory for %zu tokens", len);
    if (t->is_bpe) {
        *n = bpe_encode(&t->bpe, (const unsigned char *)text, len, *ids, len);
        return 0;
    }
    for (size_t i = 0; i < len; i++)
        (*ids)[i] = (unsigned char)text[i];
    *n = len;
    return 0;
}

int tokenizer_encode(const Tokenizer *t, const char *text, size_t len, int **ids, size_t *n, Err *e)
{
    if (encode_text(t, text, len, ids, n, e) < 0)
        return -1;
    if (!t->has_bos)
        return 0;
    int *grown = realloc(*ids, (*n + 1) * sizeof **ids);
    if (!grown) {
        free(*ids);
        *ids = NULL;
        return err_set(e, ERR_RUNTIME, "out of memory for %zu tokens", *n + 1);
    }
    memmove(grown + 1, grown, *n * sizeof *grown);
    grown[0] = t->bos;
    *ids = grown;
    (*n)++;
    return 0;
}

int tokenizer_encode_continuation(const Tokenizer *t, const char *text, size_t len, int **ids, size_t *n, Err *e)
{
    return encode_text(t, text, len, ids, n, e);
}

const unsigned char *tokenizer_piece(const Tokenizer *t, int id, size_t *len)
{
    if (id < 0 || (size_t)id >= t->vocab) {
        *len = 0;
        return NULL;
    }
    if (t->has_bos && id == t->bos) { /* a control token: no bytes */
        *len = 0;
        return (const unsigned char *)"";
    }
    if (t->spm)
        return spm_piece(t->spm, id, len);
    if (t->vb)
        return vocab_bpe_piece(t->vb, id, len);
    if (t->is_bpe) {
        *len = t->bpe.piece_len[id];
        return t->bpe.piece[id];
    }
    *len = 1;
    return &t->byte[id];
}

/* Length of the valid UTF-8 sequence of 2 to 4 bytes at p (n left), 0 if
 * there is none (a lone or bad byte: shown as \xHH). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t want = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : 0;
    if (p[0] >= 0xf8 || want == 0 || want > n)
        return 0;
    for (size_t i = 1; i < want; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return want;
}

char *tokenizer_show(const unsigned char *piece, size_t len, int show_space, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < len && o + 1 < cap;) {
        char tmp[8];
        size_t u = piece[i] >= 0x80 ? utf8_len(piece + i, len - i) : 0;
        const char *add = tmp;
        size_t add_len;
        if (u) {
            add = (const char *)piece + i, add_len = u;
        } else if (piece[i] == ' ' && show_space) {
            add = "\xe2\x90\xa3", add_len = 3; /* U+2423 OPEN BOX */
        } else if (piece[i] == '\n' || piece[i] == '\t') {
            add = piece[i] == '\n' ? "\\n" : "\\t", add_len = 2;
        } else if (piece[i] >= 0x20 && piece[i] < 0x7f) {
            tmp[0] = (char)piece[i], add_len = 1;
        } else {
            add_len = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", piece[i]);
        }
        if (o + add_len + 1 > cap)
            break;
        memcpy(buf + o, add, add_len);
        o += add_len;
        i += u ? u : 1;
    }
    buf[o] = '\0';
    return buf;
}
