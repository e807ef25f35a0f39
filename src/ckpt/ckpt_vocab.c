/* ckpt_vocab.c: the tokenizer a checkpoint carries (ckpt.h): GGUF's
 * tokenizer.ggml.* arrays, llama2.c's tokenizer.bin. Only parsed and
 * checked here; model/ builds the tokenizer (text/ sits beside ckpt/). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"

/* A longer piece is refused as absurd (real ones are tens of bytes). */
#define MAX_PIECE 65535

void ckpt_vocab_free(CkptVocab *v)
{
    free(v->piece);
    free(v->len);
    free(v->score);
    free(v->type);
    free(v->merge);
    free(v->merge_len);
    mapfile_close(&v->bin);
    memset(v, 0, sizeof *v);
}

static int alloc_arrays(CkptVocab *v, size_t n, int with_types, Err *e)
{
    v->n = n;
    v->piece = calloc(n, sizeof *v->piece);
    v->len = calloc(n, sizeof *v->len);
    v->score = calloc(n, sizeof *v->score);
    v->type = with_types ? calloc(n, sizeof *v->type) : NULL;
    if (!v->piece || !v->len || !v->score || (with_types && !v->type))
        return err_set(e, ERR_RUNTIME, "out of memory for a tokenizer of %zu tokens", n);
    return 0;
}

/* --- GGUF ----------------------------------------------------------------- */

/* The array `key` of n elements of type want: 1 found, 0 missing, -1 (e
 * set) when it is another kind of value, of other elements or length. */
static int gguf_array(const GgufFile *g, const char *key, GgufValueType want, size_t n, const GgufKv **out, Err *e)
{
    GgufValueType elem;
    uint64_t count;
    int got = gguf_get_array(g, key, &elem, &count, e);
    if (got <= 0)
        return got;
    if (elem != want || count != n)
        return err_set(e, ERR_USAGE, "metadata '%s' is an array of %llu %s; the tokenizer needs %zu %s", key,
                       (unsigned long long)count, gguf_value_type_name(elem), n, gguf_value_type_name(want));
    *out = gguf_find_kv(g, key);
    return 1;
}

/* An optional token id: dflt when missing or (for a default) past n. */
static int gguf_id(const GgufFile *g, const char *key, int dflt, size_t n, int *out, Err *e)
{
    uint64_t v;
    int got = gguf_get_uint(g, key, &v, e);
    if (got < 0)
        return -1;
    if (!got) {
        *out = (size_t)dflt < n ? dflt : -1;
        return 0;
    }
    if (v >= n)
        return err_set(e, ERR_USAGE, "metadata '%s' is %llu, outside the %zu tokens", key, (unsigned long long)v, n);
    *out = (int)v;
    return 0;
}

static int gguf_bool(const GgufFile *g, const char *key, int dflt, int *out, Err *e)
{
    const GgufKv *kv = gguf_find_kv(g, key);
    *out = dflt;
    if (!kv)
        return 0;
    if (kv->type != GGUF_BOOL)
        return err_set(e, ERR_USAGE, "metadata '%s' is a %s, not a bool", key, gguf_value_type_name(kv->type));
    *out = kv->v.u != 0;
    return 0;
}

/* The n strings of an array, walked from its bytes (gguf_parse has checked
 * that each fits in the file) into str[] and len[]. */
static int gguf_strings(const GgufKv *kv, size_t n, const unsigned char **str, size_t *len, Err *e)
{
    const unsigned char *p = kv->arr_data;
    for (size_t i = 0; i < n; i++) {
        uint64_t l;
        memcpy(&l, p, 8);
        if (l > MAX_PIECE)
            return err_set(e, ERR_USAGE, "metadata '%.*s': string %zu is %llu bytes long", (int)kv->key.len,
                           kv->key.ptr, i, (unsigned long long)l);
        str[i] = p + 8;
        len[i] = (size_t)l;
        p += 8 + l;
    }
    return 0;
}

/* tokens, scores and types of a vocabulary of model `model`. */
static int gguf_arrays(const GgufFile *g, CkptVocab *v, size_t n, const char *model, Err *e)
{
    const GgufKv *tokens = NULL, *scores = NULL, *types = NULL;
    int got = gguf_array(g, "tokenizer.ggml.tokens", GGUF_STRING, n, &tokens, e);
    if (got == 0)
        return err_set(e, ERR_USAGE, "metadata 'tokenizer.ggml.tokens' is missing (tokenizer model '%s')", model);
    if (got < 0 || gguf_array(g, "tokenizer.ggml.scores", GGUF_F32, n, &scores, e) < 0 ||
        gguf_array(g, "tokenizer.ggml.token_type", GGUF_I32, n, &types, e) < 0 || alloc_arrays(v, n, 1, e) < 0 ||
        gguf_strings(tokens, n, v->piece, v->len, e) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (scores)
            memcpy(&v->score[i], scores->arr_data + 4 * i, 4);
        int32_t t = 1; /* no types: every token normal, as llama.cpp reads such a file */
        if (types)
            memcpy(&t, types->arr_data + 4 * i, 4);
        if (t < 1 || t > 6)
            return err_set(e, ERR_USAGE, "metadata 'tokenizer.ggml.token_type': token %zu has type %d (1 to 6)",
                           i, (int)t);
        v->type[i] = t;
    }
    return 0;
}

/* A "gpt2" vocabulary: tokens and types, then the merges, which it needs. */
static int gguf_merges(const GgufFile *g, CkptVocab *v, size_t n, Err *e)
{
    const char *key = "tokenizer.ggml.merges";
    v->kind = CKPT_VOCAB_BPE;
    GgufValueType elem;
    uint64_t count;
    int got = gguf_get_array(g, key, &elem, &count, e);
    /* an id outside the vocabulary means the file is not what it claims:
     * refused as for "llama"; add_bos_token (false by default, as GPT-2's)
     * is an export's fixed first token */
    if (got < 0 || gguf_arrays(g, v, n, "gpt2", e) < 0 ||
        gguf_id(g, "tokenizer.ggml.bos_token_id", -1, n, &v->bos, e) < 0 ||
        gguf_id(g, "tokenizer.ggml.eos_token_id", -1, n, &v->eos, e) < 0 ||
        gguf_id(g, "tokenizer.ggml.unknown_token_id", -1, n, &v->unk, e) < 0 ||
        gguf_bool(g, "tokenizer.ggml.add_bos_token", 0, &v->add_bos, e) < 0)
        return -1;
    if (got == 0)
        return err_set(e, ERR_USAGE, "metadata '%s' is missing (tokenizer model 'gpt2')", key);
    if (elem != GGUF_STRING)
        return err_set(e, ERR_USAGE, "metadata '%s' is an array of %s, not of strings", key,
                       gguf_value_type_name(elem));
    v->n_merges = (size_t)count; /* each string takes 8 bytes of the file at least: bounded */
    v->merge = calloc(v->n_merges ? v->n_merges : 1, sizeof *v->merge);
    v->merge_len = calloc(v->n_merges ? v->n_merges : 1, sizeof *v->merge_len);
    if (!v->merge || !v->merge_len)
        return err_set(e, ERR_RUNTIME, "out of memory for %zu merges", v->n_merges);
    return gguf_strings(gguf_find_kv(g, key), v->n_merges, v->merge, v->merge_len, e);
}

static int gguf_vocab(const Checkpoint *ck, CkptVocab *v, Err *e)
{
    const GgufFile *g = &ck->gguf;
    const size_t n = ck->shape.vocab;
    GgufStr model;
    int got = gguf_get_str(g, "tokenizer.ggml.model", &model, e);
    if (got < 0)
        return -1;
    if (!got) {
        snprintf(v->why, sizeof v->why, "this GGUF names no tokenizer (no tokenizer.ggml.model)");
        return 0;
    }
    gguf_str_print(model, v->model, sizeof v->model);
    if (gguf_str_eq(model, "gpt2"))
        return gguf_merges(g, v, n, e);
    if (!gguf_str_eq(model, "llama")) {
        v->kind = CKPT_VOCAB_OTHER;
        snprintf(v->why, sizeof v->why, "this file's tokenizer model '%s' is not read (kvscope reads 'llama' "
                 "and 'gpt2')", v->model);
        return 0;
    }
    v->kind = CKPT_VOCAB_SPM;
    return gguf_arrays(g, v, n, "llama", e) < 0 || gguf_id(g, "tokenizer.ggml.bos_token_id", 1, n, &v->bos, e) < 0 ||
                   gguf_id(g, "tokenizer.ggml.eos_token_id", 2, n, &v->eos, e) < 0 ||
                   gguf_id(g, "tokenizer.ggml.unknown_token_id", 0, n, &v->unk, e) < 0 ||
                   gguf_bool(g, "tokenizer.ggml.add_bos_token", 1, &v->add_bos, e) < 0 ||
                   gguf_bool(g, "tokenizer.ggml.add_space_prefix", 1, &v->add_space_prefix, e) < 0
               ? -1 : 0;
}

/* --- llama2.c --------------------------------------------------------------- */

static int read_i32(const MappedFile *m, size_t *at, int32_t *out)
{
    if (m->size - *at < 4)
        return -1;
    memcpy(out, m->data + *at, 4);
    *at += 4;
    return 0;
}

static int bin_parse(CkptVocab *v, size_t n, Err *e)
{
    const MappedFile *m = &v->bin;
    size_t at = 0;
    int32_t max_len;
    if (read_i32(m, &at, &max_len) < 0 || max_len <= 0 || max_len > MAX_PIECE)
        return err_set(e, ERR_USAGE, "max_token_length %d is not a length (1 to %d)", m->size < 4 ? -1 : max_len,
                       MAX_PIECE);
    if (alloc_arrays(v, n, 0, e) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int32_t len;
        if (read_i32(m, &at, (int32_t *)&v->score[i]) < 0 || read_i32(m, &at, &len) < 0)
            return err_set(e, ERR_USAGE, "truncated at token %zu of the %zu the checkpoint's vocab_size gives", i, n);
        if (len < 0 || len > max_len || (size_t)len > m->size - at)
            return err_set(e, ERR_USAGE, "token %zu is %d bytes long: %s", i, (int)len,
                           len < 0 || len > max_len ? "past max_token_length" : "past the end of the file");
        v->piece[i] = m->data + at;
        v->len[i] = (size_t)len;
        at += (size_t)len;
    }
    if (at != m->size)
        return err_set(e, ERR_USAGE, "%zu bytes after the %zu tokens the checkpoint's vocab_size gives", m->size - at,
                       n);
    return 0;
}

static int llama2c_vocab(const Checkpoint *ck, const char *path, CkptVocab *v, Err *e)
{
    char bin[4096];
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(bin, sizeof bin, "%.*stokenizer.bin", dir, path) >= (int)sizeof bin)
        return err_set(e, ERR_USAGE, "the path of tokenizer.bin is too long");
    struct stat st;
    if (stat(bin, &st) < 0 && errno == ENOENT) {
        snprintf(v->why, sizeof v->why, "no tokenizer.bin beside this llama2.c checkpoint");
        return 0;
    }
    v->kind = CKPT_VOCAB_SPM;
    v->bos = 1;
    v->eos = 2;
    v->unk = 0;
    v->add_bos = v->add_space_prefix = v->raw_spaces = 1;
    if (mapfile_open(&v->bin, bin, e) < 0)
        return -1; /* its message names the file */
    if (bin_parse(v, ck->shape.vocab, e) < 0)
        return err_wrap(e, "%s", bin);
    if (ck->shape.vocab < 3)
        v->bos = v->eos = v->unk = -1;
    return 0;
}

int ckpt_vocab(const Checkpoint *ck, const char *path, CkptVocab *v, Err *e)
{
    memset(v, 0, sizeof *v);
    v->bos = v->eos = v->unk = -1;
    if (ck->kind == CKPT_LLAMA2C)
        return llama2c_vocab(ck, path, v, e) < 0 ? (ckpt_vocab_free(v), -1) : 0;
    return gguf_vocab(ck, v, e) < 0 ? (ckpt_vocab_free(v), err_wrap(e, "%s", path)) : 0;
}
