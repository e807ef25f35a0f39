/* codec_tiles.h: the loop skeletons the SIMD codec files share (private to
 * codec_avx2.c, codec_avx512.c and codec_neon.c, each built with its own
 * flags; they include this once, after defining the names below). The dot
 * skeletons are in codec_tiles_dot.h, the axpy ones in codec_tiles_axpy.h;
 * this file includes both and makes each format's table entry of them:
 *
 *   V                  a vector of W floats (__m256, __m512, or two float32x4_t)
 *   NACC               how many V accumulators a block keeps in registers
 *                      (16 of AVX-512's 32 registers; 8 of AVX2's 16 and of
 *                      NEON's 32 / 2)
 *   Row, row_of()      a row's bytes (and int4 / fp4 scale): row_of(p, n, s)
 *   ChunkFn            a format's decoder: values i .. i+W-1 of a row, those
 *                      from m on zeroed (1 <= m <= W)
 *   raw_<fmt>, scale_<fmt>  block-scaled formats (q8_0, q4_0): a whole chunk's
 *                      codes as floats, unscaled, and its block's scale in
 *                      every lane (PartFn)
 *   ROW_SCALE_PARTS    optional, 1: the row-scaled formats (int4, fp4) have
 *                      raw_<fmt> and scale_<fmt> too (the row's scale), and
 *                      axpy folds the scale into each row's weight once
 *                      instead of decoding every chunk scaled
 *   v_zero, v_load, v_load_part, v_store, v_store_part, v_set1, v_fma (a * b
 *   + c), v_mul, v_add, v_reduce (sums[k] = the lanes of part[k]
 *   added, k < NACC), UNROLL_16, INLINE.
 *   AXPY_CHEAP_PARTS   optional, 1: cheap rows too are added for 4 heads at
 *                      a time, in parts, each row's whole bytes prefetched
 *                      when its first part is read (axpy_tile)
 *   AXPY_AHEAD         optional (default 0: none): how many rows ahead
 *                      each cheap or block-scaled value row prefetches
 *                      (axpy_tile)
 *   GROUP_STREAMS      optional, 1: where G is 1, 2 or 4 (one block of
 *                      heads), every format's key rows are read in
 *                      streams, in one pass, the rows ahead not
 *                      prefetched (dot_tile; one head's cheap rows always
 *                      are)
 *   DOT_STREAMS_AHEAD  optional (default 0: none): bytes ahead in each
 *                      stream the key rows prefetch (dot_heads)
 *   DOT_KEYS_AHEAD     optional (default 0: none): how many rows ahead a
 *                      group's cheap key rows are prefetched where no value
 *                      rows are (dot_tile)
 *   CHEAP_DOTS_OWN     optional, 1: the including file defines the f32 and
 *                      f16 dot forms itself (dot_rows_<fmt>, dot_<fmt>),
 *                      after this file and before its table
 *   DOT_AHEAD          optional (default 0: never): where dot_tile
 *                      prefetches the rows ahead (the values) while it
 *                      scores; 1 where it decodes the rows, 2 also for
 *                      cheap rows with G > 1 (dot_tile)
 *
 * Every skeleton is always inlined with a format's decoder as a constant,
 * so each format gets its own loops with the decoder inside: rows are
 * dequantized in registers, never into a temporary f32 row. The block sizes
 * (heads GB, rows, chunks CB) are constants too, so that the unrolled
 * accumulators live in registers.
 *
 * The tile forms (codec.h), and what was measured choosing them (rows of
 * 128 values, AVX-512 on this project's machine):
 *   dot   rows one after the other, each chunk decoded once for a block of
 *         GB heads (4, 2 or 1), each row's GB sums kept apart in registers
 *         and a block of NACC / GB rows reduced at once (v_reduce: NACC sums
 *         for the price of about one horizontal add each). Rows of 8
 *         chunks keep q in registers for the block (dot_block_q) instead of
 *         loading it from L1 for every row (f32, 4 heads: 15 against 20 ns
 *         a row, from L2). Reading a chunk of several rows in turn
 *         instead (q loaded once for them) halves the loads but streams from
 *         DRAM at half the speed (f32: 6.5 against 17 GB/s): the hardware
 *         prefetchers lose the rows. Software prefetch did not win it back.
 *         (Two rows so, at 4 heads on the AVX2 EPYC: f32 1.47x slower cold,
 *         f16 the same.) One head's f32 and f16 rows are read from four
 *         parts of the run side by side instead (dot_heads).
 *   axpy  the accumulators of GB heads x CB chunks in registers, loaded once
 *         and stored once per call, every row added in between (per-row
 *         calls loaded and stored them for every row: with 4 heads the load
 *         and store ports bound the step). A row longer than CB chunks is
 *         done in several passes over the rows, a part of each at a time.
 *   Block-scaled formats (q8_0, q4_0) dot a block's codes first and scale
 *   the block's sum once (dot_part): one multiply per block, not one per
 *   chunk (dot, one head, rows from L1/L2: AVX2 q4_0 18 -> 13 ns a row,
 *   q8_0 12 -> 9; AVX-512 q8_0 8.2 -> 7.7; AVX-512 q4_0 unchanged, its
 *   decoder already scaled a 16-value table once per block).
 *   Formats whose decode is a load (f32, f16: `cheap`) go in blocks of
 *   fewer heads whose accumulators hold a whole row, the row read again
 *   from L1 for the next block, rather than in parts (which streams at
 *   two thirds of the speed; on AVX2 parts with the whole row prefetched
 *   won: AXPY_CHEAP_PARTS); the others are decoded once for up to 4 heads.
 *
 * The per-row forms are tiles of one row. */
#ifndef KVSCOPE_KERNELS_CODEC_TILES_H
#define KVSCOPE_KERNELS_CODEC_TILES_H

/* Chunk i of a block-scaled row (whole chunks only): its codes, or its
 * block's scale. The dot forms take (raw, scale, BC): BC chunks a block, or
 * BC = 0 for formats decoded whole by their ChunkFn. */
typedef V (*PartFn)(const Row *r, size_t i);

/* dst[0..n) = decode(row) */
INLINE void dequantize_row(ChunkFn chunk, float *dst, const Row *r, size_t n)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        v_store(dst + i, chunk(r, i, W));
    if (i < n)
        v_store_part(dst + i, chunk(r, i, n - i), n - i);
}

/* Rows per pass of the heads' blocks: a block after the first reads them
 * again from cache, not from memory (a flash tile). */
#define PASS_ROWS 64

#include "kernels/codec_tiles_dot.h"
#include "kernels/codec_tiles_axpy.h"

/* The operations of one format: fmt its name, per_row_scale whether rows
 * carry an fp16 scale after their words (int4: 1, fp4: 2; row_of), cheap
 * the bytes of a value where decoding is a load (f32 4, f16 2), else 0, raw,
 * scale and bc the split (dot, axpy) of a block-scaled format (PartFn), or
 * NULL, NULL, 0, and bb the bytes of its blocks (else 0). The per-row forms
 * are tiles of one row. */
#define CODEC_TILE_OPS_NODOT_(fmt, per_row_scale, cheap, raw, scale, bc, bb)                                \
    static void dequantize_##fmt(float *dst, const void *row, size_t n)                                     \
    {                                                                                                       \
        const Row r = row_of(row, n, per_row_scale);                                                        \
        dequantize_row(chunk_##fmt, dst, &r, n);                                                            \
    }                                                                                                       \
    static void axpy_rows_##fmt(float *acc, const float *w, size_t ld, size_t G, const void *rows,          \
                                size_t stride, size_t n_rows, size_t n)                                     \
    {                                                                                                       \
        axpy_tile(chunk_##fmt, raw, scale, bc, bb, per_row_scale, cheap, acc, w, ld, G, rows, stride, n_rows,  \
                  n);                                                                                       \
    }                                                                                                       \
    static void axpy_##fmt(float *acc, const float *w, size_t G, const void *row, size_t n)                 \
    {                                                                                                       \
        axpy_rows_##fmt(acc, w, 1, G, row, 0, 1, n);                                                        \
    }

#define CODEC_TILE_OPS_(fmt, per_row_scale, cheap, raw, scale, bc, bb)                                      \
    CODEC_TILE_OPS_NODOT_(fmt, per_row_scale, cheap, raw, scale, bc, bb)                                    \
    static void dot_rows_##fmt(float *out, size_t ld, const float *q, size_t G, const void *rows,           \
                               size_t stride, size_t n_rows, size_t n, const RowsAhead *ahead)              \
    {                                                                                                       \
        dot_tile(chunk_##fmt, raw, scale, bc, per_row_scale, cheap, out, ld, q, G, rows, stride, n_rows, n,  \
                 ahead);                                                                                    \
    }                                                                                                       \
    static void dot_##fmt(float *out, const float *q, size_t G, const void *row, size_t n)                  \
    {                                                                                                       \
        dot_rows_##fmt(out, 1, q, G, row, 0, 1, n, NULL);                                                   \
    }

#define CODEC_TILE_OPS(fmt, per_row_scale, cheap) CODEC_TILE_OPS_(fmt, per_row_scale, cheap, NULL, NULL, 0, 0)
/* A block-scaled format: bc chunks a block of bb bytes, decoded by raw_<fmt> and scale_<fmt>. */
#define CODEC_TILE_OPS_SPLIT(fmt, bc, bb) CODEC_TILE_OPS_(fmt, 0, 0, raw_##fmt, scale_##fmt, bc, bb)

#if CHEAP_DOTS_OWN /* the ISA file defines dot_rows_f32, dot_f32 and f16's itself (codec_avx2.c) */
CODEC_TILE_OPS_NODOT_(f32, 0, 4, NULL, NULL, 0, 0)
CODEC_TILE_OPS_NODOT_(f16, 0, 2, NULL, NULL, 0, 0)
#else
CODEC_TILE_OPS(f32, 0, 4)
CODEC_TILE_OPS(f16, 0, 2)
#endif
CODEC_TILE_OPS_SPLIT(q8_0, QK8_0 / W, sizeof(BlockQ8_0))
CODEC_TILE_OPS_SPLIT(q4_0, QK4_0 / W, sizeof(BlockQ4_0))
#if ROW_SCALE_PARTS /* the ISA gives raw_<fmt> and scale_<fmt> of int4 and fp4 too */
CODEC_TILE_OPS_(int4, 1, 0, raw_int4, scale_int4, 0, 0)
CODEC_TILE_OPS_(fp4, 2, 0, raw_fp4, scale_fp4, 0, 0)
#else
CODEC_TILE_OPS(int4, 1, 0)
CODEC_TILE_OPS(fp4, 2, 0)
#endif
CODEC_TILE_OPS(u4, 0, 0)
CODEC_TILE_OPS(u2, 0, 0)

/* A table entry; quantize: the reference's, or the ISA's own f16. */
#define CODEC_ENTRY(F, fmt, quantize)                                                                       \
    [F] = { F, quantize, dequantize_##fmt, dot_##fmt, axpy_##fmt, dot_rows_##fmt, axpy_rows_##fmt }

#endif
