/* split_merge.h: the merge of split-K decode attention (lesson 17).
 *
 * One query head attends over a long run of cached rows. Split-K cuts the
 * rows into parts; each part runs on its own thread and leaves a partial
 * state over its own rows only:
 *
 *   m         the largest score s_i = q . k_i / sqrt(head_dim) among them
 *   l         sum over them of exp(s_i - m)
 *   acc[hd]   sum over them of exp(s_i - m) * v_i   (not divided by l)
 *
 * A part with no rows has m = -INFINITY, l = 0 and acc all zero. The
 * attention output over a part's rows is acc / l. */
#ifndef KVSCOPE_EXERCISE_SPLIT_MERGE_H
#define KVSCOPE_EXERCISE_SPLIT_MERGE_H

#include <stddef.h>

#define SPLIT_MAX_HD 128 /* the widest head the checker uses */

typedef struct {
    float m;                 /* the part's largest score; -INFINITY when it has no rows */
    float l;                 /* sum of exp(score - m) over its rows */
    float acc[SPLIT_MAX_HD]; /* sum of exp(score - m) * value row, hd values used */
} Partial;

/* Write into *out the state of the union of a's rows and b's rows, as if
 * one part had seen them all: out->m is the larger of the two maxima, and
 * out->l and out->acc are the sums over every row taken against out->m.
 * hd values of acc are used. out may be the same object as a or b. Either
 * part (not both) may be empty. */
void partial_merge(Partial *out, const Partial *a, const Partial *b, size_t hd);

#endif
