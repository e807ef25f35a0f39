/* speculate.c: greedy speculative decoding (speculate.h).
 *
 * The committed tokens are toks[0 .. n); the last of them is pending: the
 * target's cache holds the rows of toks[0 .. n-1), the draft's of at least
 * as many (fewer rows than tokens is the rule of every decode loop: a
 * token's row is written when it is fed). A round:
 *   1. the draft feeds what it has not yet seen and proposes d_1; then d_2
 *      from d_1, ... d_K: K passes of one row (the first may have two);
 *   2. the target feeds toks[n-1], d_1 .. d_K at positions n-1 .. n-1+K in
 *      one pass and chooses y_0 .. y_K, y_i from the row of the token
 *      before position n+i;
 *   3. j = how many d_i equal y_{i-1} in a row from i = 1; d_1 .. d_j and
 *      y_j are committed, and each cache keeps the rows of toks[0 .. n+j).
 * Near the end a round drafts fewer, so no token past n_generate is made. */
#include "sim/speculate.h"

#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/sample.h"
#include "model/sublayers.h"
#include "util/clock.h"

typedef struct {
    ForwardState ts, ds;
    float *tlog; /* [K + 1][vocab]: the target's logits of every row of a round */
    float *dlog; /* [vocab] */
    int *toks;   /* [plen + n_generate + K]: committed tokens, then the round's proposals */
} Spec;

static void spec_free(Spec *s)
{
    forward_state_free(&s->ts);
    forward_state_free(&s->ds);
    free(s->tlog);
    free(s->dlog);
    free(s->toks);
}

static int check(const Model *target, KvCache *tc, const Model *draft, KvCache *dc, size_t plen, size_t n_generate,
                 size_t k, Err *e)
{
    if (k < 1 || k > SPEC_MAX_K)
        return err_set(e, ERR_USAGE, "--speculate: %zu draft tokens a round (1 .. %d)", k, SPEC_MAX_K);
    if (target->cfg.vocab != draft->cfg.vocab)
        return err_set(e, ERR_USAGE, "the draft '%s' has %zu tokens, the target '%s' %zu: they must share one "
                       "vocabulary", draft->cfg.name, draft->cfg.vocab, target->cfg.name, target->cfg.vocab);
    if (plen == 0 || n_generate == 0)
        return err_set(e, ERR_USAGE, "speculative decoding needs a prompt and a token to generate");
    const size_t need = plen + n_generate - 1; /* the positions a plain run needs; a round never goes past */
    if (need > target->cfg.max_seq_len || need > draft->cfg.max_seq_len)
        return err_set(e, ERR_USAGE, "a prompt of %zu plus %zu generated tokens needs %zu positions; the target has "
                       "%zu, the draft %zu", plen, n_generate, need, target->cfg.max_seq_len,
                       draft->cfg.max_seq_len);
    if (kv_can_roll_back(tc, e) < 0 || kv_can_roll_back(dc, e) < 0)
        return err_wrap(e, "--speculate");
    return 0;
}

int speculate_greedy(const Model *target, KvCache *tc, const Model *draft, KvCache *dc, const int *prompt,
                     size_t plen, size_t n_generate, size_t k, int *out, SpecStats *st, Err *e)
{
    memset(st, 0, sizeof *st);
    if (check(target, tc, draft, dc, plen, n_generate, k, e) < 0)
        return -1;
    const size_t vocab = target->cfg.vocab;
    Spec s = { 0 };
    int rc = -1;
    const double t0 = clock_seconds();
    if (forward_state_init(&s.ts, &target->cfg, plen > k + 1 ? plen : k + 1, 0, e) < 0 ||
        forward_state_init(&s.ds, &draft->cfg, plen > 2 ? plen : 2, 0, e) < 0)
        goto out;
    s.tlog = malloc((k + 1) * vocab * sizeof(float));
    s.dlog = malloc(vocab * sizeof(float));
    s.toks = malloc((plen + n_generate + k) * sizeof(int));
    if (!s.tlog || !s.dlog || !s.toks) {
        err_set(e, ERR_RUNTIME, "speculative decoding: out of memory");
        goto out;
    }
    memcpy(s.toks, prompt, plen * sizeof(int));

    /* the prompt through both: the target chooses the first token */
    if (model_forward(target, &s.ts, tc, prompt, 1, plen, 0, s.tlog, &st->target, e) < 0 ||
        model_forward(draft, &s.ds, dc, prompt, 1, plen, 0, s.dlog, &st->draft, e) < 0)
        goto out;
    st->target_passes = st->draft_passes = 1;
    size_t n = plen, dlen = plen; /* committed tokens; rows the draft holds */
    s.toks[n++] = out[0] = sample_greedy(s.tlog, vocab);
    st->generated = 1;

    while (st->generated < n_generate) {
        const size_t left = n_generate - st->generated;
        const size_t kr = k < left - 1 ? k : left - 1; /* proposals this round: at most left - 1 */
        /* 1. draft: toks[n .. n + kr) */
        for (size_t i = 0; i < kr; i++) {
            const size_t end = n + i; /* tokens known: committed and proposed so far; the last is pending */
            if (model_forward(draft, &s.ds, dc, s.toks + dlen, 1, end - dlen, dlen, s.dlog, &st->draft, e) < 0)
                goto out;
            st->draft_passes++;
            dlen = end;
            s.toks[end] = sample_greedy(s.dlog, vocab);
        }
        /* 2. the target: the pending token and the proposals, one pass of kr + 1 rows */
        const size_t rows = kr + 1;
        if (model_forward(target, &s.ts, tc, s.toks + n - 1, 1, rows, n - 1, s.tlog + kr * vocab, &st->target,
                          e) < 0)
            goto out;
        if (kr) /* the logits of the rows before the last (model_forward gave the last) */
            sublayer_logits(target, &s.ts, kr, 1, s.tlog, &st->target);
        st->target_passes++;
        /* 3. the longest agreeing prefix, then the target's own choice */
        size_t j = 0;
        while (j < kr && s.toks[n + j] == sample_greedy(s.tlog + j * vocab, vocab))
            j++;
        for (size_t i = 0; i < kr; i++) {
            st->proposed_at[i]++;
            st->accepted_at[i] += i < j;
        }
        st->drafted += kr;
        st->accepted += j;
        const int next = sample_greedy(s.tlog + j * vocab, vocab);
        for (size_t i = 0; i < j; i++)
            out[st->generated + i] = s.toks[n + i];
        out[st->generated + j] = next;
        s.toks[n + j] = next;
        /* roll back: each cache keeps the rows of toks[0 .. n + j) */
        const size_t keep = n + j;
        st->target_rolled += (n + kr) - keep;
        if (kv_truncate(tc, 0, keep, &st->target, e) < 0)
            goto out;
        if (dlen > keep) {
            st->draft_rolled += dlen - keep;
            if (kv_truncate(dc, 0, keep, &st->draft, e) < 0)
                goto out;
            dlen = keep;
        }
        n += j + 1;
        st->generated += j + 1;
    }
    rc = 0;
out:
    st->seconds = clock_seconds() - t0;
    spec_free(&s);
    return rc;
}
