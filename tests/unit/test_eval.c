/* test_eval.c: eval's scores against the engine's own reference. The exact
 * cache's log-likelihood equals the uncached forward's, position by
 * position; a second exact layout agrees with it to the bit; a window that
 * drops rows moves the distribution (KL > 0) and the bytes and perplexity
 * follow from the log-likelihood; each cache's reach is what it holds. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/forward.h"
#include "sim/eval.h"
#include "sim/eval_ci.h"

#define N_TOK 48
#define PREFILL 5

/* -ln p(ids[t + 1]) from the uncached forward over ids[0 .. t], in double. */
static double uncached_nll(const Model *m, const int *ids, size_t t)
{
    const size_t V = m->cfg.vocab;
    ForwardState fs;
    Err e = { 0 };
    float *logits = malloc(V * sizeof(float));
    assert_non_null(logits);
    if (forward_state_init(&fs, &m->cfg, t + 1, 0, &e) < 0)
        fail_msg("forward_state_init: %s", e.msg);
    Counters ctr = { 0 };
    if (model_forward(m, &fs, NULL, ids, 1, t + 1, 0, logits, &ctr, &e) < 0)
        fail_msg("uncached forward: %s", e.msg);
    double mx = logits[0], s = 0;
    for (size_t i = 1; i < V; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    for (size_t i = 0; i < V; i++)
        s += exp((double)logits[i] - mx);
    double nll = mx + log(s) - logits[ids[t + 1]];
    forward_state_free(&fs);
    free(logits);
    return nll;
}

static KvCache *open_cache(const Model *m, const char *spec)
{
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *c = kv_open(spec, &geo, &e);
    if (!c)
        fail_msg("%s: %s", spec, e.msg);
    return c;
}

static void test_eval_against_uncached(void **state)
{
    (void)state;
    Config cfg = test_config(2, 4, 2);
    Model m;
    test_model(&m, &cfg);
    int ids[N_TOK];
    test_tokens(ids, N_TOK, cfg.vocab, 3);
    const char *specs[] = { "contiguous", "dynamic", "ring:window=8,sinks=2", "contiguous+quant:k=q4_0,v=q4_0" };
    enum { N = sizeof specs / sizeof specs[0] };
    KvCache *caches[N];
    for (size_t i = 0; i < N; i++)
        caches[i] = open_cache(&m, specs[i]);
    size_t bytes[N_TOK];
    for (size_t i = 0; i < N_TOK; i++)
        bytes[i] = 1 + i % 3; /* tokens of 1 to 3 bytes */
    EvalOptions o = { .prefill = PREFILL, .token_bytes = bytes, .per_position = 1, .segments = 5 };
    EvalResult r[N];
    Err e = { 0 };
    if (eval_run(&m, caches, N, ids, N_TOK, &o, r, NULL, NULL, &e) < 0)
        fail_msg("eval: %s", e.msg);

    /* 5 segments of the 43 predictions, 8 or 9 each, in order: their bytes are
     * the tokens they predict, their sums the per-position scores */
    size_t off = 0;
    for (size_t t = 0; t < PREFILL; t++)
        off += bytes[t];
    for (size_t c = 0; c < N; c++) {
        assert_int_equal(r[c].n_seg, 5);
        size_t next = 0, at = off;
        for (size_t j = 0; j < 5; j++) {
            const EvalSegment *g = &r[c].seg[j];
            assert_int_equal(g->first, next);
            assert_true(g->count == 8 || g->count == 9);
            assert_int_equal(g->first_byte, at);
            double nll = 0;
            for (size_t k = g->first; k < g->first + g->count; k++) {
                at += bytes[PREFILL + k];
                nll += r[c].nll_at[k];
            }
            assert_int_equal(g->end_byte, at);
            assert_true(g->bytes == (double)(g->end_byte - g->first_byte));
            assert_true(fabs(g->nll - nll) <= 1e-9 * fmax(1.0, nll));
            assert_true(g->agree >= 0 && g->agree <= (double)g->count && g->kl >= 0);
            if (c < 2) /* the exact caches agree with the reference everywhere */
                assert_true(g->agree == (double)g->count && g->kl < 1e-12);
            next += g->count;
        }
        assert_int_equal(next, N_TOK - PREFILL);
    }
    /* the intervals: each holds its figure; the second exact layout against the first is 0, paired */
    const size_t pairs[][2] = { { 1, 0 }, { 2, 0 }, { 3, 2 } };
    EvalIntervals iv;
    if (eval_intervals(r, N, pairs, 3, &iv, &e) < 0)
        fail_msg("intervals: %s", e.msg);
    for (size_t c = 0; c < N; c++)
        assert_true(iv.cache[c].bpb.lo <= r[c].bits_per_byte && r[c].bits_per_byte <= iv.cache[c].bpb.hi);
    assert_true(iv.pair[0].kl.lo == 0 && iv.pair[0].kl.hi == 0 && eval_ci_side(&iv.pair[0].kl) == EVAL_SAME);
    assert_true(fabs(iv.pair[2].bpb.value - (r[3].bits_per_byte - r[2].bits_per_byte)) < 1e-12);
    eval_intervals_free(&iv);

    /* the exact cache, position by position, against the uncached forward */
    double sum = 0, scored_bytes = 0;
    assert_int_equal(r[0].scored, N_TOK - PREFILL);
    for (size_t t = PREFILL - 1; t + 1 < N_TOK; t++) {
        double ref = uncached_nll(&m, ids, t), got = r[0].nll_at[t - (PREFILL - 1)];
        assert_true(fabs(got - ref) <= 1e-5 * fmax(1.0, fabs(ref)));
        sum += ref;
        scored_bytes += (double)bytes[t + 1];
    }
    assert_true(fabs(r[0].nll - sum) <= 1e-5 * sum);
    assert_true(fabs(r[0].bits_per_byte - sum / log(2.0) / scored_bytes) <= 1e-9 * r[0].bits_per_byte);
    assert_true(fabs(r[0].perplexity - exp(sum / (double)(N_TOK - PREFILL))) <= 1e-5 * r[0].perplexity);

    /* another exact layout: the same numbers */
    assert_true(r[1].kl < 1e-12);
    assert_true(r[1].max_logit_err < 1e-6);
    assert_true(r[1].top1_agree == 1.0);
    /* a window of 8 over 48 tokens forgets: the distribution moves */
    printf("  ring: KL %.3g nats, top-1 agreement %.3f, logit error %.3g, bits/byte %.4f vs %.4f\n", r[2].kl,
           r[2].top1_agree, r[2].max_logit_err, r[2].bits_per_byte, r[0].bits_per_byte);
    assert_true(r[2].kl > 1e-6);
    assert_true(r[2].max_logit_err > 1e-4);
    /* q4_0 rounds every row: a small move, nonzero */
    printf("  q4_0: KL %.3g nats, top-1 agreement %.3f, logit error %.3g\n", r[3].kl, r[3].top1_agree,
           r[3].max_logit_err);
    assert_true(r[3].kl > 0 && r[3].max_logit_err > 0);

    for (size_t i = 0; i < N; i++) {
        eval_result_free(&r[i]);
        kv_free(caches[i]);
    }
    model_free(&m);
}

/* reach: the most positions from the oldest row held to a query. The exact
 * cache spans all the text fed (the last token is only predicted); a window
 * its window; sinks keep position 0 in reach; a shift cache its ctx. */
static void test_eval_reach(void **state)
{
    (void)state;
    Config cfg = test_config(2, 4, 2);
    Model m;
    test_model(&m, &cfg);
    int ids[N_TOK];
    test_tokens(ids, N_TOK, cfg.vocab, 4);
    const char *specs[] = { "contiguous", "ring:window=8", "ring:window=8,sinks=2", "shift:ctx=16,keep=2" };
    const size_t want[] = { N_TOK - 1, 8, N_TOK - 1, 16 };
    enum { N = sizeof specs / sizeof specs[0] };
    KvCache *caches[N];
    for (size_t i = 0; i < N; i++)
        caches[i] = open_cache(&m, specs[i]);
    EvalOptions o = { .prefill = PREFILL };
    EvalResult r[N];
    Err e = { 0 };
    if (eval_run(&m, caches, N, ids, N_TOK, &o, r, NULL, NULL, &e) < 0)
        fail_msg("eval: %s", e.msg);
    for (size_t i = 0; i < N; i++) {
        if (r[i].reach != want[i])
            fail_msg("%s: reach %zu, want %zu", specs[i], r[i].reach, want[i]);
        eval_result_free(&r[i]);
        kv_free(caches[i]);
    }
    model_free(&m);
}

static void test_eval_bad_input(void **state)
{
    (void)state;
    Config cfg = test_config(1, 2, 1);
    Model m;
    test_model(&m, &cfg);
    KvCache *c = open_cache(&m, "contiguous");
    int ids[4] = { 1, 2, 3, 4 };
    EvalResult r;
    Err e = { 0 };
    EvalOptions o = { .prefill = 4 };
    assert_int_equal(eval_run(&m, &c, 1, ids, 4, &o, &r, NULL, NULL, &e), -1); /* nothing left to score */
    assert_int_equal(e.kind, ERR_USAGE);
    o.prefill = 1;
    ids[2] = (int)cfg.vocab;
    assert_int_equal(eval_run(&m, &c, 1, ids, 4, &o, &r, NULL, NULL, &e), -1); /* outside the vocabulary */
    assert_non_null(strstr(e.msg, "vocabulary"));
    kv_free(c);
    model_free(&m);
}

/* The recomputed window: a window as long as the text is the uncached
 * run itself; a short one is the uncached run of the last W tokens, at
 * positions from 0 (not the cache's absolute ones). */
static void test_recompute_window(void **state)
{
    (void)state;
    Config cfg = test_config(2, 4, 2);
    Model m;
    test_model(&m, &cfg);
    int ids[N_TOK];
    test_tokens(ids, N_TOK, cfg.vocab, 5);
    double whole[N_TOK - PREFILL], short_w[N_TOK - PREFILL];
    Err e = { 0 };
    if (eval_recompute_window(&m, ids, N_TOK, PREFILL, N_TOK, 1, whole, &e) < 0 ||
        eval_recompute_window(&m, ids, N_TOK, PREFILL, 8, 1, short_w, &e) < 0)
        fail_msg("recompute: %s", e.msg);
    for (size_t t = PREFILL - 1; t + 1 < N_TOK; t++) {
        const size_t k = t - (PREFILL - 1), first = t + 1 > 8 ? t + 1 - 8 : 0;
        double ref = uncached_nll(&m, ids, t);
        assert_true(fabs(whole[k] - ref) <= 1e-5 * fmax(1.0, fabs(ref)));
        ref = uncached_nll(&m, ids + first, t - first); /* the last 8 tokens from position 0 */
        assert_true(fabs(short_w[k] - ref) <= 1e-5 * fmax(1.0, fabs(ref)));
    }
    assert_true(fabs(short_w[N_TOK - PREFILL - 1] - whole[N_TOK - PREFILL - 1]) > 1e-6); /* it did forget */
    assert_int_equal(eval_recompute_window(&m, ids, N_TOK, PREFILL, 0, 1, whole, &e), -1);
    double sampled[N_TOK - PREFILL]; /* every third step: the same numbers there, NAN between */
    if (eval_recompute_window(&m, ids, N_TOK, PREFILL, 8, 3, sampled, &e) < 0)
        fail_msg("recompute: %s", e.msg);
    for (size_t k = 0; k < N_TOK - PREFILL; k++)
        assert_true(k % 3 ? isnan(sampled[k]) : sampled[k] == short_w[k]);
    model_free(&m);
}

/* For a model trained with a first token, the recomputed window starts
 * with it at position 0: the first token and the last W - 1 tokens, the
 * uncached run of exactly those; it differs from the last W tokens alone,
 * and a sequence that does not start with the first token is refused. */
static void test_recompute_window_bos(void **state)
{
    (void)state;
    Config cfg = test_config(2, 4, 2);
    cfg.add_bos = 1;
    cfg.bos_token = (int)cfg.vocab - 1;
    Model m;
    test_model(&m, &cfg);
    int ids[N_TOK];
    test_tokens(ids, N_TOK, cfg.vocab - 1, 7);
    ids[0] = cfg.bos_token;
    enum { W = 8 };
    double got[N_TOK - PREFILL], plain[N_TOK - PREFILL];
    Err e = { 0 };
    if (eval_recompute_window(&m, ids, N_TOK, PREFILL, W, 1, got, &e) < 0)
        fail_msg("recompute: %s", e.msg);
    cfg.add_bos = 0; /* the same weights read as a model without a first token: the last W tokens */
    Model plain_m = m;
    plain_m.cfg = cfg;
    if (eval_recompute_window(&plain_m, ids, N_TOK, PREFILL, W, 1, plain, &e) < 0)
        fail_msg("recompute: %s", e.msg);
    size_t differ = 0;
    for (size_t t = PREFILL - 1; t + 1 < N_TOK; t++) {
        const size_t k = t - (PREFILL - 1);
        int w[W + 1];
        size_t len = 0;
        if (t + 1 <= W) { /* the whole prefix, the first token already at 0 */
            memcpy(w, ids, (t + 2) * sizeof *w);
            len = t + 1;
        } else {
            w[0] = ids[0];
            memcpy(w + 1, ids + t + 1 - (W - 1), W * sizeof *w); /* the last W - 1, then the target */
            len = W;
        }
        assert_int_equal(w[0], cfg.bos_token);
        const double ref = uncached_nll(&m, w, len - 1);
        assert_true(fabs(got[k] - ref) <= 1e-5 * fmax(1.0, fabs(ref)));
        differ += t + 1 > W && fabs(got[k] - plain[k]) > 1e-6;
    }
    assert_true(differ > 0); /* keeping the first token changed the windows past W */
    ids[0] = 0;
    assert_int_equal(eval_recompute_window(&m, ids, N_TOK, PREFILL, W, 1, got, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    model_free(&m);
}

/* The window recomputed every S steps, as an eval row: each prediction is
 * the uncached run of the window the rule names (restarts at t = W, W + S,
 * ...; then the last W - S tokens, after the first token for an add_bos
 * model), and a window as long as the text is the exact cache bit for bit. */
static void check_recompute_lane(int bos)
{
    enum { W = 12, S = 4, KEEP = W - S + 1, P = 3 };
    Config cfg = test_config(2, 4, 2);
    cfg.add_bos = bos;
    cfg.bos_token = (int)cfg.vocab - 1;
    Model m;
    test_model(&m, &cfg);
    int ids[N_TOK];
    test_tokens(ids, N_TOK, cfg.vocab - 1, 11);
    if (bos)
        ids[0] = cfg.bos_token;
    KvCache *caches[3] = { open_cache(&m, "contiguous"), open_cache(&m, "contiguous"), open_cache(&m, "contiguous:max=12") };
    const EvalRecompute rw[3] = { { 0, 0 }, { N_TOK, S }, { W, S } };
    EvalOptions o = { .prefill = P, .per_position = 1, .recompute = rw };
    EvalResult res[3];
    Err e = { 0 };
    if (eval_run(&m, caches, 3, ids, N_TOK, &o, res, NULL, NULL, &e) < 0)
        fail_msg("eval: %s", e.msg);
    assert_true(res[1].nll == res[0].nll && res[1].kl == 0); /* never full: the exact cache's passes */
    assert_int_equal(res[2].reach, W);
    size_t restarted = 0;
    for (size_t t = P - 1; t + 1 < N_TOK; t++) {
        int w[W];
        size_t len;
        if (t < W) {
            memcpy(w, ids, (t + 1) * sizeof *w);
            len = t + 1;
        } else {
            const size_t t_r = W + (t - W) / S * S, from = t_r + 1 - KEEP + (size_t)bos; /* the last restart */
            len = 0;
            if (bos)
                w[len++] = ids[0];
            for (size_t i = from; i <= t; i++)
                w[len++] = ids[i];
            restarted++;
        }
        int win_next[W + 1];
        memcpy(win_next, w, len * sizeof *w);
        win_next[len] = ids[t + 1];
        const double ref = uncached_nll(&m, win_next, len - 1);
        if (!(fabs(res[2].nll_at[t - (P - 1)] - ref) <= 1e-5 * fmax(1.0, fabs(ref))))
            fail_msg("bos %d, step %zu: %.9g against %.9g uncached", bos, t, res[2].nll_at[t - (P - 1)], ref);
    }
    assert_true(restarted > 2 * S);
    for (size_t i = 0; i < 3; i++) {
        eval_result_free(&res[i]);
        kv_free(caches[i]);
    }
    model_free(&m);
}

static void test_recompute_lane(void **state)
{
    (void)state;
    check_recompute_lane(0);
    check_recompute_lane(1);
}

/* The row's spec and the lane's limits: one clear refusal each. */
static void test_recompute_spec(void **state)
{
    (void)state;
    EvalRecompute rw;
    Err e = { 0 };
    assert_int_equal(eval_recompute_parse("recompute", 1024, &rw, &e), 1);
    assert_true(rw.window == 1024 && rw.stride == 128);
    assert_int_equal(eval_recompute_parse("recompute:window=64,stride=8", 1024, &rw, &e), 1);
    assert_true(rw.window == 64 && rw.stride == 8);
    assert_int_equal(eval_recompute_parse("contiguous", 1024, &rw, &e), 0);
    assert_int_equal(eval_recompute_parse("recomputed", 1024, &rw, &e), 0);
    const char *bad[] = { "recompute:window=8,stride=8", "recompute:width=8", "recompute:stride=0",
                          "recompute+quant:k=q8_0" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e = (Err){ 0 };
        assert_int_equal(eval_recompute_parse(bad[i], 1024, &rw, &e), -1);
        assert_int_equal(e.kind, ERR_USAGE);
    }
    Config cfg = test_config(2, 4, 2);
    Model m;
    test_model(&m, &cfg);
    int ids[N_TOK];
    test_tokens(ids, N_TOK, cfg.vocab, 3);
    KvCache *c = open_cache(&m, "contiguous");
    const EvalRecompute too_short = { 4, 1 }; /* a prefill of 5 does not fit a window of 4 */
    EvalOptions o = { .prefill = PREFILL, .recompute = &too_short };
    EvalResult r;
    e = (Err){ 0 };
    assert_int_equal(eval_run(&m, &c, 1, ids, N_TOK, &o, &r, NULL, NULL, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    kv_free(c);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_against_uncached),
        cmocka_unit_test(test_eval_reach),
        cmocka_unit_test(test_eval_bad_input),
        cmocka_unit_test(test_recompute_window),
        cmocka_unit_test(test_recompute_window_bos),
        cmocka_unit_test(test_recompute_lane),
        cmocka_unit_test(test_recompute_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
