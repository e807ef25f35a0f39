/* attend_flash.c: attention in tiles with an online softmax (the Marlin design).
 *
 * The rows are consumed ATTEND_TILE at a time. For each tile, the scores are
 * computed, the running max m of each head is raised if needed, what was
 * accumulated so far is rescaled by exp(m_old - m_new), and the tile's rows
 * are added in with weights exp(s - m_new). Nothing of size "all rows" is
 * ever held, and each quantized row is decoded in registers by its codec
 * where it is read: no f32 copy of the cache exists at any point.
 *
 * A tile is one call of the format's tile operations per contiguous run of
 * rows (a tile may span blocks: one run per block it touches): dot_rows for
 * the scores of all G heads, axpy_rows for the weighted sum, so the queries
 * and the accumulators stay in registers across the run's rows (codec.h).
 * The softmax works on the tile's scores, G x ATTEND_TILE, with the
 * vectorised Kernels.exp_sum. Tiles are cut by position alone, not by
 * blocks, so a paged cache gives the contiguous one's result bit for bit.
 * With AttnArgs.iv (--int-dot), 4-bit values (iaxpy_takes) are added
 * with 16-bit integer weights in parts of ATTEND_IV_ROWS rows, cut by
 * position too (add_part_int).
 *
 * Why tiles of 1024 rows and not the Marlin design's 64 (kernels.h): a tile reads
 * its K rows, then its V rows, and each switch restarts a stream from
 * memory. At 64 rows that cost flash up to 2x over naive on the formats
 * bound by computation (q8_0, cold, 65536 rows: 1.1 to 2.6 ms against
 * naive's 1.1 to 1.4, depending on what else the machine ran); at 1024 it
 * runs within a few percent of naive. A tile's scores, 4 KiB a head, stay
 * in L1. */
#include <math.h>
#include <string.h>

#include "kernels/attend_rows.h"

/* A run of consecutive rows of one block, inside a tile. */
typedef struct {
    const void *k, *v;
    size_t k_stride, v_stride, n;
    Format k_fmt, v_fmt;
    const unsigned short *k_chan; /* per-channel keys: the block's scales and minimums */
    size_t pos;                   /* position of the run's first row */
} Run;

/* Where the next visible row is: block b, from its row r on. */
typedef struct {
    size_t b, r;
} Cursor;

/* The next run of at most *left visible rows from *c; advances both. The
 * caller knows that *left (> 0) visible rows remain. */
static Run next_run(const AttnArgs *a, size_t qpos, Cursor *c, size_t *left)
{
    for (;; c->b++, c->r = 0) {
        const KvBlock *blk = &a->blocks[c->b];
        size_t lo, hi;
        attend_visible(a, blk, qpos, &lo, &hi);
        const size_t r = c->r > lo ? c->r : lo;
        if (r >= hi)
            continue;
        const size_t take = hi - r < *left ? hi - r : *left;
        c->r = r + take;
        *left -= take;
        return (Run){ attend_row(blk->k, blk->k_stride, r), attend_row(blk->v, blk->v_stride, r), blk->k_stride,
                      blk->v_stride, take, blk->k_fmt, blk->v_fmt, blk->k_chan, blk->pos + r };
    }
}

/* to_int[g]: the factor that rounds head g's weights, at most maxw[g], times
 * scales of magnitude at most dbound to 16 bits unclamped (IAxpyFn); 0 while
 * no bound is known (every weight then rounds to 0). */
static void rounding_factors(float *to_int, const float *maxw, float dbound, size_t G)
{
    for (size_t g = 0; g < G; g++) {
        to_int[g] = 32767.0f / (maxw[g] * dbound);
        if (isinf(to_int[g]) || isnan(to_int[g])) /* no bound yet, or the weights are 0 or next to it */
            to_int[g] = 0.0f;
    }
}

/* The part's n V rows from *c on (*c moves past them): those iaxpy_takes
 * into sums with the factors to_int (their largest scale into *dmax), the
 * others, where acc is given, as floats into acc. */
static void add_runs(const Kernels *k, const AttnArgs *a, size_t qpos, Cursor *c, size_t n, const float *w,
                     size_t ld, const float *to_int, int32_t *sums, float *dmax, float *acc)
{
    const size_t G = a->group, hd = a->head_dim;
    memset(sums, 0, G * hd * sizeof *sums);
    for (size_t off = 0, left = n; left;) {
        const Run run = next_run(a, qpos, c, &left);
        if (iaxpy_takes(run.v_fmt))
            k->iaxpy(sums, dmax, w + off, ld, to_int, run.v_fmt, run.v, run.v_stride, run.n, G, hd);
        else if (acc)
            k->codec[run.v_fmt].axpy_rows(acc, w + off, ld, G, run.v, run.v_stride, run.n, hd);
        off += run.n;
    }
}

/* The n <= ATTEND_IV_ROWS V rows from *c on added into acc [G][hd] with the
 * weights w [G][ld] (AttnArgs.iv): the 4-bit ones (iaxpy_takes) in
 * integers, the others as floats. Each head's weights are rounded to 16
 * bits against its largest weight of the part times *dbound, the largest
 * scale of the rows seen so far; where the part holds a larger one, its
 * integer rows are added again with the raised bound (rarely, but for a
 * query's first part, where the kernel, its factors all 0, only reads the
 * scales). The part's sums, exact in int32 and cut by position, do not
 * depend on how its rows are cut into runs, so a paged cache gives the
 * contiguous one's result bit for bit. */
static void add_part_int(const Kernels *k, const AttnArgs *a, size_t qpos, Cursor *c, size_t n, const float *w,
                         size_t ld, float *acc, float *dbound)
{
    const size_t G = a->group, hd = a->head_dim;
    int32_t *sums = a->iv;
    float maxw[ATTEND_MAX_GROUP], to_int[ATTEND_MAX_GROUP], dmax = 0.0f;
    for (size_t g = 0; g < G; g++)
        maxw[g] = attend_max(w + g * ld, n);
    rounding_factors(to_int, maxw, *dbound, G);
    const Cursor start = *c;
    add_runs(k, a, qpos, c, n, w, ld, to_int, sums, &dmax, acc);
    if (dmax > *dbound) { /* some weights were clamped: again, the integer rows only */
        Cursor again = start;
        *dbound = dmax;
        rounding_factors(to_int, maxw, *dbound, G);
        add_runs(k, a, qpos, &again, n, w, ld, to_int, sums, &dmax, NULL);
    }
    for (size_t g = 0; g < G; g++) {
        if (to_int[g] == 0.0f) /* every weight was 0 */
            continue;
        const float unit = 1.0f / to_int[g]; /* what a weight of 1 stood for */
        for (size_t d = 0; d < hd; d += 8) /* hd a multiple of 32; in eights, so that it vectorises */
            for (size_t j = 0; j < 8; j++)
                acc[g * hd + d + j] += unit * (float)sums[g * hd + d + j];
    }
}

/* The tile's n V rows from *c on, in parts of ATTEND_IV_ROWS (cut by position,
 * as the tiles are). */
static void add_values_int(const Kernels *k, const AttnArgs *a, size_t qpos, Cursor *c, size_t n, size_t ld,
                           float *acc, float *dbound)
{
    for (size_t off = 0; off < n; off += ATTEND_IV_ROWS)
        add_part_int(k, a, qpos, c, n - off < ATTEND_IV_ROWS ? n - off : ATTEND_IV_ROWS, a->scores + off, ld, acc,
                     dbound);
}

/* Whether a tile's value rows are worth prefetching while its keys are
 * scored (codec.h's RowsAhead): where adding them waits on memory and the
 * codec does not prefetch them itself (AVX-512: codec_avx512.c). f32,
 * f16 and q8_0 values did (whole cold flash steps at 65536 rows on the AVX2
 * EPYC, alternating with steps without: 0.84 to 0.95 of the time where the
 * scoring computes, G = 4 or quantized keys). The 4-bit ones decode slower
 * than memory, or prefetch their own rows with integer weights: 0.94 to
 * 1.16 of the time with it, fp4 at G = 1 1.08 (`--int-dot` 1.16). */
static int values_wait_on_memory(const Kernels *k, Format v_fmt)
{
    return !k->values_prefetch_own && (v_fmt == FMT_F32 || v_fmt == FMT_F16 || v_fmt == FMT_Q8_0);
}

/* Fold the tile of n <= ld visible rows from *c on into the running state
 * of the group's heads, for the query q at qpos; *c moves past the tile.
 *   a->scores: scratch [G][ld]; m, l: [G] running max and sum; acc: [G][hd] */
static void fold_tile(const Kernels *k, const AttnArgs *a, const float *q, size_t qpos, Cursor *c, size_t n,
                      size_t ld, float *m, float *l, float *acc, float *dbound, Counters *ctr)
{
    const size_t G = a->group, hd = a->head_dim;
    const float scale = 1.0f / sqrtf((float)hd);
    float *s = a->scores;
    const Cursor start = *c;
    for (size_t off = 0, left = n; left;) {
        const Run run = next_run(a, qpos, c, &left);
        const RowsAhead values = { run.v, run.v_stride, format_row_bytes(run.v_fmt, hd) }; /* read after the scores */
        attend_score_rows(k, a, q, run.k_fmt, run.k_chan, run.k, run.k_stride, run.n, run.pos, qpos, s + off, ld,
                          values_wait_on_memory(k, run.v_fmt) ? &values : NULL);
        off += run.n;
    }
    for (size_t g = 0; g < G; g++) {
        float *sg = s + g * ld;
        const float tile_max = attend_scale_max(sg, n, scale);
        float m_new = tile_max > m[g] ? tile_max : m[g];
        float correction = expf(m[g] - m_new); /* 0 on the first tile: m = -inf */
        if (correction != 1.0f) {
            float *ag = acc + g * hd;
            for (size_t d = 0; d < hd; d++)
                ag[d] *= correction;
        }
        l[g] = l[g] * correction + k->exp_sum(sg, n, m_new);
        m[g] = m_new;
    }
    *c = start; /* the same rows again, their V */
    if (a->iv && hd % 32 == 0 && k->iaxpy) {
        add_values_int(k, a, qpos, c, n, ld, acc, dbound);
    } else {
        for (size_t off = 0, left = n; left;) {
            const Run run = next_run(a, qpos, c, &left);
            k->codec[run.v_fmt].axpy_rows(acc, s + off, ld, G, run.v, run.v_stride, run.n, hd);
            off += run.n;
        }
    }
    if (ctr)
        ctr->flops_softmax += (uint64_t)G * hd; /* the rescale */
}

/* Skip the first `skip` visible rows: where a part of the split form starts. */
static Cursor cursor_at(const AttnArgs *a, size_t qpos, size_t skip)
{
    Cursor c = { 0, 0 };
    while (skip)
        (void)next_run(a, qpos, &c, &skip);
    return c;
}

void attend_flash_part(const Kernels *k, const AttnArgs *a, size_t t, size_t first, size_t n, float *m, float *l,
                       float *acc, Counters *ctr)
{
    const size_t G = a->group, hd = a->head_dim, qpos = a->pos0 + t;
    const float *q = a->q + t * a->q_stride; /* [G][hd] */
    memset(acc, 0, G * hd * sizeof(float));
    for (size_t g = 0; g < G; g++) /* a learnt sink is a row with score z and no value: the first part starts there */
        m[g] = a->sink && first == 0 ? a->sink[g] : -INFINITY, l[g] = a->sink && first == 0 ? 1.0f : 0.0f;
    /* a tile never has more rows than the part: its share of the naive form's scratch suffices */
    const size_t ld = n < ATTEND_TILE ? n : ATTEND_TILE;
    Cursor c = cursor_at(a, qpos, first);
    float dbound = 0.0f; /* integer values: the largest scale of the V rows seen */
    for (size_t left = n; left;) {
        const size_t take = left < ld ? left : ld;
        fold_tile(k, a, q, qpos, &c, take, ld, m, l, acc, &dbound, ctr);
        left -= take;
    }
}

void attend_flash(const Kernels *k, const AttnArgs *a, Counters *ctr)
{
    const size_t hd = a->head_dim, G = a->group;
    float m[ATTEND_MAX_GROUP], l[ATTEND_MAX_GROUP];

    for (size_t t = 0; t < a->n_q; t++) {
        const size_t qpos = a->pos0 + t;
        float *acc = a->out + t * a->out_stride; /* [G][hd], accumulates in place */
        attend_round_query(k, a, a->q + t * a->q_stride);
        const size_t seen = attend_visible_count(a, qpos);
        attend_flash_part(k, a, t, 0, seen, m, l, acc, ctr);
        attend_count_read(ctr, a, qpos);
        for (size_t g = 0; g < G; g++) {
            float inv = 1.0f / l[g];
            for (size_t d = 0; d < hd; d++)
                acc[g * hd + d] *= inv;
        }
        attend_count(ctr, G, seen, hd);
    }
}
