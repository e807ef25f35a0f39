/* format.h: how a stored K or V row is encoded, and what it costs.
 *
 * Every format is a row of whole blocks, each block holding block_values
 * values in block_bytes bytes, plus row_extra bytes once per row (a per-row
 * scale). A row whose length is not a multiple of the block size is padded
 * up to whole blocks, as a real store would have to:
 *
 *   row_bytes(n) = ceil(n / block_values) * block_bytes + row_extra
 *
 *   format  block_values  block_bytes  row_extra  layout
 *   f32          1             4           0      IEEE binary32
 *   f16          1             2           0      IEEE binary16
 *   q8_0        32            34           0      fp16 scale + 32 int8 (llama.cpp block_q8_0)
 *   q4_0        32            18           0      fp16 scale + 16 bytes of nibbles (block_q4_0)
 *   int4         8             4           2      8 signed nibbles per uint32, fp16 scale per row
 *   fp4          8             4           2      8 E2M1 nibbles per uint32, fp16 scale per row
 *   u4           8             4           0      8 unsigned 4-bit codes per uint32, no scale
 *   u2          16             4           0      16 unsigned 2-bit codes per uint32, no scale
 *
 * Inside the blocks (all multi-byte fields little-endian, as on x86-64 and
 * aarch64):
 *   q8_0  d, then qs[32]; value j = qs[j] * d, with d = absmax / 127.
 *   q4_0  d, then qs[16]; byte j holds element j in its low nibble and
 *         element j + 16 in its high one; value = (nibble - 8) * d, with
 *         d = max / -8 (max: the signed value of largest magnitude).
 *   int4  a row is ceil(n/8) uint32 words, then the row's fp16 scale s
 *   fp4   (absmax/7 for int4, absmax/6 for fp4). Element i is word i/8,
 *         bits 4*(i%8) .. 4*(i%8)+3. int4: a two's-complement nibble in
 *         [-8, 7], value q * s. fp4 (E2M1): bit 3 the sign, bits 0-2 index
 *         the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; value +-mag * s.
 *   u4    a row is ceil(n/8) uint32 words; element i is word i/8, bits
 *         4*(i%8) .. 4*(i%8)+3, a code in [0, 15]; value = the code.
 *   u2    a row is ceil(n/16) uint32 words; element i is word i/16, bits
 *         2*(i%16) .. 2*(i%16)+1, a code in [0, 3]; value = the code.
 *
 * u4 and u2 are the per-channel code formats (format_is_per_channel): their
 * rows hold bare integer codes, and the scale and minimum of each channel
 * live beside a group of rows (KvBlock.k_chan, block.h; the kivi cache).
 * They encode keys only and are refused wherever a row must carry its own
 * values (+quant, mixed's runs, calc's --elem).
 *
 * What each format does with zeros, huge values, NaN and Inf, and how it
 * rounds: codec_ref.c, the reference codecs. The operations on rows
 * (quantize, dequantize, dot, axpy) are FormatOps tables, one per ISA
 * (codec.h, codec_isa.h), so caches and attention ask the format, never
 * branch on it. */
#ifndef KVSCOPE_KERNELS_FORMAT_H
#define KVSCOPE_KERNELS_FORMAT_H

#include <stddef.h>

typedef enum {
    FMT_F32 = 0,
    FMT_F16,
    FMT_Q8_0,
    FMT_Q4_0,
    FMT_INT4,
    FMT_FP4,
    FMT_U4, /* the per-channel code formats come last: FMT_ROW_COUNT */
    FMT_U2,
    FMT_COUNT /* not a format: the number of them */
} Format;

/* The formats that hold values on their own are 0 .. FMT_ROW_COUNT - 1: what
 * a loop over "every cache format" (calc, bench, plots) means. */
#define FMT_ROW_COUNT FMT_U4

/* Bytes one row of n values takes in format f (0 for an unknown f).
 * Rounds up to whole blocks; see the table above. */
size_t format_row_bytes(Format f, size_t n);

/* The format's short name ("f32", "q4_0", ...); "?" for an unknown f. */
const char *format_name(Format f);

/* The block layout behind format_row_bytes: values per block, bytes per
 * block, and bytes added once per row. All 0 for an unknown f. */
size_t format_block_values(Format f);
size_t format_block_bytes(Format f);
size_t format_row_extra(Format f);

/* Find the format named `name` (exact, lower case). Returns 0 and sets *out,
 * or -1 when no format has that name (then list format_names to the user). */
int format_parse(const char *name, Format *out);

/* 1 for the lossy formats: the block formats (q8_0, q4_0, int4, fp4) and
 * the code formats (u4, u2: encoding rounds to whole codes); 0 for f32, f16
 * and an unknown f. */
int format_is_quantized(Format f);

/* 1 for the per-channel code formats (u4, u2), whose rows mean something
 * only with a group's scales and minimums; 0 for every other f. */
int format_is_per_channel(Format f);

/* Every format name, comma-separated. */
extern const char format_names[];

/* The names of the formats a row may be stored in on its own (every format
 * but the per-channel codes), for error messages and help. */
extern const char format_row_names[];

#endif
