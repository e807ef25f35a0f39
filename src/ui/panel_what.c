/* panel_what.c: one line saying what the newest pass did, and why it cost
 * what it did. Steps are numbered from 0, as in the source document. */
#include <stdio.h>

#include "ui/panels.h"

void panel_what(Frame *f, Rect r, const Session *s)
{
    const size_t n = session_steps(s);
    const Config *c = &session_model(s)->cfg;
    if (n == 0) {
        frame_print(f, r, 0, 0, ROLE_NORMAL, "Nothing has run yet, the cache is empty: Space runs the prefill (%zu "
                    "tokens).", session_prompt_len(s));
        return;
    }
    const StepRecord *rec = session_record(s, n - 1);
    char chose[96] = "", piece[64];
    const Tokenizer *tk = session_tokenizer(s);
    if (rec->token >= 0 && tk)
        snprintf(chose, sizeof chose, "; chose %d \"%s\"", rec->token,
                 panel_token_label(tk, rec->token, piece, sizeof piece));
    else if (rec->token >= 0)
        snprintf(chose, sizeof chose, "; chose %d", rec->token);
    const char *layers = c->n_layers == 1 ? "layer" : "layers";
    /* a batch: what the line says is sequence 0's; the last sequence is a fork */
    const size_t batch = session_batch(s);
    char who[96] = "";
    char run[48] = "sequence 0";
    if (batch > 2)
        snprintf(run, sizeof run, "sequences 0-%zu", batch - 2);
    if (batch > 1 && rec->phase == PHASE_PREFILL)
        snprintf(who, sizeof who, rec->token >= 0 ? " of %s, then %zu forked from 0" : " of %s", run, batch - 1);
    else if (batch > 1)
        snprintf(who, sizeof who, ", sequence 0 of %zu", batch);
    if (rec->phase == PHASE_PREFILL) {
        frame_print(f, r, 0, 0, ROLE_NORMAL, "Step %zu prefill%s: positions %zu-%zu projected at once, K,V "
                    "stored in %zu %s%s", rec->step, who, rec->pos0, rec->pos0 + rec->n_new - 1, c->n_layers,
                    layers, chose);
        return;
    }
    /* the rows attention read, as the forward counted them: fewer than the
     * positions when the cache evicts (ring, h2o, sparse) or a window hides
     * them; the positions when nothing counted them (MLA) */
    char read[48];
    if (rec->seen_max == 0)
        snprintf(read, sizeof read, "%zu", rec->context);
    else if (rec->seen_min == rec->seen_max)
        snprintf(read, sizeof read, "%zu", rec->seen_max);
    else
        snprintf(read, sizeof read, "%zu-%zu (by layer)", rec->seen_min, rec->seen_max);
    const int one = rec->seen_max == 1 || (rec->seen_max == 0 && rec->context == 1);
    /* split-K: the rows of a head's query were cut into parts on the threads, each part's max and sum of
     * exponentials kept, and the parts merged by the log-sum-exp rule */
    char split[96] = "";
    const Counters *ct = &rec->ctr;
    if (ct->attn_split_queries)
        snprintf(split, sizeof split, "; split-K: %.3g parts a head on the threads, merged by log-sum-exp",
                 (double)ct->attn_split_parts / (double)ct->attn_split_queries);
    frame_print(f, r, 0, 0, ROLE_NORMAL, "Step %zu decode%s: 1 row projected (uncached: %zu), %s cached row%s "
                "read of %zu positions%s%s", rec->step, who, rec->context, read, one ? "" : "s", rec->context, chose,
                split);
}
