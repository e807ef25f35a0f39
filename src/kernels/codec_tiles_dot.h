/* codec_tiles_dot.h: the dot skeletons of codec_tiles.h (q . decode(row) for
 * GB heads over a run of rows), included by it alone; codec_tiles.h says
 * what the including ISA file defines and how the forms were chosen. */

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

/* GB heads x nr <= NACC / GB rows: out[g * ld + r] = q[g * n ..] .
 * decode(row r), row r at base + r * stride, or with S streams (dot_heads)
 * row r % P of stream r / P, at base + (r / P) * sstride + (r % P) * stride,
 * its score at out[(r / P) * sld + r % P] (P = NACC / GB / S); a row's sum
 * does not depend on S. The rows are read one after the other, each
 * chunk decoded once for the GB heads (q from L1); NS chunks in flight per
 * head keep a long row from being bound by the FMA latency: 4 for one head;
 * for GB heads up to NACC / GB (at most 4) where decoding is a load
 * (cheap). AVX2 f32, 4 heads, rows of 128 values from L2: 29 ns a row with
 * one in flight (a head's 16 FMAs waiting on each other), 21 ns with two.
 * Other decoders need registers of their own: 2 or 1 there (int4 and fp4
 * gained nothing from more, q8_0 lost). */
INLINE void dot_block(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB,
                      const int per_row_scale, const int cheap, float *out, size_t ld, const float *q,
                      const unsigned char *base, size_t stride, size_t nr, size_t n, const size_t S, size_t sstride,
                      size_t sld)
{
    const size_t RB = NACC / GB, P = RB / S, NS = GB == 1 ? 4 : cheap ? (RB < 4 ? RB : 4) : GB == 2 ? 2 : 1;
    V part[NACC];
#pragma GCC unroll 1
    for (size_t r = 0; r < nr; r++) {
        const Row row = row_of(base + r / P * sstride + r % P * stride, n, per_row_scale);
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
    dot_store(out, ld, part, GB, S, sld, nr);
}

/* dot_block for rows of exactly NC chunks (n = NC * W, GB * NC <= NACC): q
 * loaded into registers once for the block, a row then costs its own loads
 * only. */
INLINE void dot_block_q(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB, const size_t NC,
                        const int per_row_scale, float *out, size_t ld, const float *q, const unsigned char *base,
                        size_t stride, size_t nr, const size_t S, size_t sstride, size_t sld)
{
    const size_t n = NC * W, RB = NACC / GB, P = RB / S;
    V qr[NACC], part[NACC];
    UNROLL_16
    for (size_t g = 0; g < GB; g++)
        UNROLL_16
        for (size_t c = 0; c < NC; c++)
            qr[g * NC + c] = v_load(q + g * n + c * W);
#pragma GCC unroll 1
    for (size_t r = 0; r < nr; r++) {
        const Row row = row_of(base + r / P * sstride + r % P * stride, n, per_row_scale);
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
    dot_store(out, ld, part, GB, S, sld, nr);
}

/* Streams a run's rows are read in where its heads are one block (dot_heads). */
#define DOT_STREAMS 4
/* Bytes ahead in each stream the rows prefetch (0: none; codec_avx512.c).
 * A stream's bytes are its rows' span, stride apart: where rows lie
 * farther apart than their bytes, the gaps are prefetched too. */
#ifndef DOT_STREAMS_AHEAD
#define DOT_STREAMS_AHEAD 0
#endif

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

/* Rows of a cheap format as long as a weight matrix's (more than 16
 * chunks) where the registers hold four rows' four chains (NACC 16, the
 * AVX-512 codec sets DOT_STREAM_ROWS 4): dot_block_streams with a row from
 * each stream read side by side, chunk by chunk, so four rows' reads are in
 * flight and each chunk of q is loaded once for the four. A row's sums in
 * dot_block_streams' order (chunk c in chain c % 4 while whole groups of
 * four last, the rest in chain 0, the chains added in turn): the same
 * bits. */
#ifndef DOT_STREAM_ROWS
#define DOT_STREAM_ROWS 1
#endif
#ifndef DOT_LONG_AHEAD
#define DOT_LONG_AHEAD 1024 /* bytes each stream of long rows prefetches ahead of its reads */
#endif
INLINE void dot_block_streams4(ChunkFn chunk, float *out, size_t ld, const float *q, const unsigned char *base,
                               size_t stride, size_t sstride, size_t sld, size_t n)
{
    const size_t P = NACC / DOT_STREAMS, grouped = n / (4 * W) * 4, whole = n / W;
    const size_t vb = stride / n; /* bytes a value (f32 4, f16 2) */
    V part[NACC];
#pragma GCC unroll 1
    for (size_t i = 0; i < P; i++) { /* row i of each stream: block rows s * P + i */
        Row row[DOT_STREAMS];
        V acc[DOT_STREAMS][4];
        UNROLL_16
        for (size_t s = 0; s < DOT_STREAMS; s++) {
            row[s] = row_of(base + s * sstride + i * stride, n, 0);
            acc[s][0] = acc[s][1] = acc[s][2] = acc[s][3] = v_zero();
        }
        size_t c = 0;
#pragma GCC unroll 1
        for (; c < grouped; c += 4) {
            for (size_t s = 0; DOT_LONG_AHEAD && s < DOT_STREAMS; s++) /* a line each two chunks of f16 */
                for (size_t o = 0; o < 4 * W * vb; o += 64)
                    __builtin_prefetch(base + s * sstride + i * stride + c * W * vb + DOT_LONG_AHEAD + o);
            UNROLL_16
            for (size_t k = 0; k < 4; k++) {
                const V qv = v_load(q + (c + k) * W);
                UNROLL_16
                for (size_t s = 0; s < DOT_STREAMS; s++)
                    acc[s][k] = v_fma(qv, chunk(&row[s], (c + k) * W, W), acc[s][k]);
            }
        }
        for (; c < whole; c++) {
            const V qv = v_load(q + c * W);
            UNROLL_16
            for (size_t s = 0; s < DOT_STREAMS; s++)
                acc[s][0] = v_fma(qv, chunk(&row[s], c * W, W), acc[s][0]);
        }
        if (whole * W < n) { /* the last chunk, partial */
            const V qv = v_load_part(q + whole * W, n % W);
            UNROLL_16
            for (size_t s = 0; s < DOT_STREAMS; s++)
                acc[s][0] = v_fma(qv, chunk(&row[s], whole * W, n % W), acc[s][0]);
        }
        UNROLL_16
        for (size_t s = 0; s < DOT_STREAMS; s++)
            part[s * P + i] = v_add(v_add(v_add(acc[s][0], acc[s][1]), acc[s][2]), acc[s][3]);
    }
    dot_store(out, ld, part, 1, DOT_STREAMS, sld, NACC);
}

/* A block of nr rows for GB heads in the form GB and NQ choose: q in
 * registers (dot_block_q), or dot_block with a row of 8 chunks as a
 * constant (its blocks unrolled at fixed offsets); S, sstride, sld: their
 * streams. */
INLINE void dot_rows_block(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB,
                           const size_t NQ, const int per_row_scale, const int cheap, float *out, size_t ld,
                           const float *q, const unsigned char *base, size_t stride, size_t nr, size_t n,
                           const size_t S, size_t sstride, size_t sld)
{
    if (NQ)
        dot_block_q(chunk, raw, scale, BC, GB, NQ, per_row_scale, out, ld, q, base, stride, nr, S, sstride, sld);
    else if (n == 8 * W)
        dot_block(chunk, raw, scale, BC, GB, per_row_scale, cheap, out, ld, q, base, stride, nr, 8 * W, S, sstride,
                  sld);
    else
        dot_block(chunk, raw, scale, BC, GB, per_row_scale, cheap, out, ld, q, base, stride, nr, n, S, sstride, sld);
}

/* GB heads over all the rows, NACC / GB rows a block; NQ = 8: the rows are 8
 * chunks and q stays in registers; the rows of ahead (or none) are
 * prefetched a block at a time. With streams (never with rows ahead) the
 * rows are read as DOT_STREAMS streams side by side, each block NACC / GB
 * / 4 rows of each of four equal spans of the run: one stream from one
 * core reads about 14 GB/s on an AVX2 EPYC, four about 20 (kvscope bench's
 * read loops), and a cold f32 dot of 65536 rows took 0.84 to 0.88 of its
 * time in one stream (f16 0.84 to 0.87; alternating calls, medians). A
 * row's score does not depend on the block it is in (v_reduce adds every
 * slot's lanes in the same order), so the scores are the one-stream ones
 * bit for bit. */
INLINE void dot_heads(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB, const size_t NQ,
                      const int per_row_scale, const int cheap, const int streams, float *out, size_t ld,
                      const float *q, const unsigned char *rows, size_t stride, size_t n_rows, size_t n,
                      const RowsAhead *ahead)
{
    const size_t RB = NACC / GB, S = DOT_STREAMS;
    size_t r = 0;
    if (streams && RB >= S && n_rows >= S * RB) { /* whole blocks from the four spans */
        const size_t P = RB / S, span = n_rows / S / P * P, ss = span * stride;
        for (; r < span; r += P) {
            const unsigned char *b = rows + r * stride;
            const int long_rows = cheap && GB == 1 && DOT_STREAM_ROWS == 4 && n > 16 * W; /* a weight matrix's */
            for (size_t s = 0; DOT_STREAMS_AHEAD && !long_rows && s < S; s++) /* each stream's bytes DOT_STREAMS_AHEAD on */
                for (size_t o = 0; o < P * stride; o += 64)
                    __builtin_prefetch(b + s * ss + DOT_STREAMS_AHEAD + o);
            if (cheap && GB == 1 && n == 16 * W) /* 16 chunks (128 values on AVX2): the rows written out */
                dot_block_streams(chunk, out + r, ld, q, b, stride, ss, span, 16 * W);
            else if (cheap && GB == 1 && n == 8 * W) /* 128 values on AVX-512, 64 on AVX2 */
                dot_block_streams(chunk, out + r, ld, q, b, stride, ss, span, 8 * W);
            else if (long_rows)
                dot_block_streams4(chunk, out + r, ld, q, b, stride, ss, span, n);
            else if (cheap && GB == 1)
                dot_block_streams(chunk, out + r, ld, q, b, stride, ss, span, n);
            else
                dot_rows_block(chunk, raw, scale, BC, GB, NQ, per_row_scale, cheap, out + r, ld, q, b, stride, RB, n,
                               S, ss, span);
        }
        r = span * S; /* the rest, fewer than NACC / GB rows, in one stream */
    }
    for (; r < n_rows; r += RB) {
        const size_t nr = n_rows - r < RB ? n_rows - r : RB;
        const unsigned char *b = rows + r * stride;
        rows_ahead_prefetch(ahead, r, nr); /* a block's worth at a time: their misses meet its work */
        dot_rows_block(chunk, raw, scale, BC, GB, NQ, per_row_scale, cheap, out + r, ld, q, b, stride, nr, n, 1, 0,
                       0);
    }
}


#ifndef DOT_AHEAD
#define DOT_AHEAD 0
#endif
#ifndef DOT_KEYS_AHEAD
#define DOT_KEYS_AHEAD 0
#endif
#ifndef GROUP_STREAMS
#define GROUP_STREAMS 0
#endif

/* Whether G heads' rows are read in streams: one head's cheap rows always;
 * with GROUP_STREAMS every format's where G is 1, 2 or 4 (the heads then
 * one block). The run is one pass, the rows ahead not prefetched. */
INLINE int group_streams(int cheap, size_t G)
{
    return (cheap && G == 1) || (GROUP_STREAMS && (G == 1 || G == 2 || G == 4));
}

/* The heads in blocks of 4, 2 or 1, PASS_ROWS rows at a time. Rows of 8
 * chunks (and rows enough to pay for loading q): blocks of NACC / 8 heads
 * with q in registers, where the format is cheap or the group that small
 * (else a quantized row would be decoded once per block, not once).
 * With DOT_AHEAD the first block of heads of each pass prefetches the
 * pass's rows of ahead, where scoring is bound by computation (rows to
 * decode; with DOT_AHEAD 2, G > 1 too): the value rows then come in while
 * the keys are scored. One head's cheap rows are read as fast as memory
 * goes: never there. On AVX-512, cheap rows with G = 4 were too (flash
 * steps, cold, 65536 rows, alternating: f32 1.05 to 1.08 of the time
 * with their prefetch, f16 0.95 to 0.97), and there the value rows now
 * prefetch their own (codec_avx512.c). One head's cheap rows
 * go in streams (dot_heads), rows of 8 chunks too: with q in registers
 * but one stream, 65536 cold rows of 128 values on an AVX-512 Xeon took
 * 1.36x the streams' time in f16 and 1.08x in f32 (rows of 64 values on
 * AVX2: 1.31x and 1.13x; 31 alternating calls, medians). Where no rows
 * ahead are prefetched, a group's cheap rows can prefetch their own,
 * DOT_KEYS_AHEAD rows on (codec_avx512.c). Where the G heads are read in
 * streams (group_streams), they are one block and the run one pass. */
INLINE void dot_tile(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const int per_row_scale, const int cheap,
                     float *out, size_t ld, const float *q, size_t G, const void *rows, size_t stride, size_t n_rows,
                     size_t n, const RowsAhead *ahead)
{
    const size_t GQ = NACC / 8; /* heads whose q fits the registers */
    const int streams = group_streams(cheap, G);
    /* q in registers, whatever the rows: a cut run must sum as the whole
     * (not one head's cheap rows, whose streams load it, nor a group in
     * streams that would then be two blocks) */
    const int qreg = n == 8 * W && (cheap ? G > 1 : G <= GQ) && !(streams && G > GQ);
    const size_t pass_rows = streams ? n_rows : PASS_ROWS;
    for (size_t r = 0; r < n_rows; r += pass_rows) {
        const unsigned char *p = (const unsigned char *)rows + r * stride;
        const size_t nr = n_rows - r < pass_rows ? n_rows - r : pass_rows;
        const int pf = !streams && ahead && (DOT_AHEAD >= 2 ? G > 1 || !cheap : DOT_AHEAD == 1 && !cheap);
        const int keys = !pf && !streams && cheap && G > 1 && DOT_KEYS_AHEAD > 0; /* else the keys' own rows on */
        const RowsAhead pass = pf     ? (RowsAhead){ (const unsigned char *)ahead->rows + r * ahead->stride,
                                                     ahead->stride, ahead->bytes }
                               : keys ? (RowsAhead){ p + DOT_KEYS_AHEAD * stride, stride, cheap * n }
                                      : (RowsAhead){ NULL, 0, 0 };
        for (size_t g = 0; g < G;) {
            const size_t left = G - g;
            float *o = out + g * ld + r;
            const float *qg = q + g * n;
            const RowsAhead *pg = (pf || keys) && g == 0 ? &pass : NULL;
            if (qreg && GQ >= 2 && left >= 2) { /* a constant GB per call: see UNROLL_16 */
                dot_heads(chunk, raw, scale, BC, 2, 8, per_row_scale, cheap, streams, o, ld, qg, p, stride, nr, n, pg);
                g += 2;
            } else if (qreg) {
                dot_heads(chunk, raw, scale, BC, 1, 8, per_row_scale, cheap, streams, o, ld, qg, p, stride, nr, n, pg);
                g += 1;
            } else if (left >= 4) {
                dot_heads(chunk, raw, scale, BC, 4, 0, per_row_scale, cheap, streams, o, ld, qg, p, stride, nr, n, pg);
                g += 4;
            } else if (left >= 2) {
                dot_heads(chunk, raw, scale, BC, 2, 0, per_row_scale, cheap, streams, o, ld, qg, p, stride, nr, n, pg);
                g += 2;
            } else {
                dot_heads(chunk, raw, scale, BC, 1, 0, per_row_scale, cheap, streams, o, ld, qg, p, stride, nr, n, pg);
                g += 1;
            }
        }
    }
}
