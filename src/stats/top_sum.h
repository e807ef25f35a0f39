/* top_sum.h: the sum of the k largest of n values, in about 2n steps (a
 * quickselect with a three-way partition, so ties cost nothing extra):
 * how much of an attention row its heaviest keys hold. */
#ifndef KVSCOPE_STATS_TOP_SUM_H
#define KVSCOPE_STATS_TOP_SUM_H

#include <stddef.h>

/* The sum, in double, of the k largest of w[0..n), 1 <= k <= n; scratch
 * holds n floats (w is left as it is). */
double top_sum(const float *w, size_t n, size_t k, float *scratch);

#endif
