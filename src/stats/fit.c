/* fit.c: least-squares lines through GSL, and power laws on log-log axes. */
#include "stats/fit.h"

#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdlib.h>

int fit_linear(const double *x, const double *y, size_t n, FitLine *out, Err *e)
{
    if (n < 2)
        return err_set(e, ERR_USAGE, "fit: %zu point(s); a line needs at least 2", n);
    int spread = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i]))
            return err_set(e, ERR_USAGE, "fit: point %zu (%g, %g) is not finite", i, x[i], y[i]);
        spread |= x[i] != x[0];
    }
    if (!spread)
        return err_set(e, ERR_USAGE, "fit: every x is %g; a slope needs x to vary", x[0]);

    double c0, c1, cov00, cov01, cov11, sumsq;
    gsl_fit_linear(x, 1, y, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);

    /* r^2 = 1 - (residual sum of squares) / (total sum of squares about the mean) */
    double mean = 0, total = 0;
    for (size_t i = 0; i < n; i++)
        mean += y[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        total += (y[i] - mean) * (y[i] - mean);
    *out = (FitLine){ .intercept = c0, .slope = c1, .slope_err = sqrt(cov11),
                      .r2 = total > 0 ? 1.0 - sumsq / total : 1.0, .n = n };
    return 0;
}

int fit_power_law(const double *x, const double *y, size_t n, FitLine *out, Err *e)
{
    for (size_t i = 0; i < n; i++)
        if (!(x[i] > 0) || !(y[i] > 0))
            return err_set(e, ERR_USAGE, "fit: point %zu (%g, %g) is not positive; a log-log fit needs x, y > 0",
                           i, x[i], y[i]);
    double *lx = malloc((n ? n : 1) * sizeof *lx), *ly = malloc((n ? n : 1) * sizeof *ly);
    if (!lx || !ly) {
        free(lx);
        free(ly);
        return err_set(e, ERR_RUNTIME, "fit: out of memory for %zu points", n);
    }
    for (size_t i = 0; i < n; i++) {
        lx[i] = log(x[i]);
        ly[i] = log(y[i]);
    }
    int rc = fit_linear(lx, ly, n, out, e);
    free(lx);
    free(ly);
    return rc;
}
