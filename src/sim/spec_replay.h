/* spec_replay.h: speculative decoding (sim/speculate.h), recorded event by
 * event for the view to walk through: each draft token as the draft
 * proposes it, the target's one pass over the round, and the roll-back of
 * the refused rows from both caches. The run is deterministic (greedy), so
 * it is made once, whole; stepping back and forth reads the record.
 * Nothing here prints. */
#ifndef KVSCOPE_SIM_SPEC_REPLAY_H
#define KVSCOPE_SIM_SPEC_REPLAY_H

#include <stddef.h>

#include "sim/speculate.h"
#include "text/tokenizer.h"

typedef struct {
    SpecEventKind kind;
    size_t round, committed, proposed, kept;
    int proposals[SPEC_MAX_K]; /* the round's draft tokens, as the draft proposed them */
    int next;                  /* VERIFY, ROLLBACK: the target's own token after the kept ones */
    size_t target_rows, draft_rows;
    SpecStats st;              /* the run so far */
} SpecFrame;

typedef struct {
    char target[64], draft[64], cache[128];
    size_t k, plen, n_generate;
    int *tokens;         /* [plen + generated]: the prompt, then every token the run committed */
    size_t n_tokens;
    SpecFrame *frames;   /* [n_frames] */
    size_t n_frames;
    SpecStats final;
    Tokenizer *tok;      /* the models' tokenizer, for the text; owned (the caller sets it), or NULL */
} SpecReplay;

/* Run greedy speculative decoding of n_generate tokens from prompt [plen],
 * target with cache tc and draft with dc (both empty), k draft tokens a
 * round, and record it. speculate()'s errors (ERR_USAGE for a cache that
 * cannot roll back, vocabularies that differ, ...). Free with
 * spec_replay_free (which frees r->tok too), also after a failure. */
int spec_replay_make(SpecReplay *r, const Model *target, KvCache *tc, const Model *draft, KvCache *dc,
                     const char *cache_spec, const int *prompt, size_t plen, size_t n_generate, size_t k, Err *e);
void spec_replay_free(SpecReplay *r);

#endif
