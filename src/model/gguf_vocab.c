/* gguf_vocab.c: the tokenizer a GGUF export carries (gguf_vocab.h): a
 * byte-level one written as "gpt2" and read back, a checkpoint's
 * SentencePiece-style one written as "llama". */
#include "model/gguf_vocab.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/byte_alphabet.h"

/* piece of id in the byte alphabet, NUL-terminated, into a new string */
static char *written(const Tokenizer *tok, int id)
{
    size_t len;
    const unsigned char *p = tokenizer_piece(tok, id, &len);
    char *s = malloc(len * BYTE_ALPHABET_MAX_UTF8 + 1);
    if (s)
        s[byte_alphabet_write(p, len, s, len * BYTE_ALPHABET_MAX_UTF8)] = '\0';
    return s;
}

/* "A B": the two halves of a merge, written */
static char *merge_written(const Tokenizer *tok, const int pair[2])
{
    char *a = written(tok, pair[0]), *b = written(tok, pair[1]);
    size_t la = a ? strlen(a) : 0, lb = b ? strlen(b) : 0;
    char *s = a && b ? malloc(la + lb + 2) : NULL;
    if (s)
        snprintf(s, la + lb + 2, "%s %s", a, b);
    free(a);
    free(b);
    return s;
}

static void free_strings(char **s, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

int gguf_vocab_write(GgufWriter *w, const Tokenizer *tok, size_t vocab, int eos, Err *e)
{
    const int (*merges)[2];
    size_t n_merges;
    if (!tokenizer_byte_level(tok, &merges, &n_merges))
        return err_set(e, ERR_USAGE, "tokenizer '%s' is not byte-level; only those are written as 'gpt2'",
                       tokenizer_name(tok));
    const int bos = tokenizer_bos(tok); /* a fixed first token: one past the text's ids, written as eos */
    const size_t n_ids = tokenizer_vocab(tok) - (bos >= 0);
    if (bos >= 0 && bos != eos)
        return err_set(e, ERR_USAGE, "tokenizer '%s': its first token %d is not the end-of-text id %d",
                       tokenizer_name(tok), bos, eos);
    if (n_ids > vocab || vocab > INT32_MAX)
        return err_set(e, ERR_USAGE, "tokenizer '%s' makes %zu ids, more than the model's %zu", tokenizer_name(tok),
                       n_ids, vocab);
    if (eos >= 0 && ((size_t)eos < n_ids || (size_t)eos >= vocab))
        return err_set(e, ERR_USAGE, "end-of-text id %d: not past the tokenizer's %zu ids within %zu", eos, n_ids,
                       vocab);
    char **tokens = calloc(vocab, sizeof *tokens);
    char **merged = calloc(n_merges ? n_merges : 1, sizeof *merged);
    int32_t *types = malloc(vocab * sizeof *types);
    int ok = tokens && merged && types;
    for (size_t i = 0; ok && i < vocab; i++) {
        if (i < n_ids) {
            tokens[i] = written(tok, (int)i);
        } else if ((int)i == eos) {
            tokens[i] = strdup(END_OF_TEXT);
        } else if ((tokens[i] = malloc(32))) { /* a blank: never a piece, which the alphabet writes without one */
            snprintf(tokens[i], 32, "[unused %zu]", i);
        }
        types[i] = i < n_ids ? 1 : (int)i == eos ? 3 : 5; /* 3: control */
        ok = tokens[i] != NULL;
    }
    for (size_t m = 0; ok && m < n_merges; m++)
        ok = (merged[m] = merge_written(tok, merges[m])) != NULL;
    if (ok) {
        gguf_writer_str(w, "tokenizer.ggml.model", "gpt2");
        gguf_writer_str(w, "tokenizer.ggml.pre", "gpt-2");
        gguf_writer_str_array(w, "tokenizer.ggml.tokens", (const char *const *)tokens, vocab);
        gguf_writer_i32_array(w, "tokenizer.ggml.token_type", types, vocab);
        gguf_writer_str_array(w, "tokenizer.ggml.merges", (const char *const *)merged, n_merges);
        gguf_writer_bool(w, "tokenizer.ggml.add_bos_token", bos >= 0);
        if (eos >= 0) { /* as GPT-2's: one id begins and ends a text, added first when the model reads it so */
            gguf_writer_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)eos);
            gguf_writer_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
        }
    }
    free_strings(tokens, vocab);
    free_strings(merged, n_merges);
    free(types);
    return ok ? 0 : err_set(e, ERR_RUNTIME, "out of memory for a tokenizer of %zu tokens", vocab);
}

/* --- a SentencePiece-style vocabulary --------------------------------------- */

SpmVocab gguf_vocab_spm(const CkptVocab *v)
{
    return (SpmVocab){ .n = v->n, .piece = v->piece, .len = v->len, .score = v->score, .type = v->type,
                       .bos = v->bos, .eos = v->eos, .unk = v->unk, .add_bos = v->add_bos,
                       .add_space_prefix = v->add_space_prefix, .raw_spaces = v->raw_spaces };
}

#define SPACE_MARKER "\xe2\x96\x81" /* U+2581, the space of GGUF's SentencePiece vocabularies */

/* piece[0..len) as written, each ' ' as SPACE_MARKER when raw_spaces, into
 * a new buffer; its length in *out_len. */
static char *spm_written(const unsigned char *piece, size_t len, int raw_spaces, size_t *out_len)
{
    size_t spaces = 0;
    for (size_t i = 0; raw_spaces && i < len; i++)
        spaces += piece[i] == ' ';
    char *s = malloc(len + 2 * spaces + 1), *o = s;
    for (size_t i = 0; s && i < len; i++)
        if (raw_spaces && piece[i] == ' ')
            memcpy(o, SPACE_MARKER, 3), o += 3;
        else
            *o++ = (char)piece[i];
    *out_len = s ? (size_t)(o - s) : 0;
    return s;
}

int gguf_vocab_write_spm(GgufWriter *w, const CkptVocab *v, Err *e)
{
    const SpmVocab sv = gguf_vocab_spm(v);
    const size_t n = v->n ? v->n : 1;
    char **tokens = calloc(n, sizeof *tokens);
    size_t *lens = calloc(n, sizeof *lens); /* a piece may hold any byte: written with its length */
    int32_t *types = malloc(n * sizeof *types);
    float *scores = calloc(n, sizeof *scores);
    int ok = tokens && lens && types && scores;
    for (size_t i = 0; ok && i < v->n; i++) {
        ok = (tokens[i] = spm_written(v->piece[i], v->len[i], v->raw_spaces, &lens[i])) != NULL;
        types[i] = spm_type(&sv, i);
        scores[i] = v->score ? v->score[i] : 0.0f;
    }
    if (ok) {
        gguf_writer_str(w, "tokenizer.ggml.model", "llama");
        gguf_writer_bytes_array(w, "tokenizer.ggml.tokens", (const char *const *)tokens, lens, v->n);
        gguf_writer_f32_array(w, "tokenizer.ggml.scores", scores, v->n);
        gguf_writer_i32_array(w, "tokenizer.ggml.token_type", types, v->n);
        const struct { const char *key; int id; } ids[] = { { "tokenizer.ggml.bos_token_id", v->bos },
                                                            { "tokenizer.ggml.eos_token_id", v->eos },
                                                            { "tokenizer.ggml.unknown_token_id", v->unk } };
        for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++)
            if (ids[k].id >= 0)
                gguf_writer_u32(w, ids[k].key, (uint32_t)ids[k].id);
        gguf_writer_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
        gguf_writer_bool(w, "tokenizer.ggml.add_space_prefix", v->add_space_prefix);
    }
    free_strings(tokens, v->n);
    free(lens);
    free(types);
    free(scores);
    return ok ? 0 : err_set(e, ERR_RUNTIME, "out of memory for a tokenizer of %zu tokens", v->n);
}

/* --- reading one back --------------------------------------------------- */

typedef struct {
    const unsigned char *p; /* the token's bytes */
    size_t len;
    int id;
} Piece;

static int piece_cmp(const void *a, const void *b)
{
    const Piece *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* piece_cmp, then by id: the same bytes sort the same way every time */
static int piece_id_cmp(const void *a, const void *b)
{
    const Piece *x = a, *y = b;
    int c = piece_cmp(a, b);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* The id of the token whose bytes are text[0..n) written, among the sorted
 * index[0..count), or -1. */
static int find_piece(const Piece *index, size_t count, const unsigned char *text, size_t n, unsigned char *scratch)
{
    Piece key = { scratch, 0, -1 };
    if (byte_alphabet_read((const char *)text, n, scratch, n, &key.len) < 0)
        return -1;
    const Piece *hit = bsearch(&key, index, count, sizeof *index, piece_cmp);
    return hit ? hit->id : -1;
}

/* Check merge k ("A B" written) against the layout; its ids into pair. */
static int check_merge(const CkptVocab *v, const Piece *index, const Piece *by_id, size_t k, int pair[2],
                       unsigned char *scratch, char *why, size_t cap)
{
    const unsigned char *text = v->merge[k];
    const size_t n = v->merge_len[k], id = 256 + k;
    const unsigned char *blank = n > 1 ? memchr(text + 1, ' ', n - 1) : NULL; /* llama.cpp splits there too */
    if (!blank) {
        snprintf(why, cap, "merge %zu is not two tokens with a space between", k);
        return 0;
    }
    const size_t la = (size_t)(blank - text);
    pair[0] = find_piece(index, 256 + v->n_merges, text, la, scratch);
    pair[1] = find_piece(index, 256 + v->n_merges, blank + 1, n - la - 1, scratch);
    if (pair[0] < 0 || pair[1] < 0 || (size_t)pair[0] >= id || (size_t)pair[1] >= id ||
        by_id[pair[0]].len + by_id[pair[1]].len != by_id[id].len ||
        memcmp(by_id[pair[0]].p, by_id[id].p, by_id[pair[0]].len) != 0 ||
        memcmp(by_id[pair[1]].p, by_id[id].p + by_id[pair[0]].len, by_id[pair[1]].len) != 0) {
        snprintf(why, cap, "merge %zu does not join two earlier tokens into token %zu", k, id);
        return 0;
    }
    return 1;
}

/* Decode tokens [0, count) into bytes[] and by_id[]; 0 with why when one is
 * not in the byte alphabet or the first 256 are not the bytes in order. */
static int decode_tokens(const CkptVocab *v, size_t count, unsigned char *bytes, Piece *by_id, char *why, size_t cap)
{
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        by_id[i] = (Piece){ bytes + at, 0, (int)i };
        if (byte_alphabet_read((const char *)v->piece[i], v->len[i], bytes + at, v->len[i], &by_id[i].len) < 0) {
            snprintf(why, cap, "token %zu is not written in GPT-2's byte alphabet", i);
            return 0;
        }
        if (i < 256 && (by_id[i].len != 1 || bytes[at] != i)) {
            snprintf(why, cap, "token %zu is not the byte 0x%02zx (kvscope reads byte-ordered ones)", i, i);
            return 0;
        }
        at += by_id[i].len;
    }
    return 1;
}

int gguf_vocab_merges(const CkptVocab *v, int (**merges)[2], char *why, size_t cap, Err *e)
{
    *merges = NULL;
    const size_t count = 256 + v->n_merges; /* the ids the merges make */
    if (v->n < count || count > BPE_MAX_VOCAB) {
        snprintf(why, cap, "%zu merges: %s", v->n_merges,
                 v->n < count ? "more ids than the vocabulary" : "more ids than kvscope's BPE holds");
        return 0;
    }
    size_t total = 0, longest = 0;
    for (size_t i = 0; i < count; i++)
        total += v->len[i];
    for (size_t k = 0; k < v->n_merges; k++)
        longest = v->merge_len[k] > longest ? v->merge_len[k] : longest;
    unsigned char *bytes = malloc(total + 1), *scratch = malloc(longest + 1);
    Piece *by_id = malloc(count * sizeof *by_id), *index = malloc(count * sizeof *index);
    int (*pairs)[2] = malloc((v->n_merges ? v->n_merges : 1) * sizeof *pairs);
    int rc = bytes && scratch && by_id && index && pairs ? 1 : -1;
    if (rc > 0)
        rc = decode_tokens(v, count, bytes, by_id, why, cap);
    if (rc > 0) {
        memcpy(index, by_id, count * sizeof *index);
        qsort(index, count, sizeof *index, piece_id_cmp);
        for (size_t i = 1; rc > 0 && i < count; i++)
            if (piece_cmp(&index[i - 1], &index[i]) == 0) {
                snprintf(why, cap, "tokens %d and %d are the same bytes", index[i - 1].id, index[i].id);
                rc = 0;
            }
    }
    for (size_t k = 0; rc > 0 && k < v->n_merges; k++)
        rc = check_merge(v, index, by_id, k, pairs[k], scratch, why, cap);
    free(bytes);
    free(scratch);
    free(by_id);
    free(index);
    if (rc > 0)
        *merges = pairs;
    else
        free(pairs);
    return rc < 0 ? err_set(e, ERR_RUNTIME, "out of memory for a tokenizer of %zu tokens", v->n) : rc;
}
