/* attend_split.h: split-K decode attention (flash-decoding).
 *
 * One query's visible rows are cut into parts, each part runs the flash
 * form on its own thread of the pool (util/pool.h) and leaves its partial
 * state: the running max m of its scores, the sum l of their exponentials
 * exp(s - m), and the weighted sum acc of its value rows, not normalized.
 * The parts are then merged exactly, by the log-sum-exp rule:
 *   M = max_p m_p,   out = sum_p e^(m_p - M) acc_p / sum_p e^(m_p - M) l_p,
 * which is what one pass over all rows computes, up to float rounding
 * (the tests hold it within 1e-6 of one-thread flash). It is the one place
 * kvscope splits a reduction across threads (DESIGN.md 3.0). */
#ifndef KVSCOPE_KERNELS_ATTEND_SPLIT_H
#define KVSCOPE_KERNELS_ATTEND_SPLIT_H

#include <stddef.h>

#include "kernels/kernels.h"

/* Fewest visible rows a part gets: below it the threads' hand-over costs
 * more than the rows. A multiple of ATTEND_IV_ROWS, so that the integer
 * value parts (AttnArgs.iv) are cut where one-thread flash cuts them. */
#define ATTEND_SPLIT_MIN_ROWS 256

/* The most parts a query is cut into. */
#define ATTEND_SPLIT_MAX_PARTS 64

/* The log-sum-exp merge of `parts` partial states of G heads of hd:
 * m, l [parts][G], acc [parts][G][hd] (attend_split.h's top) into
 * out [G][hd]. A part with l = 0 (no rows) weighs nothing; out is 0 where
 * every part is empty. Pure: reads only its arguments. */
void attend_merge(float *out, const float *m, const float *l, const float *acc, size_t parts, size_t G, size_t hd);

/* The parts a query that sees `seen` rows is cut into when `want` are
 * asked for: at most want and ATTEND_SPLIT_MAX_PARTS, each of at least
 * ATTEND_SPLIT_MIN_ROWS rows; 1 means no split. */
size_t attend_split_parts(size_t seen, size_t want);

/* Decode attention in the flash form, each query's rows cut into
 * attend_split_parts(seen, want) parts run side by side on the pool and
 * merged; with one part it is attend(k, ATTEND_FLASH, a, ctr), bit for bit.
 * Inside an iteration of pool_run (pool_in_job) it takes one part: the
 * parts would run one after the other there, and the result would depend on
 * how the outer loop was spread over the threads.
 * a->scores must hold group * (visible rows) floats (the naive form's
 * scratch), shared out among the parts. Counts what flash counts, plus
 * ctr->attn_split_queries and attn_split_parts. Falls back to one part
 * when its scratch cannot be had (same result, within the merge's
 * rounding). */
void attend_split(const Kernels *k, const AttnArgs *a, size_t want, Counters *ctr);

#endif
