/* speculate.h: speculative decoding (draft, then verify), greedy.
 *
 * A small draft model proposes K tokens, one decode step each, from its own
 * cache; the target model scores the last committed token and the K
 * proposals in one pass of K + 1 rows. The longest prefix of proposals the
 * target would itself have chosen is kept, plus the target's own choice
 * after it (a correction, or a bonus token when all K were kept): 1 to K + 1
 * tokens a target pass. Both caches then roll the rejected rows back
 * (kv_truncate), so each holds exactly the committed tokens' rows. Greedy,
 * the output is the target's alone, token for token (test_speculate). */
#ifndef KVSCOPE_SIM_SPECULATE_H
#define KVSCOPE_SIM_SPECULATE_H

#include <stddef.h>

#include "kv/cache.h"
#include "model/generate.h"
#include "model/model.h"
#include "stats/counters.h"
#include "util/err.h"

/* The most draft tokens a round proposes (--speculate). */
#define SPEC_MAX_K 16

typedef struct {
    size_t target_passes;            /* the prefill and every verification pass */
    size_t draft_passes;
    size_t generated;
    size_t drafted, accepted;        /* proposals made, and kept */
    size_t refused;                  /* rounds cut short by a refused proposal (the ones after it are
                                        never judged: accepted + refused were) */
    size_t proposed_at[SPEC_MAX_K];  /* proposals at position i of a round's draft */
    size_t accepted_at[SPEC_MAX_K];  /* ... and how many of them were kept */
    size_t target_rolled, draft_rolled; /* token rows written (in every layer) then rolled back */
    Counters target, draft;          /* all the work of each model */
    double seconds;                  /* wall time of the whole run */
    int at_eos;                      /* the run ended at the end-of-text token, generated tokens in */
} SpecStats;

/* What a round has just done, for a watcher (the view's record). */
typedef enum {
    SPEC_EV_DRAFT,   /* the draft proposed one more token (proposed says how many this round) */
    SPEC_EV_VERIFY,  /* the target checked the round's proposals in one pass; kept and next say what it found */
    SPEC_EV_ROLLBACK /* both caches gave back the rows of the refused proposals */
} SpecEventKind;

typedef struct {
    SpecEventKind kind;
    size_t round;          /* from 1 */
    size_t committed;      /* tokens committed before the round: prompt and generated */
    const int *proposals;  /* DRAFT, VERIFY: [proposed] the round's draft tokens; ROLLBACK: NULL (the
                              token after the kept ones is now the target's own) */
    size_t proposed;
    size_t kept;           /* VERIFY, ROLLBACK: the proposals kept, a prefix */
    int next;              /* VERIFY, ROLLBACK: the target's own token after them (-1 before) */
    size_t target_rows, draft_rows; /* token rows each cache holds now */
    const SpecStats *st;   /* the run so far (this round's counts are in from ROLLBACK on) */
} SpecEvent;

/* Told after each event; a non-zero return stops the run (returned). */
typedef int (*SpecWatchFn)(void *user, const SpecEvent *ev);

/* Sampling (temperature > 0) instead of greedy choices: each model's
 * distribution is the softmax of its logits over temperature, among its
 * top_k tokens (0: all). A proposal d drawn from the draft's q is kept
 * with probability min(1, p(d) / q(d)) under the target's p; at the first
 * one refused, the token is drawn from max(0, p - q), normalized; when all
 * are kept, one more from the target's p after them. The tokens then
 * follow the target's own distribution (test_speculate's chi-square),
 * though not its run token for token. */
typedef struct {
    double temperature; /* 0: greedy */
    size_t top_k;
    unsigned long seed; /* gsl mt19937 */
    int stop_at_eos;    /* 1: the run ends at the target's end-of-text token (cfg.eos_token, when it has
                           one), the last token out (SpecStats.at_eos) */
    SpecWatchFn watch;  /* optional: told every draft token, verification and roll-back */
    void *watch_user;
} SpecSampling;

/* The acceptance rule on one proposal: p, q [n] the target's and the
 * draft's distributions, d drawn from q, u and v uniform in [0, 1). Returns
 * d when u * q[d] < p[d] (*kept = 1), else the token whose cumulative share
 * of max(0, p - q) first exceeds v times its sum (*kept = 0). Pure. */
int spec_accept(const double *p, const double *q, size_t n, int d, double u, double v, int *kept);

/* Generate n_generate tokens greedily from prompt [plen] with target and
 * its empty cache tc, drafting k (1 .. SPEC_MAX_K) tokens a round with
 * draft and its empty cache dc; out [n_generate]. Both models share one
 * vocabulary. Fails (ERR_USAGE) before any work when either cache cannot
 * roll back (naming why), the vocabularies differ or the positions do not
 * fit either model. */
int speculate_greedy(const Model *target, KvCache *tc, const Model *draft, KvCache *dc, const int *prompt,
                     size_t plen, size_t n_generate, size_t k, int *out, SpecStats *st, Err *e);

/* The same, sampling as smp says (greedy when smp is NULL or its
 * temperature is 0), and with smp->stop_at_eos ending at the end-of-text
 * token: st->generated tokens in out, the rest of out zeros. */
int speculate(const Model *target, KvCache *tc, const Model *draft, KvCache *dc, const int *prompt, size_t plen,
              size_t n_generate, size_t k, const SpecSampling *smp, int *out, SpecStats *st, Err *e);

/* What speculation is measured against: the target alone generating as go
 * says from prompt [plen] into its empty cache c, out [go->n_generate];
 * *ctr its whole work, *seconds its wall time. generate()'s errors. */
int speculate_baseline(const Model *target, KvCache *c, const int *prompt, size_t plen, const GenOptions *go,
                       int *out, Counters *ctr, double *seconds, Err *e);

#endif
