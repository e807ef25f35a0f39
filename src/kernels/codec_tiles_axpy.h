/* codec_tiles_axpy.h: the axpy skeletons of codec_tiles.h (acc += w *
 * decode(row) for GB heads over a run of rows), included by it alone;
 * codec_tiles.h says what the including ISA file defines and how the forms
 * were chosen. */

/* GB heads x nc <= CB chunks of W values from value i0 on (GB * CB <=
 * NACC accumulators, registers): acc[g * n + i0 ..] += sum_r w[g * ld + r]
 * * decode(row r)[i0 ..], the accumulators loaded once and stored once for
 * all the rows. The last chunk has m lanes. Called with nc = CB and m = W as
 * constants for the bulk of a row, with what is left at its end. pf_bytes
 * (a row's first part, where it is read in parts; else 0): the row's bytes
 * from its second line up to pf_bytes are prefetched, so that memory sees
 * whole rows in order, not every row's first part, then every row's second.
 * ahead (rows, or 0): the row that many rows on is prefetched whole
 * (pf_bytes, then, its bytes), one row a row (axpy_tile says where).
 *
 * Whole blocks of a block-scaled format (BC) add the codes times w * the
 * block's scale: one multiply per block and head instead of one per value. */
INLINE void axpy_block(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB,
                       const size_t CB, const int per_row_scale, size_t pf_bytes, size_t ahead, float *acc,
                       const float *w, size_t ld, const unsigned char *rows, size_t stride, size_t n_rows, size_t n,
                       size_t i0, size_t nc, size_t m)
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
        for (size_t o = ahead ? 0 : 64; o < pf_bytes; o += 64) /* without ahead, the first line is being read */
            __builtin_prefetch(rows + (r + ahead) * stride + o);
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
 * pf_bytes and ahead: axpy_block's, for the first (pf_bytes only where the
 * row is read in parts, or ahead is given). */
INLINE void axpy_heads(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t GB,
                       const int per_row_scale, size_t pf_bytes, size_t ahead, float *acc, const float *w, size_t ld,
                       const unsigned char *rows, size_t stride, size_t n_rows, size_t n)
{
    const size_t CB = AXPY_CHUNKS(GB);
    size_t i = 0;
    if (n >= CB * W) { /* i0 = 0 a constant: a block's chunks then share its scale's load */
        axpy_block(chunk, raw, scale, BC, GB, CB, per_row_scale, n > CB * W || ahead ? pf_bytes : 0, ahead, acc, w, ld,
                   rows, stride, n_rows, n, 0, CB, W);
        i = CB * W;
    }
    for (; i + CB * W <= n; i += CB * W)
        axpy_block(chunk, raw, scale, BC, GB, CB, per_row_scale, 0, 0, acc, w, ld, rows, stride, n_rows, n, i, CB, W);
    if (i < n) {
        const size_t nc = (n - i + W - 1) / W;
        axpy_block(chunk, raw, scale, BC, GB, CB, per_row_scale, 0, 0, acc, w, ld, rows, stride, n_rows, n, i, nc,
                   n - i - (nc - 1) * W);
    }
}

#ifndef AXPY_CHEAP_PARTS
#define AXPY_CHEAP_PARTS 0
#endif
#ifndef AXPY_AHEAD
#define AXPY_AHEAD 0 /* rows ahead each cheap or block-scaled value row prefetches whole (axpy_tile); 0: none */
#endif

/* The heads in blocks of 4, 2 or 1, PASS_ROWS rows at a time: of 4 for
 * quantized rows (decoded once for 4 heads), of as many as whole rows allow
 * for cheap ones, or with AXPY_CHEAP_PARTS of 4 for them too, each row
 * prefetched whole by its first part. On the AVX2 EPYC, 65536 cold rows of
 * 128 values (alternating calls, medians of 61): 4 heads f32 0.85 to 0.92
 * of the time, f16 0.87 to 0.97 (three runs each); 8 heads 0.86 and 0.88,
 * 2 heads 0.98 and 0.95. Without the prefetch f32 took 1.66 times as long
 * at 4 heads: the rows' first parts came from memory, then their second.
 * With AXPY_AHEAD each cheap or block-scaled row (block_bytes a block of
 * BC chunks) prefetches a row that many rows on instead, in every block of
 * heads (codec_avx512.c says what it gave). */
INLINE void axpy_tile(ChunkFn chunk, PartFn raw, PartFn scale, const size_t BC, const size_t block_bytes,
                      const int per_row_scale, const size_t cheap, float *acc, const float *w, size_t ld, size_t G,
                      const void *rows, size_t stride, size_t n_rows, size_t n)
{
    const size_t chunks = (n + W - 1) / W;
    const size_t gmax = !cheap || AXPY_CHEAP_PARTS || chunks <= AXPY_CHUNKS(4) ? 4
                        : chunks <= AXPY_CHUNKS(2)                           ? 2
                                                                             : 1;
    const size_t row_bytes = cheap ? cheap * n : BC ? n / (BC * W) * block_bytes : 0;
    const size_t ahead = row_bytes ? AXPY_AHEAD : 0;
    /* one head's rows, without rows ahead, gained nothing from a prefetch (AVX2) */
    const size_t pf_bytes = ahead || (AXPY_CHEAP_PARTS && cheap) ? row_bytes : 0, pf_one = ahead ? pf_bytes : 0;
    for (size_t r = 0; r < n_rows; r += PASS_ROWS) {
        const unsigned char *p = (const unsigned char *)rows + r * stride;
        const size_t nr = n_rows - r < PASS_ROWS ? n_rows - r : PASS_ROWS;
        for (size_t g = 0; g < G;) {
            const size_t left = G - g;
            float *a = acc + g * n;
            const float *wg = w + g * ld + r;
            if (left >= 4 && gmax >= 4) { /* a constant GB per call */
                axpy_heads(chunk, raw, scale, BC, 4, per_row_scale, pf_bytes, ahead, a, wg, ld, p, stride, nr, n);
                g += 4;
            } else if (left >= 2 && gmax >= 2) {
                axpy_heads(chunk, raw, scale, BC, 2, per_row_scale, pf_bytes, ahead, a, wg, ld, p, stride, nr, n);
                g += 2;
            } else {
                axpy_heads(chunk, raw, scale, BC, 1, per_row_scale, pf_one, ahead, a, wg, ld, p, stride, nr, n);
                g += 1;
            }
        }
    }
}
