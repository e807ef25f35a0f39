/* split_prefill.c, wrong on purpose (lesson 11): no pass is given the logits
 * buffer, not even the last chunk's. The lint proves its check fails and names
 * the mistake. */
#include "split_prefill.h"

int split_prefill(const Model *m, ForwardState *s, KvCache *cache, const int *prompt, size_t len, size_t chunk,
                  float *logits, Err *e)
{
    for (size_t pos0 = 0; pos0 < len; pos0 += chunk) {
        size_t n = len - pos0 < chunk ? len - pos0 : chunk;
        Counters ctr = { 0 };
        /* the chunk's tokens sit at absolute positions pos0 .. pos0+n-1: RoPE
         * and the causal mask both need them, and the cache appends there */
        if (model_forward(m, s, cache, prompt + pos0, 1, n, pos0, NULL, &ctr, e) < 0) /* WRONG: no pass writes the logits */
            return -1;
    }
    return 0;
}
