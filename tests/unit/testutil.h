/* testutil.h: shared helpers for the cmocka unit tests. */
#ifndef KVSCOPE_TESTUTIL_H
#define KVSCOPE_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

/* Largest |a[i] - b[i]| / max(1, |b[i]|) over n, printing the first few
 * mismatches beyond tol so a failure says where, not just that. */
static inline double max_rel_diff(const float *a, const float *b, size_t n, double tol, const char *what)
{
    double worst = 0.0;
    int shown = 0;
    for (size_t i = 0; i < n; i++) {
        double scale = fabs((double)b[i]) > 1.0 ? fabs((double)b[i]) : 1.0;
        double d = fabs((double)a[i] - (double)b[i]) / scale;
        if (d > worst)
            worst = d;
        if (d > tol && shown < 5) {
            printf("  %s[%zu]: %.9g vs %.9g (rel diff %.3g)\n", what, i, a[i], b[i], d);
            shown++;
        }
    }
    return worst;
}

/* Point the engine at the repository's data/ when tests run from the root. */
static inline void use_repo_data(void)
{
    setenv("KVSCOPE_DATA", "data", 0);
}

#endif
