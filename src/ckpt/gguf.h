/* gguf.h: GGUF files (versions 2 and 3), the checkpoint format of llama.cpp.
 *
 * The layout, all little-endian (GGUF spec, ggml/docs/gguf.md):
 *
 *   header    "GGUF" (4 bytes), version u32, n_tensors u64, n_kv u64
 *   metadata  n_kv of: key (string), value type u32, value
 *   infos     n_tensors of: name (string), n_dims u32, ne[n_dims] u64,
 *             type u32 (ggml type), offset u64 (from the data section)
 *   padding   to `alignment` (general.alignment, default 32)
 *   data      the tensors, each at data + offset, offset % alignment == 0
 *
 *   string    length u64, then that many bytes (UTF-8, no NUL)
 *   value     u8 i8 u16 i16 u32 i32 f32 bool(1 byte) string u64 i64 f64, or
 *             an array: element type u32, count u64, then count values
 *             (arrays of strings and of arrays included)
 *
 * A tensor's ne[0] is its innermost (contiguous) dimension: a matrix of
 * ne = [in, out] is row-major [out][in], one row per output, which is the
 * engine's layout (model.h): no transpose on load or export.
 *
 * Reading never trusts a count or a length: each is checked against the
 * bytes left in the file before anything is allocated or walked, so a
 * malformed file costs an error message, never a crash or a huge
 * allocation. The tensors must tile the data section as writers lay it
 * out: no two overlap, and no more than alignment padding lies between
 * them or after the last (a wrong type, offset or tensor count shows as
 * one or the other). Tensors must be F32, F16, Q8_0 or Q4_0 (the engine's formats,
 * the same block layouts: kernels/format.h); any other type is refused with
 * the tensor's name and type. */
#ifndef KVSCOPE_CKPT_GGUF_H
#define KVSCOPE_CKPT_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/mapfile.h"
#include "kernels/format.h"
#include "util/err.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NAME 64      /* bytes of a tensor name (ggml's GGML_MAX_NAME, with its NUL) */
#define GGUF_MAX_ARRAY_DEPTH 4 /* arrays of arrays nested deeper are refused */

typedef enum {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5, GGUF_F32 = 6,
    GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10, GGUF_I64 = 11, GGUF_F64 = 12,
    GGUF_TYPE_COUNT
} GgufValueType;

/* The ggml tensor types kvscope reads (ggml's numbering). */
enum { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q4_0 = 2, GGML_TYPE_Q8_0 = 8 };

/* A string inside the file: not NUL-terminated, valid while the file is open. */
typedef struct {
    const char *ptr;
    size_t len;
} GgufStr;

typedef struct {
    GgufStr key;
    GgufValueType type;
    union {
        uint64_t u; /* U8, U16, U32, U64, BOOL */
        int64_t i;  /* I8, I16, I32, I64 */
        double f;   /* F32, F64 */
        GgufStr s;  /* STRING */
    } v;
    /* ARRAY only: element type, count, and the elements' bytes in the file */
    GgufValueType arr_type;
    uint64_t arr_n;
    const unsigned char *arr_data;
    size_t arr_bytes;
} GgufKv;

typedef struct {
    GgufStr name;
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* unused dimensions are 1 */
    uint32_t ggml_type;
    Format fmt;                 /* the engine's format of the same layout */
    uint64_t offset;            /* from the start of the data section */
    size_t n_elems;
    const unsigned char *data;  /* [bytes] inside the file */
    size_t bytes;
} GgufTensor;

typedef struct {
    MappedFile map;      /* owned when opened by gguf_open; empty for gguf_parse */
    uint32_t version;
    size_t n_kv;
    GgufKv *kv;          /* [n_kv] */
    size_t n_tensors;
    GgufTensor *tensors; /* [n_tensors], in the file's order */
    size_t alignment;
    size_t data_offset;  /* where the data section starts */
} GgufFile;

/* Parse the GGUF file held in data[0..size) into g, which then points into
 * data (the caller keeps it alive until gguf_close). Checks everything above;
 * on failure ERR_USAGE with a one-line message, g left closed. */
int gguf_parse(GgufFile *g, const void *data, size_t size, Err *e);

/* Map the file at path and parse it; messages start with the path. */
int gguf_open(GgufFile *g, const char *path, Err *e);

/* Free what gguf_parse or gguf_open allocated and unmap; g may be zeroed. */
void gguf_close(GgufFile *g);

/* The value or tensor named `key` / `name`, or NULL. */
const GgufKv *gguf_find_kv(const GgufFile *g, const char *key);
const GgufTensor *gguf_find_tensor(const GgufFile *g, const char *name);

/* Typed metadata look-ups: 1 found (*out set), 0 missing (*out untouched),
 * -1 with e set when the key holds a value of another kind: an unsigned
 * integer (any integer type, not negative), a number (any integer or float
 * type), a string, an array (its element type and count). */
int gguf_get_uint(const GgufFile *g, const char *key, uint64_t *out, Err *e);
int gguf_get_float(const GgufFile *g, const char *key, double *out, Err *e);
int gguf_get_str(const GgufFile *g, const char *key, GgufStr *out, Err *e);
int gguf_get_array(const GgufFile *g, const char *key, GgufValueType *elem_type, uint64_t *n, Err *e);

/* 1 when the string s equals the C string c. */
int gguf_str_eq(GgufStr s, const char *c);

/* s as printable text into buf (cap bytes): bytes outside ASCII 32..126
 * become '?', a long string ends in "..."; returns buf. For messages. */
const char *gguf_str_print(GgufStr s, char *buf, size_t cap);

/* ggml's name of a tensor type ("Q4_K"), "type N" for one kvscope does not
 * know (buf: at least 16 bytes). */
const char *gguf_ggml_type_name(uint32_t type, char *buf, size_t cap);

/* The name of a metadata value type ("u32", "string", ...). */
const char *gguf_value_type_name(uint32_t type);

/* --- writing (gguf_write.c) ---------------------------------------------- */

/* Builds a GGUF v3 file in two phases: describe it (metadata and tensor
 * infos, kept in memory), then stream each tensor's bytes in the order
 * they were added. The file is written to PATH.tmp and renamed to PATH by
 * gguf_writer_finish, so a failed export never leaves a half file behind. */
typedef struct GgufWriter GgufWriter;

/* A writer for path with the given alignment (0 = GGUF_DEFAULT_ALIGNMENT,
 * which is then not written as general.alignment). NULL when out of memory. */
GgufWriter *gguf_writer_new(const char *path, size_t alignment);

/* Metadata. Errors (out of memory) are kept and reported by finish. */
void gguf_writer_str(GgufWriter *w, const char *key, const char *value);
void gguf_writer_u32(GgufWriter *w, const char *key, uint32_t value);
void gguf_writer_f32(GgufWriter *w, const char *key, float value);
void gguf_writer_bool(GgufWriter *w, const char *key, int value);
/* Arrays of n strings, of n int32, of n float32. */
void gguf_writer_str_array(GgufWriter *w, const char *key, const char *const *values, size_t n);
/* An array of n strings of the lengths given (any bytes, a NUL too). */
void gguf_writer_bytes_array(GgufWriter *w, const char *key, const char *const *values, const size_t *lens, size_t n);
void gguf_writer_i32_array(GgufWriter *w, const char *key, const int32_t *values, size_t n);
void gguf_writer_f32_array(GgufWriter *w, const char *key, const float *values, size_t n);

/* Declare a tensor of n_dims dims ne[] (ne[0] innermost) in format fmt
 * (f32, f16, q8_0 or q4_0; others are an error reported by finish). */
void gguf_writer_tensor(GgufWriter *w, const char *name, Format fmt, size_t n_dims, const uint64_t *ne);

/* Write the header, metadata and infos (after every tensor is declared). */
int gguf_writer_begin_data(GgufWriter *w, Err *e);

/* The bytes of the next declared tensor: `bytes` must be its size. */
int gguf_writer_data(GgufWriter *w, const void *data, size_t bytes, Err *e);

/* Check every tensor was written, flush, close and rename into place. */
int gguf_writer_finish(GgufWriter *w, Err *e);

/* Free the writer; removes the temporary file unless finish succeeded. */
void gguf_writer_free(GgufWriter *w);

/* Bytes a tensor of n_elems values takes in fmt (rows whole blocks). */
size_t gguf_tensor_bytes(Format fmt, size_t n_elems);

#endif
