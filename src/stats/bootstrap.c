/* bootstrap.c: percentile intervals by resampling segments (bootstrap.h). */
#include "stats/bootstrap.h"

#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <stdlib.h>
#include <string.h>

static int alloc_counts(Bootstrap *b, size_t n_items, size_t n_resamples, Err *e)
{
    memset(b, 0, sizeof *b);
    if (n_items == 0 || n_items > BOOTSTRAP_MAX_ITEMS)
        return err_set(e, ERR_USAGE, "bootstrap: %zu items; 1 to %d can be resampled", n_items, BOOTSTRAP_MAX_ITEMS);
    if (n_resamples < 2 || n_resamples > 1000000)
        return err_set(e, ERR_USAGE, "bootstrap: %zu resamples; 2 to 1000000 are allowed", n_resamples);
    if (!(b->counts = calloc(n_items * n_resamples, sizeof *b->counts)))
        return err_set(e, ERR_RUNTIME, "bootstrap: out of memory for %zu x %zu draws", n_resamples, n_items);
    b->n_items = n_items;
    b->n_resamples = n_resamples;
    return 0;
}

int bootstrap_init(Bootstrap *b, size_t n_items, size_t n_resamples, unsigned long seed, Err *e)
{
    if (alloc_counts(b, n_items, n_resamples, e) < 0)
        return -1;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) {
        bootstrap_free(b);
        return err_set(e, ERR_RUNTIME, "bootstrap: out of memory for the generator");
    }
    gsl_rng_set(r, seed);
    for (size_t s = 0; s < n_resamples; s++) {
        unsigned *row = b->counts + s * n_items;
        for (size_t k = 0; k < n_items; k++)
            row[gsl_rng_uniform_int(r, n_items)]++;
    }
    gsl_rng_free(r);
    return 0;
}

int bootstrap_init_counts(Bootstrap *b, size_t n_items, size_t n_resamples, const unsigned *counts, Err *e)
{
    if (alloc_counts(b, n_items, n_resamples, e) < 0)
        return -1;
    for (size_t s = 0; s < n_resamples; s++) {
        size_t drawn = 0;
        for (size_t k = 0; k < n_items; k++)
            drawn += counts[s * n_items + k];
        if (drawn != n_items) {
            bootstrap_free(b);
            return err_set(e, ERR_USAGE, "bootstrap: resample %zu draws %zu items, not %zu", s, drawn, n_items);
        }
    }
    memcpy(b->counts, counts, n_items * n_resamples * sizeof *counts);
    return 0;
}

void bootstrap_free(Bootstrap *b)
{
    free(b->counts);
    memset(b, 0, sizeof *b);
}

int bootstrap_ratio(const Bootstrap *b, const double *num, const double *den, double level, BootInterval *out,
                    Err *e)
{
    if (!(level > 0 && level < 1))
        return err_set(e, ERR_USAGE, "bootstrap: level %g is not between 0 and 1", level);
    const size_t n = b->n_items, R = b->n_resamples;
    double *v = malloc(R * sizeof *v); /* [R] each resample's ratio */
    if (!v)
        return err_set(e, ERR_RUNTIME, "bootstrap: out of memory for %zu resamples", R);
    for (size_t s = 0; s < R; s++) {
        const unsigned *c = b->counts + s * n;
        double sn = 0, sd = 0;
        for (size_t k = 0; k < n; k++) {
            sn += c[k] * num[k];
            sd += c[k] * den[k];
        }
        v[s] = sd != 0 ? sn / sd : 0;
    }
    gsl_sort(v, 1, R);
    out->lo = gsl_stats_quantile_from_sorted_data(v, 1, R, (1 - level) / 2);
    out->hi = gsl_stats_quantile_from_sorted_data(v, 1, R, (1 + level) / 2);
    free(v);
    return 0;
}
