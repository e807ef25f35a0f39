/* bootstrap.h: percentile intervals of ratios over segments, by resampling
 * the segments with replacement.
 *
 * A measure over a text is a ratio of sums over its segments: bits per byte
 * is sum(nll) / sum(bytes), a mean per prediction sum(x) / sum(count). A
 * resample draws as many segments as there are, with replacement; its value
 * is the same ratio over the segments drawn, each counted as often as it was
 * drawn. The interval at level L (0.95) runs from the (1 - L) / 2 to the
 * (1 + L) / 2 quantile of the resamples' values: a percentile interval.
 *
 * One Bootstrap holds the draws, so every ratio computed from it uses the
 * same resamples: the difference of two measures on the same segments is
 * itself a ratio (the numerators subtracted), and its interval is the
 * paired one. */
#ifndef KVSCOPE_STATS_BOOTSTRAP_H
#define KVSCOPE_STATS_BOOTSTRAP_H

#include <stddef.h>

#include "util/err.h"

#define BOOTSTRAP_MAX_ITEMS 4096 /* segments: the draws take resamples x items x 4 bytes */

typedef struct {
    size_t n_items;     /* segments */
    size_t n_resamples;
    unsigned *counts;   /* [n_resamples][n_items]: how often resample r drew item i; owned */
} Bootstrap;

typedef struct {
    double lo, hi;
} BootInterval;

/* n_resamples resamples of n_items items (1 .. BOOTSTRAP_MAX_ITEMS), each
 * drawn uniformly with replacement by a gsl mt19937 seeded with seed: the
 * same seed gives the same draws on every machine. ERR_USAGE for a count
 * out of range, ERR_RUNTIME when memory runs out. */
int bootstrap_init(Bootstrap *b, size_t n_items, size_t n_resamples, unsigned long seed, Err *e);

/* The draws given instead: counts [n_resamples][n_items] is copied; every
 * row must sum to n_items (ERR_USAGE otherwise). For worked examples and
 * tests. */
int bootstrap_init_counts(Bootstrap *b, size_t n_items, size_t n_resamples, const unsigned *counts, Err *e);

void bootstrap_free(Bootstrap *b);

/* The interval at level (0 < level < 1) of sum(num) / sum(den) over b's
 * resamples; num and den [b->n_items]. A resample whose den sums to 0 counts
 * as 0. ERR_USAGE for a level out of range, ERR_RUNTIME without memory. */
int bootstrap_ratio(const Bootstrap *b, const double *num, const double *den, double level, BootInterval *out,
                    Err *e);

#endif
