/* gguf_write.c: write a GGUF v3 file (layout: gguf.h).
 *
 * The metadata is serialized into a growing buffer as it is added; tensor
 * infos are kept as a list, their offsets assigned in order, each rounded
 * up to the alignment. The data section has padding between tensors and
 * none after the last, so the file ends where the last tensor does (a file
 * cut anywhere is then detectably short). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/gguf.h"
#include "util/outfile.h"

typedef struct {
    char name[GGUF_MAX_NAME];
    Format fmt;
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS];
    size_t offset, bytes;
} WTensor;

struct GgufWriter {
    char *path, *tmp;
    size_t alignment;
    unsigned char *meta; /* [meta_len] serialized metadata entries */
    size_t meta_len, meta_cap, n_kv;
    WTensor *t;          /* [n_t] */
    size_t n_t, t_cap, data_len;
    OutFile out;         /* the file, written through PATH.tmp */
    FILE *f;             /* out.f while the data is written */
    size_t next;         /* the tensor whose bytes come next */
    size_t written;      /* bytes of the data section written so far */
    int failed;          /* an earlier call ran out of memory or met a bad argument */
    char why[160];
    int done;
};

static void put(GgufWriter *w, const void *p, size_t n)
{
    if (w->failed)
        return;
    if (w->meta_len + n > w->meta_cap) {
        size_t cap = w->meta_cap ? w->meta_cap : 256;
        while (cap < w->meta_len + n)
            cap *= 2;
        unsigned char *m = realloc(w->meta, cap);
        if (!m) {
            w->failed = 1;
            snprintf(w->why, sizeof w->why, "out of memory for metadata");
            return;
        }
        w->meta = m;
        w->meta_cap = cap;
    }
    memcpy(w->meta + w->meta_len, p, n);
    w->meta_len += n;
}

static void put_u32(GgufWriter *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(GgufWriter *w, uint64_t v) { put(w, &v, 8); }

/* A GGUF string: its length, then its bytes (any, a NUL too). */
static void put_bytes(GgufWriter *w, const char *s, size_t n)
{
    put_u64(w, n);
    put(w, s, n);
}

static void put_str(GgufWriter *w, const char *s)
{
    put_bytes(w, s, strlen(s));
}

static void key(GgufWriter *w, const char *k, GgufValueType type)
{
    put_str(w, k);
    put_u32(w, type);
    w->n_kv++;
}

GgufWriter *gguf_writer_new(const char *path, size_t alignment)
{
    GgufWriter *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    size_t n = strlen(path);
    w->path = strdup(path);
    w->tmp = malloc(n + 5);
    if (!w->path || !w->tmp) {
        gguf_writer_free(w);
        return NULL;
    }
    snprintf(w->tmp, n + 5, "%s.tmp", path);
    w->alignment = alignment ? alignment : GGUF_DEFAULT_ALIGNMENT;
    if (alignment && alignment != GGUF_DEFAULT_ALIGNMENT)
        gguf_writer_u32(w, "general.alignment", (uint32_t)alignment);
    return w;
}

void gguf_writer_str(GgufWriter *w, const char *k, const char *value)
{
    key(w, k, GGUF_STRING);
    put_str(w, value);
}

void gguf_writer_u32(GgufWriter *w, const char *k, uint32_t value)
{
    key(w, k, GGUF_U32);
    put_u32(w, value);
}

void gguf_writer_f32(GgufWriter *w, const char *k, float value)
{
    key(w, k, GGUF_F32);
    put(w, &value, 4);
}

/* An array's key: its name, then the element type and count. */
static void array_key(GgufWriter *w, const char *k, GgufValueType elem, size_t n)
{
    key(w, k, GGUF_ARRAY);
    put_u32(w, elem);
    put_u64(w, n);
}

void gguf_writer_str_array(GgufWriter *w, const char *k, const char *const *values, size_t n)
{
    array_key(w, k, GGUF_STRING, n);
    for (size_t i = 0; i < n; i++)
        put_str(w, values[i]);
}

void gguf_writer_bool(GgufWriter *w, const char *k, int value)
{
    unsigned char b = value != 0;
    key(w, k, GGUF_BOOL);
    put(w, &b, 1);
}

void gguf_writer_bytes_array(GgufWriter *w, const char *k, const char *const *values, const size_t *lens, size_t n)
{
    array_key(w, k, GGUF_STRING, n);
    for (size_t i = 0; i < n; i++)
        put_bytes(w, values[i], lens[i]);
}

void gguf_writer_i32_array(GgufWriter *w, const char *k, const int32_t *values, size_t n)
{
    array_key(w, k, GGUF_I32, n);
    put(w, values, n * sizeof *values);
}

void gguf_writer_f32_array(GgufWriter *w, const char *k, const float *values, size_t n)
{
    array_key(w, k, GGUF_F32, n);
    put(w, values, n * sizeof *values);
}

void gguf_writer_tensor(GgufWriter *w, const char *name, Format fmt, size_t n_dims, const uint64_t *ne)
{
    if (w->failed)
        return;
    if (strlen(name) >= GGUF_MAX_NAME || n_dims < 1 || n_dims > GGUF_MAX_DIMS ||
        (fmt != FMT_F32 && fmt != FMT_F16 && fmt != FMT_Q8_0 && fmt != FMT_Q4_0) ||
        ne[0] % format_block_values(fmt) != 0) {
        w->failed = 1;
        snprintf(w->why, sizeof w->why, "tensor '%.63s': cannot be written as %s with %zu dimensions", name,
                 format_name(fmt), n_dims);
        return;
    }
    if (w->n_t == w->t_cap) {
        size_t cap = w->t_cap ? 2 * w->t_cap : 64;
        WTensor *t = realloc(w->t, cap * sizeof *t);
        if (!t) {
            w->failed = 1;
            snprintf(w->why, sizeof w->why, "out of memory for tensor infos");
            return;
        }
        w->t = t;
        w->t_cap = cap;
    }
    WTensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->fmt = fmt;
    t->n_dims = (uint32_t)n_dims;
    size_t n = 1;
    for (size_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = d < n_dims ? ne[d] : 1;
        n *= (size_t)t->ne[d];
    }
    t->bytes = gguf_tensor_bytes(fmt, n);
    t->offset = (w->data_len + w->alignment - 1) / w->alignment * w->alignment;
    w->data_len = t->offset + t->bytes;
}

static uint32_t ggml_type_of(Format f)
{
    return f == FMT_F16 ? GGML_TYPE_F16 : f == FMT_Q8_0 ? GGML_TYPE_Q8_0 : f == FMT_Q4_0 ? GGML_TYPE_Q4_0
                                                                                          : GGML_TYPE_F32;
}

static int write_zeros(FILE *f, size_t n)
{
    static const unsigned char zeros[64];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        if (fwrite(zeros, 1, k, f) != k)
            return -1;
        n -= k;
    }
    return 0;
}

static int io_fail(GgufWriter *w, Err *e)
{
    return err_set(e, ERR_RUNTIME, "%s: write failed (disk full?)", w->tmp);
}

int gguf_writer_begin_data(GgufWriter *w, Err *e)
{
    if (w->failed)
        return err_set(e, ERR_RUNTIME, "%s: %s", w->path, w->why);
    if (w->f)
        return err_set(e, ERR_RUNTIME, "%s: the header is already written", w->path);
    /* the infos are serialized after the metadata, in the same buffer */
    for (size_t i = 0; i < w->n_t; i++) {
        const WTensor *t = &w->t[i];
        put_str(w, t->name);
        put_u32(w, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            put_u64(w, t->ne[d]);
        put_u32(w, ggml_type_of(t->fmt));
        put_u64(w, t->offset);
    }
    if (w->failed)
        return err_set(e, ERR_RUNTIME, "%s: %s", w->path, w->why);
    if (outfile_open(&w->out, w->path, e) < 0)
        return e && e->kind == ERR_USAGE ? -1 : err_set(e, ERR_RUNTIME, "%s: cannot create", w->tmp);
    w->f = w->out.f;
    uint32_t version = 3;
    uint64_t n_t = w->n_t, n_kv = w->n_kv;
    size_t head = 4 + 4 + 8 + 8 + w->meta_len;
    size_t pad = (w->alignment - head % w->alignment) % w->alignment;
    if (fwrite(GGUF_MAGIC, 1, 4, w->f) != 4 || fwrite(&version, 4, 1, w->f) != 1 ||
        fwrite(&n_t, 8, 1, w->f) != 1 || fwrite(&n_kv, 8, 1, w->f) != 1 ||
        fwrite(w->meta, 1, w->meta_len, w->f) != w->meta_len || (w->n_t && write_zeros(w->f, pad) < 0))
        return io_fail(w, e);
    return 0;
}

int gguf_writer_data(GgufWriter *w, const void *data, size_t bytes, Err *e)
{
    if (!w->f || w->next >= w->n_t)
        return err_set(e, ERR_RUNTIME, "%s: no tensor is waiting for its data", w->path);
    const WTensor *t = &w->t[w->next];
    if (bytes != t->bytes)
        return err_set(e, ERR_RUNTIME, "%s: tensor '%s' takes %zu bytes, not %zu", w->path, t->name, t->bytes,
                       bytes);
    if (write_zeros(w->f, t->offset - w->written) < 0 || fwrite(data, 1, bytes, w->f) != bytes)
        return io_fail(w, e);
    w->written = t->offset + bytes;
    w->next++;
    return 0;
}

int gguf_writer_finish(GgufWriter *w, Err *e)
{
    if (!w->f && gguf_writer_begin_data(w, e) < 0) /* a file of metadata only */
        return -1;
    if (w->next != w->n_t)
        return err_set(e, ERR_RUNTIME, "%s: %zu of %zu tensors written", w->path, w->next, w->n_t);
    w->f = NULL;
    if (outfile_commit(&w->out, e) < 0)
        return -1;
    w->done = 1;
    return 0;
}

void gguf_writer_free(GgufWriter *w)
{
    if (!w)
        return;
    outfile_abort(&w->out); /* nothing once committed */
    free(w->path);
    free(w->tmp);
    free(w->meta);
    free(w->t);
    free(w);
}
