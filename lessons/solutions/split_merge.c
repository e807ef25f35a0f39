/* split_merge.c: the reference solution (lesson 17). */
#include <math.h>

#include "split_merge.h"

void partial_merge(Partial *out, const Partial *a, const Partial *b, size_t hd)
{
    const float m = a->m > b->m ? a->m : b->m;
    /* an empty part weighs nothing; checking l also avoids exp(-inf - -inf) */
    const float wa = a->l > 0.0f ? expf(a->m - m) : 0.0f;
    const float wb = b->l > 0.0f ? expf(b->m - m) : 0.0f;
    const float la = a->l, lb = b->l;
    for (size_t d = 0; d < hd; d++)
        out->acc[d] = wa * a->acc[d] + wb * b->acc[d]; /* read a and b before out overwrites them */
    out->l = wa * la + wb * lb;
    out->m = m;
}
