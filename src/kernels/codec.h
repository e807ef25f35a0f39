/* codec.h: what each stored-row format can do, per instruction set.
 *
 * A FormatOps table holds the operations attention and caches need on rows
 * of n values stored in one format. The dot and axpy forms serve a GQA
 * group of G query heads from one decode of a row: the row is read and
 * dequantized once (in registers, on the SIMD paths) and used G times.
 *
 * Two sizes of the same operations: per row (dot, axpy) and per tile of
 * rows (dot_rows, axpy_rows), which attention uses. A tile call keeps the
 * accumulators (axpy) and, for rows of 128 values, the queries (dot) in
 * registers across its rows instead of reloading them from L1 for every
 * row, sums the scores of many rows in one reduction, and makes one call
 * per run of rows instead of one per row: what lets decode attention run
 * at memory speed (codec_tiles.h). The per-row forms are the tile forms
 * with one row.
 *
 * Layout of each format: format.h. How each rounds, and what it does with
 * zeros, huge values, Inf and NaN: codec_ref.c. The SIMD tables and their
 * CPU features: codec_isa.h. Every ISA's table agrees with the reference
 * bit for bit on dequantize and within the float-summation bounds that
 * test_codec.c names on dot and axpy.
 *
 * n is any length >= 1; a trailing partial block is zero-padded on quantize
 * and its padding ignored on read. A row may sit at any address; q, w, out
 * and acc must not overlap the rows. Speed: 64-byte-aligned q and acc
 * buffers help (a vector split across cache lines costs up to 2x). */
#ifndef KVSCOPE_KERNELS_CODEC_H
#define KVSCOPE_KERNELS_CODEC_H

#include <stddef.h>

#include "kernels/format.h"

/* Rows a caller will read next (a flash tile's value rows, beside its key
 * rows): dot_rows may prefetch them while it computes, so that their
 * memory traffic meets its work. Row r at (const char *)rows + r * stride,
 * bytes long, r < the call's n_rows. */
typedef struct {
    const void *rows;
    size_t stride, bytes;
} RowsAhead;

/* Rows r .. r + nr - 1 of *a (none if a is NULL) asked of memory, into L2. */
static inline void rows_ahead_prefetch(const RowsAhead *a, size_t r, size_t nr)
{
    if (!a)
        return;
    for (size_t j = r; j < r + nr; j++)
        for (size_t o = 0; o < a->bytes; o += 64)
            __builtin_prefetch((const unsigned char *)a->rows + j * a->stride + o, 0, 2);
}

typedef struct {
    Format fmt;
    /* dst (format_row_bytes(fmt, n) bytes) = encode(src[0..n)) */
    void (*quantize)(void *dst, const float *src, size_t n);
    /* dst[0..n) = decode(src) */
    void (*dequantize)(float *dst, const void *src, size_t n);
    /* out[g] = sum_i q[g * n + i] * decode(row)[i], for g < G */
    void (*dot)(float *out, const float *q, size_t G, const void *row, size_t n);
    /* acc[g * n + i] += w[g] * decode(row)[i], for g < G, i < n */
    void (*axpy)(float *acc, const float *w, size_t G, const void *row, size_t n);
    /* A tile of n_rows rows, row r at (const char *)rows + r * stride:
     * out[g * ld + r] = sum_i q[g * n + i] * decode(row r)[i], g < G, r < n_rows
     * (ld >= n_rows when G > 1: the scores of head g are a run of out);
     * ahead: rows to prefetch meanwhile, or NULL (never changes out) */
    void (*dot_rows)(float *out, size_t ld, const float *q, size_t G, const void *rows, size_t stride,
                     size_t n_rows, size_t n, const RowsAhead *ahead);
    /* acc[g * n + i] += sum_r w[g * ld + r] * decode(row r)[i], g < G, i < n,
     * the rows added in order r = 0, 1, ... (as n_rows axpy calls would) */
    void (*axpy_rows)(float *acc, const float *w, size_t ld, size_t G, const void *rows, size_t stride,
                      size_t n_rows, size_t n);
} FormatOps;

/* The reference codecs: plain loops, the specification. */
extern const FormatOps codec_ref[FMT_COUNT];

/* q8_0 of an activation as llama.cpp's x86 CPU path rounds it (codes
 * x * (127 / absmax), ties to even; codec_ref.c): --int-dot's default.
 * codec[FMT_Q8_0].quantize is ggml's reference rounding (ties away). */
void codec_quantize_q8_0_even(void *dst, const float *src, size_t n);

/* IEEE binary16 conversions, round to nearest even (reference versions). */
unsigned short fp16_from_f32(float f);
float fp16_to_f32(unsigned short h);

#endif
