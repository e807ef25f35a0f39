/* codec_tiles.h: the loop skeletons the SIMD codec files share (private to
 * codec_avx2.c, codec_avx512.c and codec_neon.c, each built with its own
 * flags; they include this once, after defining):
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

/* out[g * ld + r] = sums[g * RB + r] for g < GB, r < nr, from the block's
 * per-row sums part[g * RB + r] (RB = NACC / GB; the unused ones zeroed).
 * Always by v_reduce, even for one row: a horizontal add of one vector
 * adds the lanes in another order, and a row alone at the end of a run
 * would then round otherwise than in a full block (cutting the rows into
 * runs, pages, changed scores). */
INLINE void dot_store(float *out, size_t ld, V *part, const size_t GB, const size_t S, size_t sld, size_t nr)
{
    const size_t RB = NACC / GB, P = RB / S;
    for (size_t g = 0; g < GB; g++)
        for (size_t r = nr; r < RB; r++)
            part[g * RB + r] = v_zero();
    float sums[NACC];
    v_reduce(sums, part);
    for (size_t g = 0; g < GB; g++)
        for (size_t r = 0; r < nr; r++)
            out[g * ld + r / P * sld + r % P] = sums[g * RB + r];
}

/* acc[g] += q_g . decode(the BC chunks of the block from value i), g < GB:
 * q_g's chunks are qv[g * qs + c]; the codes are dotted first and their sum
 * scaled once (rounded otherwise than value by value, within dot's bound). */
INLINE void dot_part(PartFn raw, PartFn scale, const size_t BC, const size_t GB, const Row *row, size_t i,
                     const V *qv, size_t qs, V *acc)
{
    V t[4];
    UNROLL_16
    for (size_t c = 0; c < BC; c++) {
        const V v = raw(row, i + c * W);
        UNROLL_16
        for (size_t g = 0; g < GB; g++)
            t[g] = c ? v_fma(qv[g * qs + c], v, t[g]) : v_mul(qv[g * qs + c], v);
    }
    const V d = scale(row, i);
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        acc[g] = v_fma(t[g], d, acc[g]);
}

/* dot_part with q_g's chunks loaded from q[g * n + i ..]. */
INLINE void dot_part_mem(PartFn raw, PartFn scale, const size_t BC, const size_t GB, const Row *row,
                         size_t i, const float *q, size_t n, V *acc)
{
    V qv[16];
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < BC; c++)
            qv[g * BC + c] = v_load(q + g * n + i + c * W);
    dot_part(raw, scale, BC, GB, row, i, qv, BC, acc);
}

/* GB heads x nr <= NACC / GB rows at base + r * stride: out[g * ld + r] =
 * q[g * n ..] . decode(row r). The rows are read one after the other, each
 * chunk decoded once for the GB heads (q from L1); NS chunks in flight per
 * head keep a long row from being bound by the FMA latency: 4 for one head;
 * for GB heads up to NACC / GB (at most 4) where decoding is a load
 * (cheap). AVX2 f32, 4 heads, rows of 128 values from L2: 29 ns a row with
 * one in flight (a head's 16 FMAs waiting on each other), 21 ns with two.
 * Other decoders need registers of their own: 2 or 1 there (int4 and fp4
 * gained nothing from more, q8_0 lost). */
INLINE void dot_block(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB,
                      const int per_row_scale, const int cheap, float *out, size_t ld, const float *q,
                      const unsigned char *base, size_t stride, size_t nr, size_t n)
{
    const size_t RB = NACC / GB, NS = GB == 1 ? 4 : cheap ? (RB < 4 ? RB : 4) : GB == 2 ? 2 : 1;
    V part[NACC];
#pragma GCC unroll 1
    for (size_t r = 0; r < nr; r++) {
        const Row row = row_of(base + r * stride, n, per_row_scale);
        V acc[4][4];
        UNROLL_16
        for (size_t s = 0; s < NS; s++)
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                acc[s][g] = v_zero();
        size_t i = 0;
        if (BC) { /* whole blocks, NS of them in flight */
            for (; i + NS * BC * W <= n; i += NS * BC * W)
                UNROLL_16
                for (size_t s = 0; s < NS; s++)
                    dot_part_mem(raw, scale, BC, GB, &row, i + s * BC * W, q, n, acc[s]);
            for (; i + BC * W <= n; i += BC * W)
                dot_part_mem(raw, scale, BC, GB, &row, i, q, n, acc[0]);
        }
        for (; !BC && i + NS * W <= n; i += NS * W)
            UNROLL_16
            for (size_t s = 0; s < NS; s++) {
                const V v = chunk(&row, i + s * W, W);
                UNROLL_16
                for (size_t g = 0; g < GB; g++)
                    acc[s][g] = v_fma(v_load(q + g * n + i + s * W), v, acc[s][g]);
            }
        for (; i < n; i += W) { /* what NS chunks at a time left, the last one partial */
            const size_t m = n - i < W ? n - i : W;
            const V v = chunk(&row, i, m);
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                acc[0][g] = v_fma(v_load_part(q + g * n + i, m), v, acc[0][g]);
        }
        UNROLL_16
        for (size_t g = 0; g < GB; g++) {
            UNROLL_16
            for (size_t s = 1; s < NS; s++)
                acc[0][g] = v_add(acc[0][g], acc[s][g]);
            part[g * RB + r] = acc[0][g];
        }
    }
    dot_store(out, ld, part, GB, 1, 0, nr);
}

/* dot_block for rows of exactly NC chunks (n = NC * W, GB * NC <= NACC): q
 * loaded into registers once for the block, a row then costs its own loads
 * only. */
INLINE void dot_block_q(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB, const size_t NC,
                        const int per_row_scale, float *out, size_t ld, const float *q, const unsigned char *base,
                        size_t stride, size_t nr)
{
    const size_t n = NC * W, RB = NACC / GB;
    V qr[NACC], part[NACC];
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < NC; c++)
            qr[g * NC + c] = v_load(q + g * n + c * W);
#pragma GCC unroll 1
    for (size_t r = 0; r < nr; r++) {
        const Row row = row_of(base + r * stride, n, per_row_scale);
        V acc[2][4];
        UNROLL_16
        for (size_t g = 0; g < GB; g++)
            acc[0][g] = acc[1][g] = v_zero();
        UNROLL_16
        for (size_t c = 0; c < NC; c++) { /* two sums in flight per head */
            if (BC && c % (BC ? BC : 1) == 0) /* block-scaled: a block at a time (no % 0) */
                dot_part(raw, scale, BC, GB, &row, c * W, qr + c, NC, acc[c / (BC ? BC : 1) % 2]);
            if (BC)
                continue;
            const V v = chunk(&row, c * W, W);
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                acc[c % 2][g] = v_fma(qr[g * NC + c], v, acc[c % 2][g]);
        }
        UNROLL_16
        for (size_t g = 0; g < GB; g++)
            part[g * RB + r] = v_add(acc[0][g], acc[1][g]);
    }
    dot_store(out, ld, part, GB, 1, 0, nr);
}

/* Streams one head's cheap rows are read in (dot_heads). */
#define DOT_STREAMS 4

/* One head against a block of NACC rows of a cheap format (f32, f16) from
 * DOT_STREAMS streams: P = NACC / DOT_STREAMS consecutive rows of each,
 * row r of the block row r % P of stream r / P, at base + (r / P) *
 * sstride + (r % P) * stride, its score at out[(r / P) * sld + r % P].
 * dot_block's sums in dot_block's order (chunk c in chain c % 4 while whole
 * groups of four last, the rest in chain 0, the chains added in turn), so
 * the same bits; called with a constant n, the block's rows are unrolled
 * and scheduled together: 65536 cold rows of 128 values on the AVX2 EPYC
 * took 0.96 of dot_block's time in f32, 0.93 in f16 (61 alternating calls,
 * medians, two runs). */
INLINE void dot_block_streams(ChunkFn chunk, float *out, size_t ld, const float *q, const unsigned char *base,
                              size_t stride, size_t sstride, size_t sld, size_t n)
{
    const size_t P = NACC / DOT_STREAMS, grouped = n / (4 * W) * 4, whole = n / W;
    V part[NACC];
    UNROLL_16
    for (size_t r = 0; r < NACC; r++) {
        const Row row = row_of(base + r / P * sstride + r % P * stride, n, 0);
        V acc[4] = { v_zero(), v_zero(), v_zero(), v_zero() };
        UNROLL_16
        for (size_t c = 0; c < whole; c++) {
            const size_t k = c < grouped ? c % 4 : 0;
            acc[k] = v_fma(v_load(q + c * W), chunk(&row, c * W, W), acc[k]);
        }
        if (whole * W < n) /* the last chunk, partial */
            acc[0] = v_fma(v_load_part(q + whole * W, n % W), chunk(&row, whole * W, n % W), acc[0]);
        part[r] = v_add(v_add(v_add(acc[0], acc[1]), acc[2]), acc[3]);
    }
    dot_store(out, ld, part, 1, DOT_STREAMS, sld, NACC);
}

/* GB heads over all the rows, NACC / GB rows a block; NQ = 8: the rows are
 * 8 chunks and q stays in registers. One head's cheap rows (f32, f16) are
 * read as DOT_STREAMS streams side by side, each block NACC / 4 rows of
 * each of four equal spans of the run: one stream from one core reads
 * about 14 GB/s on an AVX2 EPYC, four about 20 (kvscope bench's read
 * loops), and a cold f32 dot of 65536 rows took 0.84 to 0.88 of its time
 * in one stream (f16 0.84 to 0.87; alternating calls, medians). A row's
 * score does not depend on the block it is in (v_reduce adds every slot's
 * lanes in the same order), so the scores are the one-stream ones bit for
 * bit. */
INLINE void dot_heads(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB, const size_t NQ,
                      const int per_row_scale, const int cheap, float *out, size_t ld, const float *q,
                      const unsigned char *rows, size_t stride, size_t n_rows, size_t n)
{
    const size_t RB = NACC / GB;
    size_t r = 0;
    if (!NQ && cheap && GB == 1 && n_rows >= DOT_STREAMS * RB) { /* whole blocks from the four spans */
        const size_t P = RB / DOT_STREAMS, span = n_rows / DOT_STREAMS / P * P;
        for (; r < span; r += P)
            if (n == 16 * W) /* 16 chunks (128 values on AVX2): a constant, the rows written out */
                dot_block_streams(chunk, out + r, ld, q, rows + r * stride, stride, span * stride, span, 16 * W);
            else
                dot_block_streams(chunk, out + r, ld, q, rows + r * stride, stride, span * stride, span, n);
        r = span * DOT_STREAMS; /* the rest, fewer than NACC rows, in one stream */
    }
    for (; r < n_rows; r += RB) {
        const size_t nr = n_rows - r < RB ? n_rows - r : RB;
        if (NQ)
            dot_block_q(chunk, raw, scale, BC, GB, NQ, per_row_scale, out + r, ld, q, rows + r * stride, stride, nr);
        else
            dot_block(chunk, raw, scale, BC, GB, per_row_scale, cheap, out + r, ld, q, rows + r * stride, stride, nr,
                      n);
    }
}

/* Rows per pass of the heads' blocks: a block after the first reads them
 * again from cache, not from memory (a flash tile). */
#define PASS_ROWS 64

/* The heads in blocks of 4, 2 or 1, PASS_ROWS rows at a time. Rows of 8
 * chunks (and rows enough to pay for loading q): blocks of NACC / 8 heads
 * with q in registers, where the format is cheap or the group that small
 * (else a quantized row would be decoded once per block, not once). */
INLINE void dot_tile(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const int per_row_scale, const int cheap,
                     float *out, size_t ld, const float *q, size_t G, const void *rows, size_t stride, size_t n_rows,
                     size_t n)
{
    const size_t GQ = NACC / 8; /* heads whose q fits the registers */
    const int qreg = n == 8 * W && n_rows >= 4 && (cheap || G <= GQ);
    if (cheap && !qreg && G == 1) { /* one block of heads: no passes, the run in streams */
        dot_heads(chunk, raw, scale, BC, 1, 0, per_row_scale, cheap, out, ld, q, rows, stride, n_rows, n);
        return;
    }
    for (size_t r = 0; r < n_rows; r += PASS_ROWS) {
        const unsigned char *p = (const unsigned char *)rows + r * stride;
        const size_t nr = n_rows - r < PASS_ROWS ? n_rows - r : PASS_ROWS;
        for (size_t g = 0; g < G;) {
            const size_t left = G - g;
            float *o = out + g * ld + r;
            const float *qg = q + g * n;
            if (qreg && GQ >= 2 && left >= 2) { /* a constant GB per call: see UNROLL_16 */
                dot_heads(chunk, raw, scale, BC, 2, 8, per_row_scale, cheap, o, ld, qg, p, stride, nr, n);
                g += 2;
            } else if (qreg) {
                dot_heads(chunk, raw, scale, BC, 1, 8, per_row_scale, cheap, o, ld, qg, p, stride, nr, n);
                g += 1;
            } else if (left >= 4) {
                dot_heads(chunk, raw, scale, BC, 4, 0, per_row_scale, cheap, o, ld, qg, p, stride, nr, n);
                g += 4;
            } else if (left >= 2) {
                dot_heads(chunk, raw, scale, BC, 2, 0, per_row_scale, cheap, o, ld, qg, p, stride, nr, n);
                g += 2;
            } else {
                dot_heads(chunk, raw, scale, BC, 1, 0, per_row_scale, cheap, o, ld, qg, p, stride, nr, n);
                g += 1;
            }
        }
    }
}

/* GB heads x nc <= CB chunks of W values from value i0 on (GB * CB <=
 * NACC accumulators, registers): acc[g * n + i0 ..] += sum_r w[g * ld + r]
 * * decode(row r)[i0 ..], the accumulators loaded once and stored once for
 * all the rows. The last chunk has m lanes. Called with nc = CB and m = W as
 * constants for the bulk of a row, with what is left at its end. pf_bytes
 * (a row's first part, where it is read in parts; else 0): the row's bytes
 * from its second line up to pf_bytes are prefetched, so that memory sees
 * whole rows in order, not every row's first part, then every row's second.
 *
 * Whole blocks of a block-scaled format (BC) add the codes times w * the
 * block's scale: one multiply per block and head instead of one per value. */
INLINE void axpy_block(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB,
                       const size_t CB, const int per_row_scale, size_t pf_bytes, float *acc, const float *w,
                       size_t ld, const unsigned char *rows, size_t stride, size_t n_rows, size_t n, size_t i0,
                       size_t nc, size_t m)
{
    const int split = BC && CB % (BC ? BC : 1) == 0 && nc == CB && m == W;
    const int fold = !BC && raw && nc == CB && m == W; /* a row-scaled format: its scale goes into w */
    V a[NACC], wv[4];
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < CB; c++) {
            const float *p = acc + g * n + i0 + c * W;
            a[g * CB + c] = c >= nc ? v_zero() : c + 1 < nc ? v_load(p) : v_load_part(p, m);
        }
    for (size_t r = 0; r < n_rows; r++) {
        const Row row = row_of(rows + r * stride, n, per_row_scale);
        for (size_t o = 64; o < pf_bytes; o += 64) /* the first line is being read */
            __builtin_prefetch(rows + r * stride + o);
        UNROLL_16
        for (size_t g = 0; g < GB; g++)
            wv[g] = fold ? v_mul(v_set1(w[g * ld + r]), scale(&row, 0)) : v_set1(w[g * ld + r]);
        if (split) {
            V wd[4];
            UNROLL_16
            for (size_t c = 0; c < CB; c++) {
                if (c % (BC ? BC : 1) == 0) { /* a block's first chunk (no % 0) */
                    const V d = scale(&row, i0 + c * W);
                    UNROLL_16
                    for (size_t g = 0; g < GB; g++)
                        wd[g] = v_mul(wv[g], d);
                }
                const V v = raw(&row, i0 + c * W);
                UNROLL_16
                for (size_t g = 0; g < GB; g++)
                    a[g * CB + c] = v_fma(wd[g], v, a[g * CB + c]);
            }
            continue;
        }
        UNROLL_16
        for (size_t c = 0; c < CB; c++) {
            if (c >= nc)
                break;
            const V v = fold ? raw(&row, i0 + c * W) : chunk(&row, i0 + c * W, c + 1 < nc ? W : m);
            UNROLL_16
            for (size_t g = 0; g < GB; g++)
                a[g * CB + c] = v_fma(wv[g], v, a[g * CB + c]);
        }
    }
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < CB && c < nc; c++) {
            float *p = acc + g * n + i0 + c * W;
            if (c + 1 < nc)
                v_store(p, a[g * CB + c]);
            else
                v_store_part(p, a[g * CB + c], m);
        }
}

/* Chunks of an axpy block of GB heads: at most 8 (128 values on AVX-512),
 * so that rows of 8 chunks take the constant block, not the rest's. */
#define AXPY_CHUNKS(GB) (NACC / (GB) < 8 ? NACC / (GB) : 8)

/* GB heads over the whole row length: blocks of CB chunks, then the rest;
 * pf_bytes: axpy_block's, for the first. */
INLINE void axpy_heads(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB,
                       const int per_row_scale, size_t pf_bytes, float *acc, const float *w, size_t ld,
                       const unsigned char *rows, size_t stride, size_t n_rows, size_t n)
{
    const size_t CB = AXPY_CHUNKS(GB);
    size_t i = 0;
    if (n >= CB * W) { /* i0 = 0 a constant: a block's chunks then share its scale's load */
        axpy_block(chunk, raw, scale, BC, GB, CB, per_row_scale, n > CB * W ? pf_bytes : 0, acc, w, ld, rows, stride,
                   n_rows, n, 0, CB, W);
        i = CB * W;
    }
    for (; i + CB * W <= n; i += CB * W)
        axpy_block(chunk, raw, scale, BC, GB, CB, per_row_scale, 0, acc, w, ld, rows, stride, n_rows, n, i, CB, W);
    if (i < n) {
        const size_t nc = (n - i + W - 1) / W;
        axpy_block(chunk, raw, scale, BC, GB, CB, per_row_scale, 0, acc, w, ld, rows, stride, n_rows, n, i, nc,
                   n - i - (nc - 1) * W);
    }
}

#ifndef AXPY_CHEAP_PARTS
#define AXPY_CHEAP_PARTS 0
#endif

/* The heads in blocks of 4, 2 or 1, PASS_ROWS rows at a time: of 4 for
 * quantized rows (decoded once for 4 heads), of as many as whole rows allow
 * for cheap ones, or with AXPY_CHEAP_PARTS of 4 for them too, each row
 * prefetched whole by its first part. On the AVX2 EPYC, 65536 cold rows of
 * 128 values (alternating calls, medians of 61): 4 heads f32 0.85 to 0.92
 * of the time, f16 0.87 to 0.97 (three runs each); 8 heads 0.86 and 0.88,
 * 2 heads 0.98 and 0.95. Without the prefetch f32 took 1.66 times as long
 * at 4 heads: the rows' first parts came from memory, then their second. */
INLINE void axpy_tile(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const int per_row_scale,
                      const size_t cheap, float *acc, const float *w, size_t ld, size_t G, const void *rows,
                      size_t stride, size_t n_rows, size_t n)
{
    const size_t chunks = (n + W - 1) / W;
    const size_t gmax = !cheap || AXPY_CHEAP_PARTS || chunks <= AXPY_CHUNKS(4) ? 4
                        : chunks <= AXPY_CHUNKS(2)                           ? 2
                                                                             : 1;
    const size_t pf_bytes = AXPY_CHEAP_PARTS ? cheap * n : 0; /* blocks of heads only: one head's rows gained nothing */
    for (size_t r = 0; r < n_rows; r += PASS_ROWS) {
        const unsigned char *p = (const unsigned char *)rows + r * stride;
        const size_t nr = n_rows - r < PASS_ROWS ? n_rows - r : PASS_ROWS;
        for (size_t g = 0; g < G;) {
            const size_t left = G - g;
            float *a = acc + g * n;
            const float *wg = w + g * ld + r;
            if (left >= 4 && gmax >= 4) { /* a constant GB per call */
                axpy_heads(chunk, raw, scale, BC, 4, per_row_scale, pf_bytes, a, wg, ld, p, stride, nr, n);
                g += 4;
            } else if (left >= 2 && gmax >= 2) {
                axpy_heads(chunk, raw, scale, BC, 2, per_row_scale, pf_bytes, a, wg, ld, p, stride, nr, n);
                g += 2;
            } else {
                axpy_heads(chunk, raw, scale, BC, 1, per_row_scale, 0, a, wg, ld, p, stride, nr, n);
                g += 1;
            }
        }
    }
}

/* The operations of one format: fmt its name, per_row_scale whether rows
 * carry an fp16 scale after their words (int4: 1, fp4: 2; row_of), cheap
 * the bytes of a value where decoding is a load (f32 4, f16 2), else 0, raw,
 * scale and bc the split (dot, axpy) of a
 * block-scaled format (PartFn), or NULL, NULL, 0. The per-row forms are
 * tiles of one row. */
#define CODEC_TILE_OPS_(fmt, per_row_scale, cheap, raw, scale, bc)                                          \
    static void dequantize_##fmt(float *dst, const void *row, size_t n)                                     \
    {                                                                                                       \
        const Row r = row_of(row, n, per_row_scale);                                                        \
        dequantize_row(chunk_##fmt, dst, &r, n);                                                            \
    }                                                                                                       \
    static void dot_rows_##fmt(float *out, size_t ld, const float *q, size_t G, const void *rows,           \
                               size_t stride, size_t n_rows, size_t n)                                      \
    {                                                                                                       \
        dot_tile(chunk_##fmt, raw, scale, bc, per_row_scale, cheap, out, ld, q, G, rows, stride, n_rows, n); \
    }                                                                                                       \
    static void axpy_rows_##fmt(float *acc, const float *w, size_t ld, size_t G, const void *rows,          \
                                size_t stride, size_t n_rows, size_t n)                                     \
    {                                                                                                       \
        axpy_tile(chunk_##fmt, raw, scale, bc, per_row_scale, cheap, acc, w, ld, G, rows, stride, n_rows, n); \
    }                                                                                                       \
    static void dot_##fmt(float *out, const float *q, size_t G, const void *row, size_t n)                  \
    {                                                                                                       \
        dot_rows_##fmt(out, 1, q, G, row, 0, 1, n);                                                         \
    }                                                                                                       \
    static void axpy_##fmt(float *acc, const float *w, size_t G, const void *row, size_t n)                 \
    {                                                                                                       \
        axpy_rows_##fmt(acc, w, 1, G, row, 0, 1, n);                                                        \
    }

#define CODEC_TILE_OPS(fmt, per_row_scale, cheap) CODEC_TILE_OPS_(fmt, per_row_scale, cheap, NULL, NULL, 0)
/* A block-scaled format: bc chunks a block, decoded by raw_<fmt> and scale_<fmt>. */
#define CODEC_TILE_OPS_SPLIT(fmt, bc) CODEC_TILE_OPS_(fmt, 0, 0, raw_##fmt, scale_##fmt, bc)

CODEC_TILE_OPS(f32, 0, 4)
CODEC_TILE_OPS(f16, 0, 2)
CODEC_TILE_OPS_SPLIT(q8_0, QK8_0 / W)
CODEC_TILE_OPS_SPLIT(q4_0, QK4_0 / W)
#if ROW_SCALE_PARTS /* the ISA gives raw_<fmt> and scale_<fmt> of int4 and fp4 too */
CODEC_TILE_OPS_(int4, 1, 0, raw_int4, scale_int4, 0)
CODEC_TILE_OPS_(fp4, 2, 0, raw_fp4, scale_fp4, 0)
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
