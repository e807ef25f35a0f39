/* kvw.c: kvscope's weights files (kvw.h). */
#include "ckpt/kvw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/codec.h"
#include "util/files.h"
#include "util/outfile.h"

#define MAGIC "KVSCOPEW"
#define VERSION 1u
#define ALIGN 64
#define ENTRY_BYTES (48 + 4 + 4 + 4 + 8 + 8)
#define HEADER_BYTES (8 + 4 + 4 + 8 * 4 + 2 * 8)
#define MAX_TENSORS 4096

static size_t tensor_bytes(const KvwTensor *t)
{
    size_t n = (size_t)t->rows * t->cols;
    return t->dtype == KVW_F16 ? 2 * n : t->dtype == KVW_F32 ? 4 * n : n;
}

static int put(FILE *f, const void *p, size_t n)
{
    return fwrite(p, 1, n, f) == n ? 0 : -1;
}

static int write_all(FILE *f, const KvwShape *s, const KvwTensor *t, size_t n)
{
    uint32_t ver = VERSION, count = (uint32_t)n;
    const uint32_t dims[8] = { s->d_model, s->n_layers, s->n_heads, s->n_kv_heads,
                               s->head_dim, s->ffn_dim, s->vocab, s->max_seq_len };
    if (put(f, MAGIC, 8) || put(f, &ver, 4) || put(f, &count, 4) || put(f, dims, sizeof dims) ||
        put(f, &s->rope_theta, 8) || put(f, &s->norm_eps, 8))
        return -1;
    uint64_t off = HEADER_BYTES + (uint64_t)n * ENTRY_BYTES;
    for (size_t i = 0; i < n; i++) {
        off = (off + ALIGN - 1) / ALIGN * ALIGN;
        uint64_t bytes = tensor_bytes(&t[i]);
        char name[48] = { 0 };
        strncpy(name, t[i].name, sizeof name - 1);
        if (put(f, name, 48) || put(f, &t[i].dtype, 4) || put(f, &t[i].rows, 4) || put(f, &t[i].cols, 4) ||
            put(f, &off, 8) || put(f, &bytes, 8))
            return -1;
        off += bytes;
    }
    for (size_t i = 0; i < n; i++) {
        static const char zeros[ALIGN] = { 0 };
        long at = ftell(f);
        if (at < 0 || put(f, zeros, (size_t)((ALIGN - at % ALIGN) % ALIGN)))
            return -1;
        const size_t count_i = (size_t)t[i].rows * t[i].cols;
        if (t[i].dtype != KVW_F16) {
            if (put(f, t[i].data, tensor_bytes(&t[i])))
                return -1;
            continue;
        }
        const float *x = t[i].data;
        for (size_t k = 0; k < count_i; k++) {
            unsigned short h = fp16_from_f32(x[k]);
            if (put(f, &h, 2))
                return -1;
        }
    }
    return 0;
}

int kvw_write(const char *path, const KvwShape *shape, const KvwTensor *t, size_t n, Err *e)
{
    OutFile o;
    if (outfile_open(&o, path, e) < 0)
        return -1;
    if (write_all(o.f, shape, t, n) != 0) {
        outfile_abort(&o);
        return err_set(e, ERR_RUNTIME, "cannot write '%s' (disk full?)", path);
    }
    return outfile_commit(&o, e);
}

static int get(FILE *f, void *p, size_t n)
{
    return fread(p, 1, n, f) == n ? 0 : -1;
}

/* The first shape field that differs, or NULL. max_seq_len is recorded (the
 * context it was trained at) but not compared: a model may run longer. */
static const char *shape_differs(const KvwShape *a, const KvwShape *b, uint64_t *va, uint64_t *vb)
{
    static const char *const names[] = { "d_model", "n_layers", "n_heads", "n_kv_heads",
                                         "head_dim", "ffn_dim", "vocab", "max_seq_len" };
    const uint32_t x[8] = { a->d_model, a->n_layers, a->n_heads, a->n_kv_heads,
                            a->head_dim, a->ffn_dim, a->vocab, a->max_seq_len };
    const uint32_t y[8] = { b->d_model, b->n_layers, b->n_heads, b->n_kv_heads,
                            b->head_dim, b->ffn_dim, b->vocab, b->max_seq_len };
    for (int i = 0; i < 7; i++)
        if (x[i] != y[i])
            return *va = x[i], *vb = y[i], names[i];
    return NULL;
}

typedef struct {
    char name[49];
    uint32_t dtype, rows, cols;
    uint64_t off, bytes;
} Entry;

static int read_tensor(FILE *f, const char *path, const Entry *en, KvwTensor *t, uint64_t file_bytes, Err *e)
{
    if (en->off > file_bytes || en->bytes > file_bytes - en->off)
        return err_set(e, ERR_USAGE, "'%s': tensor '%s' lies past the end of the file (truncated?)", path, en->name);
    const size_t n = (size_t)en->rows * en->cols;
    const size_t want = en->dtype == KVW_F16 ? 2 * n : en->dtype == KVW_F32 ? 4 * n : n;
    if (en->dtype > KVW_BYTES || en->bytes != want || (t->dtype == KVW_BYTES) != (en->dtype == KVW_BYTES))
        return err_set(e, ERR_USAGE, "'%s': tensor '%s' has a bad type or size", path, en->name);
    if (fseek(f, (long)en->off, SEEK_SET) != 0)
        return err_set(e, ERR_USAGE, "'%s': cannot seek to tensor '%s'", path, en->name);
    if (en->dtype != KVW_F16)
        return get(f, t->data, want) ? err_set(e, ERR_USAGE, "'%s': tensor '%s' is cut short", path, en->name) : 0;
    float *x = t->data;
    for (size_t k = 0; k < n; k++) {
        unsigned short h;
        if (get(f, &h, 2))
            return err_set(e, ERR_USAGE, "'%s': tensor '%s' is cut short", path, en->name);
        x[k] = fp16_to_f32(h);
    }
    return 0;
}

/* The magic, the version and the shape of an open file, at its start;
 * *count its tensors. */
static int read_header(FILE *f, const char *path, KvwShape *got, uint32_t *count, Err *e)
{
    char magic[8];
    uint32_t ver = 0, dims[8];
    if (get(f, magic, 8) || memcmp(magic, MAGIC, 8) != 0)
        return err_set(e, ERR_USAGE, "'%s' is not a kvscope weights file (no KVSCOPEW magic)", path);
    if (get(f, &ver, 4) || get(f, count, 4) || ver != VERSION)
        return err_set(e, ERR_USAGE, "'%s': version %u, kvscope reads version %u", path, ver, VERSION);
    if (*count > MAX_TENSORS || get(f, dims, sizeof dims) || get(f, &got->rope_theta, 8) ||
        get(f, &got->norm_eps, 8))
        return err_set(e, ERR_USAGE, "'%s': its header is cut short or holds %u tensors", path, *count);
    *got = (KvwShape){ dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], dims[7],
                       got->rope_theta, got->norm_eps };
    return 0;
}

int kvw_probe(const char *path)
{
    FILE *f = files_fopen_input(path, NULL);
    char magic[8];
    int is = f && !get(f, magic, 8) && memcmp(magic, MAGIC, 8) == 0;
    if (f)
        fclose(f);
    return is;
}

/* An input by files_fopen_input's rule, in this file's words when it is missing. */
static FILE *open_input(const char *path, Err *e)
{
    FILE *f = files_fopen_input(path, e);
    if (!f && (!e || e->kind == ERR_RUNTIME))
        err_set(e, ERR_RUNTIME, "cannot read weights file '%s': %s", path, strerror(errno));
    return f;
}

int kvw_read_shape(const char *path, KvwShape *out, Err *e)
{
    FILE *f = open_input(path, e);
    if (!f)
        return -1;
    uint32_t count;
    int rc = read_header(f, path, out, &count, e);
    fclose(f);
    return rc;
}

int kvw_read(const char *path, const KvwShape *want, KvwTensor *t, size_t n, int optional, Err *e)
{
    FILE *f = open_input(path, e);
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    const uint64_t file_bytes = (uint64_t)ftell(f);
    rewind(f);
    uint32_t count;
    KvwShape got;
    Entry *table = NULL;
    int rc = read_header(f, path, &got, &count, e);
    if (rc == 0) {
        uint64_t a, b;
        const char *field = shape_differs(&got, want, &a, &b);
        if (field)
            rc = err_set(e, ERR_USAGE, "'%s' holds a model with %s = %llu; the config says %llu", path, field,
                         (unsigned long long)a, (unsigned long long)b);
    }
    if (rc == 0 && !(table = calloc(count ? count : 1, sizeof *table)))
        rc = err_set(e, ERR_RUNTIME, "out of memory");
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        Entry *en = &table[i];
        if (get(f, en->name, 48) || get(f, &en->dtype, 4) || get(f, &en->rows, 4) || get(f, &en->cols, 4) ||
            get(f, &en->off, 8) || get(f, &en->bytes, 8))
            rc = err_set(e, ERR_USAGE, "'%s': its tensor table is cut short", path);
        en->name[48] = '\0';
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const Entry *en = NULL;
        for (uint32_t j = 0; j < count && !en; j++)
            if (strcmp(table[j].name, t[i].name) == 0)
                en = &table[j];
        if (!en && optional)
            t[i].rows = 0;
        else if (!en)
            rc = err_set(e, ERR_USAGE, "'%s' has no tensor '%s'", path, t[i].name);
        else if (en->rows != t[i].rows || en->cols != t[i].cols)
            rc = err_set(e, ERR_USAGE, "'%s': tensor '%s' is %u x %u; the config wants %u x %u", path, t[i].name,
                         en->rows, en->cols, t[i].rows, t[i].cols);
        else
            rc = read_tensor(f, path, en, &t[i], file_bytes, e);
    }
    free(table);
    fclose(f);
    return rc;
}
