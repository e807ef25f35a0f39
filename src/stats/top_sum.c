/* top_sum.c: the sum of the k largest values, by quickselect (top_sum.h). */
#include "stats/top_sum.h"

#include <string.h>

static void swap(float *a, float *b)
{
    float t = *a;
    *a = *b;
    *b = t;
}

double top_sum(const float *w, size_t n, size_t k, float *a)
{
    memcpy(a, w, n * sizeof *a);
    size_t lo = 0, hi = n; /* a[0..lo) >= a[lo..hi) >= a[hi..n); the k-th largest is in a[lo..hi) */
    while (hi - lo > 1) {
        const float pivot = a[lo + (hi - lo) / 2];
        size_t gt = lo, i = lo, lt = hi; /* a[lo..gt) > pivot, a[gt..i) == pivot, a[lt..hi) < pivot */
        while (i < lt) {
            if (a[i] > pivot)
                swap(&a[gt++], &a[i++]);
            else if (a[i] < pivot)
                swap(&a[i], &a[--lt]);
            else
                i++;
        }
        if (k <= gt)
            hi = gt;
        else if (k <= lt)
            break; /* the k-th largest equals the pivot: a[0..k) are the k largest */
        else
            lo = lt;
    }
    double sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += a[i];
    return sum;
}
