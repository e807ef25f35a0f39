/* codec.h: what each stored-row format can do, per instruction set.
 *
 * A FormatOps table holds the four operations attention and caches need on
 * a row of n values stored in one format. The dot and axpy forms serve a
 * GQA group of G query heads from one decode of the row: the row is read and
 * dequantized once (in registers, on the SIMD paths) and used G times.
 *
 * Layout of each format: see format.h. Every ISA's table must agree with the
 * reference one (codec_ref.c) within the per-format tolerance the tests name.
 * n is any length >= 1; a trailing partial block is zero-padded on quantize
 * and its padding ignored on read. */
#ifndef KVSCOPE_KERNELS_CODEC_H
#define KVSCOPE_KERNELS_CODEC_H

#include <stddef.h>

#include "kernels/format.h"

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
} FormatOps;

/* The reference codecs: plain loops, the specification. */
extern const FormatOps codec_ref[FMT_COUNT];

/* IEEE binary16 conversions, round to nearest even (reference versions). */
unsigned short fp16_from_f32(float f);
float fp16_to_f32(unsigned short h);

#endif
