/* split_merge.c, wrong on purpose (lesson 17): the sums l are rescaled to the
 * common maximum, the weighted values acc are not. The lint proves its check
 * fails and names the mistake. */
#include <math.h>

#include "split_merge.h"

void partial_merge(Partial *out, const Partial *a, const Partial *b, size_t hd)
{
    const float m = a->m > b->m ? a->m : b->m;
    const float wa = a->l > 0.0f ? expf(a->m - m) : 0.0f;
    const float wb = b->l > 0.0f ? expf(b->m - m) : 0.0f;
    const float la = a->l, lb = b->l;
    for (size_t d = 0; d < hd; d++)
        out->acc[d] = a->acc[d] + b->acc[d];
    out->l = wa * la + wb * lb;
    out->m = m;
}
