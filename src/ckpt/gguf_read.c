/* gguf_read.c: parse a GGUF file that is already in memory (mapped).
 *
 * One cursor walks the bytes; every read asks need() first, which compares
 * with the bytes left, so no read leaves the file. Counts are checked
 * against the smallest size their items can take before anything is
 * allocated: n_kv metadata entries need at least 13 bytes each, n_tensors
 * infos at least 32 each, n array elements their element size each. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/gguf.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf_read.c reads little-endian fields with memcpy: a little-endian host is assumed"
#endif

#define MIN_KV_BYTES 13     /* key length (8) + type (4) + the smallest value (1) */
#define MIN_INFO_BYTES 32   /* name length (8), n_dims (4), one dim (8), type (4), offset (8) */
#define MIN_ARRAY_BYTES 12  /* element type (4) + count (8) */

typedef struct {
    const unsigned char *p; /* [size] */
    size_t size, pos;
    Err *e;
} Cur;

static int need(Cur *c, size_t n, const char *what)
{
    if (n > c->size - c->pos)
        return err_set(c->e, ERR_USAGE, "truncated: %s at byte %zu needs %zu bytes, the file has %zu", what,
                       c->pos, n, c->size);
    return 0;
}

static int rd_u32(Cur *c, uint32_t *out, const char *what)
{
    if (need(c, 4, what) < 0)
        return -1;
    memcpy(out, c->p + c->pos, 4);
    c->pos += 4;
    return 0;
}

static int rd_u64(Cur *c, uint64_t *out, const char *what)
{
    if (need(c, 8, what) < 0)
        return -1;
    memcpy(out, c->p + c->pos, 8);
    c->pos += 8;
    return 0;
}

static int rd_str(Cur *c, GgufStr *s, const char *what)
{
    uint64_t len;
    if (rd_u64(c, &len, what) < 0)
        return -1;
    if (len > c->size - c->pos)
        return err_set(c->e, ERR_USAGE, "%s at byte %zu: length %llu runs past the end of the file (%zu bytes)",
                       what, c->pos - 8, (unsigned long long)len, c->size);
    s->ptr = (const char *)c->p + c->pos;
    s->len = (size_t)len;
    c->pos += (size_t)len;
    return 0;
}

const char *gguf_value_type_name(uint32_t type)
{
    static const char *const names[GGUF_TYPE_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    return type < GGUF_TYPE_COUNT ? names[type] : "unknown";
}

/* Bytes of a fixed-size value type; 0 for string, array and unknown types. */
static size_t fixed_size(uint32_t type)
{
    switch (type) {
    case GGUF_U8: case GGUF_I8: case GGUF_BOOL: return 1;
    case GGUF_U16: case GGUF_I16: return 2;
    case GGUF_U32: case GGUF_I32: case GGUF_F32: return 4;
    case GGUF_U64: case GGUF_I64: case GGUF_F64: return 8;
    default: return 0;
    }
}

/* Walk one array's elements (the cursor after its count), checking them. */
static int walk_array(Cur *c, uint32_t elem, uint64_t n, int depth, const char *key)
{
    if (elem >= GGUF_TYPE_COUNT)
        return err_set(c->e, ERR_USAGE, "metadata '%s': array of unknown value type %u", key, elem);
    size_t left = c->size - c->pos, each = fixed_size(elem);
    size_t least = each ? each : elem == GGUF_STRING ? 8 : MIN_ARRAY_BYTES;
    if (n > left / least)
        return err_set(c->e, ERR_USAGE, "metadata '%s': %llu array elements of %s cannot fit in the %zu bytes left",
                       key, (unsigned long long)n, gguf_value_type_name(elem), left);
    if (each) {
        c->pos += (size_t)n * each;
        return 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (elem == GGUF_STRING) {
            GgufStr s;
            if (rd_str(c, &s, "an array's string") < 0)
                return err_wrap(c->e, "metadata '%s' element %llu", key, (unsigned long long)i);
            continue;
        }
        if (depth + 1 >= GGUF_MAX_ARRAY_DEPTH)
            return err_set(c->e, ERR_USAGE, "metadata '%s': arrays nested more than %d deep", key,
                           GGUF_MAX_ARRAY_DEPTH);
        uint32_t sub;
        uint64_t sub_n;
        if (rd_u32(c, &sub, "a nested array's type") < 0 || rd_u64(c, &sub_n, "a nested array's count") < 0 ||
            walk_array(c, sub, sub_n, depth + 1, key) < 0)
            return -1;
    }
    return 0;
}

/* One metadata value of type t into kv (the cursor at the value). */
static int read_value(Cur *c, GgufKv *kv, const char *key)
{
    const unsigned char *at = c->p + c->pos;
    size_t each = fixed_size(kv->type);
    if (each) {
        if (need(c, each, "a metadata value") < 0)
            return err_wrap(c->e, "metadata '%s'", key);
        uint64_t raw = 0;
        memcpy(&raw, at, each);
        c->pos += each;
        switch (kv->type) {
        case GGUF_I8: kv->v.i = (int8_t)raw; break;
        case GGUF_I16: kv->v.i = (int16_t)raw; break;
        case GGUF_I32: kv->v.i = (int32_t)raw; break;
        case GGUF_I64: kv->v.i = (int64_t)raw; break;
        case GGUF_F32: { float f; memcpy(&f, at, 4); kv->v.f = f; break; }
        case GGUF_F64: { double d; memcpy(&d, at, 8); kv->v.f = d; break; }
        default: kv->v.u = raw; break;
        }
        return 0;
    }
    if (kv->type == GGUF_STRING)
        return rd_str(c, &kv->v.s, "a string value") < 0 ? err_wrap(c->e, "metadata '%s'", key) : 0;
    if (kv->type != GGUF_ARRAY)
        return err_set(c->e, ERR_USAGE, "metadata '%s': unknown value type %u", key, (unsigned)kv->type);
    uint32_t elem;
    if (rd_u32(c, &elem, "an array's element type") < 0 || rd_u64(c, &kv->arr_n, "an array's count") < 0)
        return err_wrap(c->e, "metadata '%s'", key);
    kv->arr_type = (GgufValueType)elem;
    kv->arr_data = c->p + c->pos;
    if (walk_array(c, elem, kv->arr_n, 0, key) < 0)
        return -1;
    kv->arr_bytes = (size_t)(c->p + c->pos - kv->arr_data);
    return 0;
}

int gguf_str_eq(GgufStr s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

const char *gguf_str_print(GgufStr s, char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < s.len && n + 1 < cap; i++) {
        if (n + 4 >= cap && i + 1 < s.len) { /* room left for "..." only */
            n += (size_t)snprintf(buf + n, cap - n, "...");
            break;
        }
        unsigned char ch = (unsigned char)s.ptr[i];
        buf[n++] = ch >= 32 && ch < 127 ? (char)ch : '?';
    }
    buf[n < cap ? n : cap - 1] = '\0';
    return buf;
}

const char *gguf_ggml_type_name(uint32_t type, char *buf, size_t cap)
{
    static const char *const names[] = {
        [0] = "F32",      [1] = "F16",      [2] = "Q4_0",     [3] = "Q4_1",    [6] = "Q5_0",
        [7] = "Q5_1",     [8] = "Q8_0",     [9] = "Q8_1",     [10] = "Q2_K",   [11] = "Q3_K",
        [12] = "Q4_K",    [13] = "Q5_K",    [14] = "Q6_K",    [15] = "Q8_K",   [16] = "IQ2_XXS",
        [17] = "IQ2_XS",  [18] = "IQ3_XXS", [19] = "IQ1_S",   [20] = "IQ4_NL", [21] = "IQ3_S",
        [22] = "IQ2_S",   [23] = "IQ4_XS",  [24] = "I8",      [25] = "I16",    [26] = "I32",
        [27] = "I64",     [28] = "F64",     [29] = "IQ1_M",   [30] = "BF16",   [34] = "TQ1_0",
        [35] = "TQ2_0",
    };
    if (type < sizeof names / sizeof names[0] && names[type])
        snprintf(buf, cap, "%s", names[type]);
    else
        snprintf(buf, cap, "type %u", type);
    return buf;
}

static int ggml_to_format(uint32_t type, Format *out)
{
    switch (type) {
    case GGML_TYPE_F32: *out = FMT_F32; return 0;
    case GGML_TYPE_F16: *out = FMT_F16; return 0;
    case GGML_TYPE_Q8_0: *out = FMT_Q8_0; return 0;
    case GGML_TYPE_Q4_0: *out = FMT_Q4_0; return 0;
    default: return -1;
    }
}

size_t gguf_tensor_bytes(Format fmt, size_t n_elems)
{
    size_t bv = format_block_values(fmt);
    return bv ? n_elems / bv * format_block_bytes(fmt) : 0;
}

static int read_info(Cur *c, size_t idx, GgufTensor *t)
{
    char what[64], name[GGUF_MAX_NAME + 8];
    snprintf(what, sizeof what, "tensor %zu's name", idx);
    if (rd_str(c, &t->name, what) < 0)
        return -1;
    gguf_str_print(t->name, name, sizeof name);
    if (t->name.len == 0 || t->name.len >= GGUF_MAX_NAME)
        return err_set(c->e, ERR_USAGE, "tensor %zu: a name of %zu bytes (1 to %d allowed)", idx, t->name.len,
                       GGUF_MAX_NAME - 1);
    if (rd_u32(c, &t->n_dims, "a tensor's dimension count") < 0)
        return err_wrap(c->e, "tensor '%s'", name);
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return err_set(c->e, ERR_USAGE, "tensor '%s': %u dimensions (1 to %d allowed)", name, t->n_dims,
                       GGUF_MAX_DIMS);
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims && rd_u64(c, &t->ne[d], "a tensor's dimension") < 0)
            return err_wrap(c->e, "tensor '%s'", name);
    }
    /* every supported type takes more than half a byte per value */
    size_t n = 1, limit = c->size <= SIZE_MAX / 2 ? 2 * c->size : SIZE_MAX;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        if (t->ne[d] == 0 || t->ne[d] > limit || n > limit / t->ne[d]) {
            char dims[96];
            size_t len = 0;
            for (uint32_t k = 0; k < t->n_dims; k++)
                len += (size_t)snprintf(dims + len, sizeof dims - len, "%s%llu", k ? " x " : "",
                                        (unsigned long long)t->ne[k]);
            return err_set(c->e, ERR_USAGE, "tensor '%s': dimensions %s %s", name, dims,
                           t->ne[d] == 0 ? "hold no values" : "cannot fit in the file");
        }
        n *= (size_t)t->ne[d];
    }
    t->n_elems = n;
    if (rd_u32(c, &t->ggml_type, "a tensor's type") < 0 || rd_u64(c, &t->offset, "a tensor's offset") < 0)
        return err_wrap(c->e, "tensor '%s'", name);
    if (ggml_to_format(t->ggml_type, &t->fmt) < 0) {
        char tn[16];
        return err_set(c->e, ERR_USAGE, "tensor '%s' has type %s; kvscope reads F32, F16, Q8_0 and Q4_0", name,
                       gguf_ggml_type_name(t->ggml_type, tn, sizeof tn));
    }
    size_t bv = format_block_values(t->fmt);
    if (t->ne[0] % bv != 0)
        return err_set(c->e, ERR_USAGE, "tensor '%s': rows of %llu values are not whole %s blocks of %zu", name,
                       (unsigned long long)t->ne[0], format_name(t->fmt), bv);
    t->bytes = gguf_tensor_bytes(t->fmt, n);
    return 0;
}

/* qsort over indices into one array of names; ties broken by index so the
 * message names the first duplicate. */
typedef struct {
    GgufStr s;
    size_t idx;
} Named;

static int cmp_named(const void *a, const void *b)
{
    const Named *x = a, *y = b;
    size_t n = x->s.len < y->s.len ? x->s.len : y->s.len;
    int r = memcmp(x->s.ptr, y->s.ptr, n);
    if (r == 0)
        r = (x->s.len > y->s.len) - (x->s.len < y->s.len);
    return r ? r : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Fail when two of the n names are equal. */
static int no_duplicates(Named *v, size_t n, const char *what, Err *e)
{
    if (n < 2)
        return 0;
    qsort(v, n, sizeof *v, cmp_named);
    for (size_t i = 1; i < n; i++)
        if (v[i].s.len == v[i - 1].s.len && memcmp(v[i].s.ptr, v[i - 1].s.ptr, v[i].s.len) == 0) {
            char name[80];
            return err_set(e, ERR_USAGE, "%s '%s' appears twice (entries %zu and %zu)", what,
                           gguf_str_print(v[i].s, name, sizeof name), v[i - 1].idx, v[i].idx);
        }
    return 0;
}

static int check_unique(GgufFile *g, Err *e)
{
    size_t n = g->n_kv > g->n_tensors ? g->n_kv : g->n_tensors;
    Named *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return err_set(e, ERR_RUNTIME, "out of memory");
    for (size_t i = 0; i < g->n_kv; i++)
        v[i] = (Named){ g->kv[i].key, i };
    int rc = no_duplicates(v, g->n_kv, "metadata key", e);
    for (size_t i = 0; rc == 0 && i < g->n_tensors; i++)
        v[i] = (Named){ g->tensors[i].name, i };
    if (rc == 0)
        rc = no_duplicates(v, g->n_tensors, "tensor", e);
    free(v);
    return rc;
}

/* The data section: alignment, then each tensor inside the file, aligned. */
static int place_tensors(GgufFile *g, size_t info_end, Err *e)
{
    uint64_t align = GGUF_DEFAULT_ALIGNMENT;
    if (gguf_get_uint(g, "general.alignment", &align, e) < 0)
        return -1;
    if (align == 0 || (align & (align - 1)) != 0 || align > (1u << 30))
        return err_set(e, ERR_USAGE, "general.alignment %llu is not a power of two up to 2^30",
                       (unsigned long long)align);
    g->alignment = (size_t)align;
    size_t pad = (g->alignment - info_end % g->alignment) % g->alignment;
    g->data_offset = info_end + pad;
    return 0;
}

static int cmp_offset(const void *a, const void *b)
{
    const GgufTensor *x = *(const GgufTensor *const *)a, *y = *(const GgufTensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The tensors tile the data section as a writer lays them out: in order of
 * offset, none overlapping the one before, and nothing but alignment
 * padding between them or after the last. A tensor whose type or offset
 * was changed overlaps its neighbour; a tensor count one short leaves the
 * missing tensor's bytes (and its info's) unclaimed. Either way the data
 * would be read as the wrong tensor, so the file is refused. */
static int check_tiling(const GgufFile *g, size_t room, Err *e)
{
    if (g->n_tensors == 0)
        return 0;
    const GgufTensor **by = malloc(g->n_tensors * sizeof *by);
    if (!by)
        return err_set(e, ERR_RUNTIME, "out of memory");
    for (size_t i = 0; i < g->n_tensors; i++)
        by[i] = &g->tensors[i];
    qsort(by, g->n_tensors, sizeof *by, cmp_offset);
    size_t end = 0; /* where the tensors so far end */
    int rc = 0;
    char a[80], b[80];
    for (size_t i = 0; i < g->n_tensors && rc == 0; i++) {
        const GgufTensor *t = by[i];
        if (i > 0 && (size_t)t->offset < end)
            rc = err_set(e, ERR_USAGE, "tensor '%s' (data offset %llu) overlaps tensor '%s' (offset %llu, %zu "
                         "bytes): a type or an offset in the header is wrong",
                         gguf_str_print(t->name, a, sizeof a), (unsigned long long)t->offset,
                         gguf_str_print(by[i - 1]->name, b, sizeof b), (unsigned long long)by[i - 1]->offset,
                         by[i - 1]->bytes);
        else if ((size_t)t->offset - end >= g->alignment)
            rc = err_set(e, ERR_USAGE, "%zu bytes of data before tensor '%s' (offset %llu) belong to no tensor: "
                         "the header's tensor count (%zu) or an offset is wrong", (size_t)t->offset - end,
                         gguf_str_print(t->name, a, sizeof a), (unsigned long long)t->offset, g->n_tensors);
        end = (size_t)t->offset + t->bytes;
    }
    if (rc == 0 && room - end >= g->alignment)
        rc = err_set(e, ERR_USAGE, "%zu bytes of data after the last tensor belong to no tensor: the header's "
                     "tensor count (%zu) is short", room - end, g->n_tensors);
    free(by);
    return rc;
}

static int check_data(GgufFile *g, const unsigned char *base, size_t size, Err *e)
{
    if (g->n_tensors > 0 && g->data_offset > size)
        return err_set(e, ERR_USAGE, "truncated: the data section would start at byte %zu, the file has %zu",
                       g->data_offset, size);
    size_t room = g->n_tensors ? size - g->data_offset : 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        GgufTensor *t = &g->tensors[i];
        char name[80];
        gguf_str_print(t->name, name, sizeof name);
        if (t->offset % g->alignment != 0)
            return err_set(e, ERR_USAGE, "tensor '%s': data offset %llu is not a multiple of the alignment %zu",
                           name, (unsigned long long)t->offset, g->alignment);
        if (t->offset > room || t->bytes > room - (size_t)t->offset)
            return err_set(e, ERR_USAGE, "tensor '%s': %zu bytes at data offset %llu run past the end of the "
                           "file (%zu bytes of data)", name, t->bytes, (unsigned long long)t->offset, room);
        t->data = base + g->data_offset + (size_t)t->offset;
    }
    return check_tiling(g, room, e);
}

int gguf_parse(GgufFile *g, const void *data, size_t size, Err *e)
{
    memset(g, 0, sizeof *g);
    Cur c = { .p = data, .size = data ? size : 0, .e = e };
    uint32_t magic_version[2];
    uint64_t n_tensors, n_kv;
    if (need(&c, 4, "the magic") < 0)
        return -1;
    if (memcmp(c.p, GGUF_MAGIC, 4) != 0)
        return err_set(e, ERR_USAGE, "not a GGUF file (its first bytes are not \"GGUF\")");
    c.pos = 4;
    if (rd_u32(&c, &magic_version[1], "the version") < 0)
        return -1;
    g->version = magic_version[1];
    if (g->version != 2 && g->version != 3)
        return err_set(e, ERR_USAGE, "GGUF version %u; kvscope reads versions 2 and 3%s", g->version,
                       g->version > 0xffff ? " (a big-endian file?)" : "");
    if (rd_u64(&c, &n_tensors, "the tensor count") < 0 || rd_u64(&c, &n_kv, "the metadata count") < 0)
        return -1;
    size_t left = c.size - c.pos;
    if (n_kv > left / MIN_KV_BYTES || n_tensors > left / MIN_INFO_BYTES ||
        n_kv * MIN_KV_BYTES > left - n_tensors * MIN_INFO_BYTES)
        return err_set(e, ERR_USAGE, "%llu metadata entries and %llu tensors cannot fit in a file of %zu bytes",
                       (unsigned long long)n_kv, (unsigned long long)n_tensors, c.size);
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) {
        gguf_close(g);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    for (size_t i = 0; i < n_kv; i++) {
        GgufKv *kv = &g->kv[i];
        char what[48], key[80];
        snprintf(what, sizeof what, "metadata entry %zu's key", i);
        uint32_t type;
        if (rd_str(&c, &kv->key, what) < 0)
            goto fail;
        gguf_str_print(kv->key, key, sizeof key);
        if (rd_u32(&c, &type, "a metadata value type") < 0) {
            err_wrap(e, "metadata '%s'", key);
            goto fail;
        }
        kv->type = (GgufValueType)type;
        if (read_value(&c, kv, key) < 0)
            goto fail;
        g->n_kv = i + 1;
    }
    for (size_t i = 0; i < n_tensors; i++) {
        if (read_info(&c, i, &g->tensors[i]) < 0)
            goto fail;
        g->n_tensors = i + 1;
    }
    if (check_unique(g, e) < 0 || place_tensors(g, c.pos, e) < 0 || check_data(g, c.p, c.size, e) < 0)
        goto fail;
    return 0;
fail:
    gguf_close(g);
    return -1;
}

int gguf_open(GgufFile *g, const char *path, Err *e)
{
    MappedFile map;
    memset(g, 0, sizeof *g);
    if (mapfile_open(&map, path, e) < 0)
        return -1;
    if (gguf_parse(g, map.data, map.size, e) < 0) {
        mapfile_close(&map);
        return err_wrap(e, "%s", path);
    }
    g->map = map;
    return 0;
}

void gguf_close(GgufFile *g)
{
    free(g->kv);
    free(g->tensors);
    mapfile_close(&g->map);
    memset(g, 0, sizeof *g);
}

const GgufKv *gguf_find_kv(const GgufFile *g, const char *key)
{
    for (size_t i = 0; i < g->n_kv; i++)
        if (gguf_str_eq(g->kv[i].key, key))
            return &g->kv[i];
    return NULL;
}

const GgufTensor *gguf_find_tensor(const GgufFile *g, const char *name)
{
    for (size_t i = 0; i < g->n_tensors; i++)
        if (gguf_str_eq(g->tensors[i].name, name))
            return &g->tensors[i];
    return NULL;
}

static int wrong_type(const GgufKv *kv, const char *key, const char *want, Err *e)
{
    return err_set(e, ERR_USAGE, "metadata '%s' is a%s %s, not %s", key,
                   kv->type == GGUF_U8 || kv->type == GGUF_I8 || kv->type == GGUF_U16 || kv->type == GGUF_I16 ||
                           kv->type == GGUF_U32 || kv->type == GGUF_I32 || kv->type == GGUF_U64 ||
                           kv->type == GGUF_I64 || kv->type == GGUF_ARRAY
                       ? "n" : "",
                   gguf_value_type_name(kv->type), want);
}

int gguf_get_uint(const GgufFile *g, const char *key, uint64_t *out, Err *e)
{
    const GgufKv *kv = gguf_find_kv(g, key);
    if (!kv)
        return 0;
    switch (kv->type) {
    case GGUF_U8: case GGUF_U16: case GGUF_U32: case GGUF_U64:
        *out = kv->v.u;
        return 1;
    case GGUF_I8: case GGUF_I16: case GGUF_I32: case GGUF_I64:
        if (kv->v.i < 0)
            return err_set(e, ERR_USAGE, "metadata '%s' is %lld; it must not be negative", key, (long long)kv->v.i);
        *out = (uint64_t)kv->v.i;
        return 1;
    default:
        return wrong_type(kv, key, "an integer", e);
    }
}

int gguf_get_float(const GgufFile *g, const char *key, double *out, Err *e)
{
    const GgufKv *kv = gguf_find_kv(g, key);
    if (!kv)
        return 0;
    switch (kv->type) {
    case GGUF_F32: case GGUF_F64: *out = kv->v.f; return 1;
    case GGUF_U8: case GGUF_U16: case GGUF_U32: case GGUF_U64: *out = (double)kv->v.u; return 1;
    case GGUF_I8: case GGUF_I16: case GGUF_I32: case GGUF_I64: *out = (double)kv->v.i; return 1;
    default: return wrong_type(kv, key, "a number", e);
    }
}

int gguf_get_str(const GgufFile *g, const char *key, GgufStr *out, Err *e)
{
    const GgufKv *kv = gguf_find_kv(g, key);
    if (!kv)
        return 0;
    if (kv->type != GGUF_STRING)
        return wrong_type(kv, key, "a string", e);
    *out = kv->v.s;
    return 1;
}

int gguf_get_array(const GgufFile *g, const char *key, GgufValueType *elem_type, uint64_t *n, Err *e)
{
    const GgufKv *kv = gguf_find_kv(g, key);
    if (!kv)
        return 0;
    if (kv->type != GGUF_ARRAY)
        return wrong_type(kv, key, "an array", e);
    *elem_type = kv->arr_type;
    *n = kv->arr_n;
    return 1;
}
