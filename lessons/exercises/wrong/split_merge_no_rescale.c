/* split_merge.c, wrong on purpose (lesson 17): the parts' sums are added as
 * they are, each still taken against its own maximum. Right only when both
 * parts have the same largest score. The lint proves its check fails and
 * names the mistake. */
#include "split_merge.h"

void partial_merge(Partial *out, const Partial *a, const Partial *b, size_t hd)
{
    const float m = a->m > b->m ? a->m : b->m;
    for (size_t d = 0; d < hd; d++)
        out->acc[d] = a->acc[d] + b->acc[d];
    out->l = a->l + b->l;
    out->m = m;
}
