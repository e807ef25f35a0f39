/* fit.h: straight-line fits by least squares (GSL's gsl_fit_linear), and
 * power laws fitted as straight lines on log-log axes.
 *
 * A power law y = a * x^k is the line ln y = ln a + k ln x, so its exponent
 * is the slope of the log-log fit: generation work that grows linearly with
 * the tokens generated fits k ~ 1, quadratically k ~ 2. */
#ifndef KVSCOPE_STATS_FIT_H
#define KVSCOPE_STATS_FIT_H

#include <stddef.h>

#include "util/err.h"

typedef struct {
    double intercept; /* c0 of y = c0 + c1 x (for a power law: ln a) */
    double slope;     /* c1 (for a power law: the exponent k) */
    double slope_err; /* standard error of the slope, sqrt(cov11) */
    double r2;        /* coefficient of determination, 1 for a perfect line */
    size_t n;         /* points fitted */
} FitLine;

/* Fit y = c0 + c1 x to n >= 2 points (x[i], y[i]), not all x equal, every
 * value finite. Fails with ERR_USAGE (naming the problem) otherwise. */
int fit_linear(const double *x, const double *y, size_t n, FitLine *out, Err *e);

/* Fit ln y = c0 + c1 ln x: out->slope is the exponent of y ~ x^slope and
 * exp(out->intercept) the prefactor. Every x and y must be > 0 (and the
 * rules of fit_linear hold for their logs). Allocates n doubles twice;
 * ERR_RUNTIME when that fails. */
int fit_power_law(const double *x, const double *y, size_t n, FitLine *out, Err *e);

#endif
