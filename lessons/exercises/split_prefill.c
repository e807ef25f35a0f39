/* split_prefill.c: prefill in chunks (lesson 11). Fill in the TODO; check it
 * with `kvscope lesson check 11 --file THIS_FILE`.
 *
 * model_forward (src/model/forward.h) runs n_new tokens of each sequence,
 * starting at absolute position pos0, appending their K and V rows to the
 * cache and writing the logits of each sequence's last token:
 *
 *   int model_forward(const Model *m, ForwardState *s, KvCache *cache,
 *                     const int *tokens, size_t n_seqs, size_t n_new,
 *                     size_t pos0, float *logits, Counters *ctr, Err *e);
 *
 * Pass a Counters you zeroed (Counters ctr = { 0 };) for it to count into. */
#include "split_prefill.h"

int split_prefill(const Model *m, ForwardState *s, KvCache *cache, const int *prompt, size_t len, size_t chunk,
                  float *logits, Err *e)
{
    /* TODO: walk the prompt chunk by chunk. Each pass runs the next
     * min(chunk, what is left) tokens, one sequence, at the position where
     * that chunk starts. The last pass's logits are the ones to return. */
    (void)m;
    (void)s;
    (void)cache;
    (void)prompt;
    (void)len;
    (void)chunk;
    (void)logits;
    return err_set(e, ERR_RUNTIME, "split_prefill is not written yet");
}
