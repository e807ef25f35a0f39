/* spec_replay.c: speculative decoding recorded for the view (spec_replay.h). */
#include "sim/spec_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    SpecReplay *r;
    size_t cap;                /* frames allocated */
    int out_of_memory;
    int proposals[SPEC_MAX_K]; /* the last round's, kept past its verification for the roll-back frame */
} Recorder;

static int record(void *user, const SpecEvent *ev)
{
    Recorder *rec = user;
    SpecReplay *r = rec->r;
    if (r->n_frames == rec->cap) {
        const size_t cap = rec->cap ? 2 * rec->cap : 64;
        SpecFrame *frames = realloc(r->frames, cap * sizeof *frames);
        if (!frames) {
            rec->out_of_memory = 1;
            return 1;
        }
        r->frames = frames;
        rec->cap = cap;
    }
    if (ev->proposals)
        memcpy(rec->proposals, ev->proposals, ev->proposed * sizeof(int));
    SpecFrame *fr = &r->frames[r->n_frames++];
    *fr = (SpecFrame){ .kind = ev->kind, .round = ev->round, .committed = ev->committed, .proposed = ev->proposed,
                       .kept = ev->kept, .next = ev->next, .target_rows = ev->target_rows,
                       .draft_rows = ev->draft_rows, .st = *ev->st };
    memcpy(fr->proposals, rec->proposals, ev->proposed * sizeof(int));
    return 0;
}

int spec_replay_make(SpecReplay *r, const Model *target, KvCache *tc, const Model *draft, KvCache *dc,
                     const char *cache_spec, const int *prompt, size_t plen, size_t n_generate, size_t k, Err *e)
{
    Tokenizer *tok = r->tok; /* set by the caller before */
    memset(r, 0, sizeof *r);
    r->tok = tok;
    snprintf(r->target, sizeof r->target, "%s", target->cfg.name);
    snprintf(r->draft, sizeof r->draft, "%s", draft->cfg.name);
    snprintf(r->cache, sizeof r->cache, "%s", cache_spec);
    r->k = k;
    r->plen = plen;
    r->n_generate = n_generate;
    r->tokens = malloc((plen + n_generate) * sizeof(int));
    if (!r->tokens)
        return err_set(e, ERR_RUNTIME, "out of memory for %zu tokens", plen + n_generate);
    memcpy(r->tokens, prompt, plen * sizeof(int));
    Recorder rec = { .r = r };
    const SpecSampling smp = { .watch = record, .watch_user = &rec };
    if (speculate(target, tc, draft, dc, prompt, plen, n_generate, k, &smp, r->tokens + plen, &r->final, e) < 0)
        return rec.out_of_memory ? err_set(e, ERR_RUNTIME, "out of memory recording speculative decoding") : -1;
    r->n_tokens = plen + r->final.generated;
    return 0;
}

void spec_replay_free(SpecReplay *r)
{
    tokenizer_free(r->tok);
    free(r->tokens);
    free(r->frames);
    memset(r, 0, sizeof *r);
}
