/* test_session.c: the stepped session the interactive view drives.
 * Its records are generate()'s counters exactly; its uncached equivalent is
 * generate(NULL)'s; going back then forward reaches bit-identical state;
 * switching the cache replays to the same pass. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/generate.h"
#include "sim/session.h"

#define N_GEN 7

typedef struct {
    Counters ctr[64];
    size_t n;
} Trace;

static int trace(void *user, const StepReport *r)
{
    Trace *t = user;
    assert_true(t->n < 64);
    t->ctr[t->n++] = r->ctr;
    return 0;
}

/* Every counter but the wall time. */
static void assert_counters_equal(const Counters *a, const Counters *b)
{
    Counters x = *a, y = *b;
    x.seconds = y.seconds = 0;
    if (memcmp(&x, &y, sizeof x) != 0) {
        printf("  counters differ: tokens %llu/%llu flops %llu/%llu kv_read %llu/%llu used %llu/%llu\n",
               (unsigned long long)x.tokens_projected, (unsigned long long)y.tokens_projected,
               (unsigned long long)counters_total_flops(&x), (unsigned long long)counters_total_flops(&y),
               (unsigned long long)x.kv_bytes_read, (unsigned long long)y.kv_bytes_read,
               (unsigned long long)x.cache_bytes_used, (unsigned long long)y.cache_bytes_used);
        fail();
    }
}

static Session *open_session(Model *m, const char *cache, const int *prompt, size_t plen, size_t chunk,
                             UncachedMode um)
{
    SessionSpec sp = {
        .cfg = m->cfg, .kern = m->kern, .attend = ATTEND_NAIVE, .cache_spec = cache, .prompt = prompt,
        .prompt_len = plen, .go = { .n_generate = N_GEN, .chunk = chunk }, .uncached = um,
    };
    Session *s;
    Err e = { 0 };
    if (session_init(&s, &sp, &e) < 0)
        fail_msg("session_init: %s", e.msg);
    return s;
}

static void step_all(Session *s)
{
    Err e = { 0 };
    int rc;
    while ((rc = session_step(s, &e)) == 1)
        ;
    assert_int_equal(rc, 0);
}

/* The session's records are what generate() reports, pass for pass, and its
 * uncached equivalent is what generate(NULL) reports. */
static void test_counters_match_generate(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    m.attend = ATTEND_NAIVE;
    int prompt[9];
    test_tokens(prompt, 9, c.vocab, 3);
    static const size_t chunks[] = { 0, 4 };
    for (size_t ci = 0; ci < 2; ci++) {
        Trace tc = { 0 }, tu = { 0 };
        int out_c[N_GEN], out_u[N_GEN];
        Err e = { 0 };
        KvGeometry geo = model_kv_geometry(&m, 1);
        KvCache *cache = kv_open("dynamic", &geo, &e);
        GenOptions go = { .n_generate = N_GEN, .chunk = chunks[ci] };
        assert_int_equal(generate(&m, cache, prompt, 1, 9, &go, out_c, trace, &tc, &e), 0);
        assert_int_equal(generate(&m, NULL, prompt, 1, 9, &go, out_u, trace, &tu, &e), 0);
        kv_free(cache);

        Session *s = open_session(&m, "dynamic", prompt, 9, chunks[ci], UNCACHED_MEASURED);
        assert_int_equal(session_total_steps(s), tc.n);
        step_all(s);
        assert_int_equal(session_steps(s), tc.n);
        size_t g = 0;
        for (size_t i = 0; i < tc.n; i++) {
            const StepRecord *r = session_record(s, i);
            assert_counters_equal(&r->ctr, &tc.ctr[i]);
            if (r->token >= 0) {
                assert_int_equal(r->token, out_c[g]);
                assert_counters_equal(&r->unc, &tu.ctr[g]);
                g++;
            }
        }
        assert_int_equal(g, N_GEN);
        Counters tot_c, tot_u, want = { 0 };
        int formula;
        session_totals(s, &tot_c, &tot_u, &formula);
        for (size_t i = 0; i < tc.n; i++)
            counters_add(&want, &tc.ctr[i]);
        assert_counters_equal(&tot_c, &want);
        assert_int_equal(formula, 0);
        session_free(s);
    }
    model_free(&m);
}

/* The closed form gives the measured uncached pass's rows and projection FLOPs. */
static void test_formula_matches_measured(void **state)
{
    (void)state;
    Config c = test_config(3, 4, 1);
    Model m;
    test_model(&m, &c);
    int prompt[5];
    test_tokens(prompt, 5, c.vocab, 1);
    Session *s = open_session(&m, "contiguous", prompt, 5, 0, UNCACHED_MEASURED);
    step_all(s);
    for (size_t i = 0; i < session_steps(s); i++) {
        const StepRecord *r = session_record(s, i);
        Counters f;
        session_uncached_formula(&c, r->context, &f);
        assert_int_equal(f.tokens_projected, r->unc.tokens_projected);
        assert_int_equal(counters_proj_flops(&f), counters_proj_flops(&r->unc));
        assert_int_equal(f.flops_q, r->unc.flops_q);
        assert_int_equal(f.flops_k, r->unc.flops_k);
    }
    session_free(s);
    model_free(&m);
}

/* Everything a view reads, copied, to compare two moments bit for bit. */
typedef struct {
    size_t steps, len;
    int tokens[64];
    float logits[64];
    float q[64], k[64], v[64], att[64];
    float cache_k[3][4][16][8], cache_v[3][4][16][8];
    float attn[16];
} State;

static void capture(const Session *s, State *st)
{
    const Config *c = &session_model(s)->cfg;
    memset(st, 0, sizeof *st);
    st->steps = session_steps(s);
    const int *tok = session_tokens(s, &st->len);
    memcpy(st->tokens, tok, st->len * sizeof(int));
    const Snapshot *sn = session_snapshot(s);
    if (sn) {
        memcpy(st->logits, sn->logits, 64 * sizeof(float));
        memcpy(st->q, sn->q, config_q_dim(c) * sizeof(float));
        memcpy(st->k, sn->k, config_kv_dim(c) * sizeof(float));
        memcpy(st->v, sn->v, config_kv_dim(c) * sizeof(float));
        memcpy(st->att, sn->att, config_q_dim(c) * sizeof(float));
    }
    for (size_t l = 0; l < c->n_layers; l++)
        for (size_t h = 0; h < c->n_kv_heads; h++)
            for (size_t p = 0; p < 16; p++)
                (void)session_cache_row(s, l, h, p, st->cache_k[l][h][p], st->cache_v[l][h][p]);
    if (st->steps) {
        const float *row = session_attn_row(s, 1, 2, session_record(s, st->steps - 1)->context - 1);
        assert_non_null(row);
        assert_true(session_positions(s) <= 16);
        memcpy(st->attn, row, session_positions(s) * sizeof(float)); /* <= 16 */
    }
}

/* Back then forward reaches bit-identical state, at every pass, for an
 * exact and a quantized cache. */
static void test_back_forward_identical(void **state)
{
    (void)state;
    Config c = test_config(3, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[6];
    test_tokens(prompt, 6, c.vocab, 9);
    static const char *const specs[] = { "contiguous", "contiguous+quant:k=q8_0,v=q4_0" };
    for (size_t si = 0; si < 2; si++) {
        Session *s = open_session(&m, specs[si], prompt, 6, 4, UNCACHED_AUTO);
        Err e = { 0 };
        size_t total = session_total_steps(s);
        static State fwd[16], again;
        for (size_t i = 0; i <= total; i++) {
            capture(s, &fwd[i]);
            if (i < total)
                assert_int_equal(session_step(s, &e), 1);
        }
        assert_int_equal(session_step(s, &e), 0);
        for (size_t i = total; i > 0; i--) {
            assert_int_equal(session_back(s, &e), 1);
            capture(s, &again);
            assert_memory_equal(&again, &fwd[i - 1], sizeof again);
        }
        assert_int_equal(session_back(s, &e), 0);
        for (size_t i = 1; i <= total; i++) {
            assert_int_equal(session_step(s, &e), 1);
            capture(s, &again);
            assert_memory_equal(&again, &fwd[i], sizeof again);
        }
        assert_int_equal(session_seek(s, 2, &e), 0);
        capture(s, &again);
        assert_memory_equal(&again, &fwd[2], sizeof again);
        assert_int_equal(session_reset(s, &e), 0);
        capture(s, &again);
        assert_memory_equal(&again, &fwd[0], sizeof again);
        session_free(s);
    }
    model_free(&m);
}

/* Attention rows are softmax weights: each sums to 1 over positions <= q. */
static void test_attention_rows(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[4];
    test_tokens(prompt, 4, c.vocab, 2);
    Session *s = open_session(&m, "contiguous", prompt, 4, 0, UNCACHED_AUTO);
    assert_true(session_has_attn(s));
    assert_null(session_attn_row(s, 0, 0, 0));
    step_all(s);
    for (size_t l = 0; l < 2; l++)
        for (size_t h = 0; h < 4; h++)
            for (size_t p = 0; p < session_positions(s); p++) {
                const float *row = session_attn_row(s, l, h, p);
                assert_non_null(row);
                double sum = 0;
                for (size_t j = 0; j <= p; j++)
                    sum += row[j];
                assert_true(fabs(sum - 1.0) < 1e-5);
            }
    session_free(s);

    /* the flash form keeps no weights, and the session says so */
    SessionSpec sp = { .cfg = c, .kern = m.kern, .attend = ATTEND_FLASH, .prompt = prompt, .prompt_len = 4,
                       .go = { .n_generate = 2 } };
    Err e = { 0 };
    assert_int_equal(session_init(&s, &sp, &e), 0);
    assert_false(session_has_attn(s));
    session_free(s);
    model_free(&m);
}

/* A shift cache attends at its own positions; the session keeps each
 * weight at the row's text position: every row sums to 1, the positions
 * the shift discarded draw nothing once they are gone, the kept first ones
 * and the survivors do. */
static void test_attention_rows_after_a_shift(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[4];
    test_tokens(prompt, 4, c.vocab, 2);
    /* 4 + 7 - 1 = 10 positions in 8 rows: the pass at 8 discards (8 - 2) / 2 = 3, positions 2, 3 and 4 */
    Session *s = open_session(&m, "shift:ctx=8,keep=2", prompt, 4, 0, UNCACHED_FORMULA);
    step_all(s);
    assert_int_equal(session_positions(s), 10);
    /* its passes hold at most (8 - 2) / 2 = 3 tokens: the prompt takes 2, as the session counts */
    assert_int_equal(session_total_steps(s), 2 + N_GEN - 1);
    assert_int_equal(session_steps(s), session_total_steps(s));
    for (size_t l = 0; l < 2; l++)
        for (size_t h = 0; h < 4; h++)
            for (size_t p = 0; p < 10; p++) {
                const float *row = session_attn_row(s, l, h, p);
                assert_non_null(row);
                double sum = 0;
                for (size_t j = 0; j <= p; j++) {
                    sum += row[j];
                    const int gone = p >= 8 && j >= 2 && j < 5;
                    if (gone ? row[j] != 0 : !(row[j] > 0))
                        fail_msg("layer %zu head %zu query %zu: weight %g at position %zu", l, h, p, row[j], j);
                }
                assert_true(fabs(sum - 1.0) < 1e-5);
            }
    session_free(s);

    /* a ring's pass of 2 and back: the session counts the passes of the cache it holds */
    Err e = { 0 };
    s = open_session(&m, "contiguous", prompt, 4, 0, UNCACHED_FORMULA);
    assert_int_equal(session_total_steps(s), N_GEN);
    assert_int_equal(session_set_cache(s, "ring:window=4,pass=2", &e), 0);
    step_all(s);
    assert_int_equal(session_steps(s), 2 + N_GEN - 1);
    assert_int_equal(session_set_cache(s, "contiguous", &e), 0);
    assert_int_equal(session_total_steps(s), N_GEN);
    assert_int_equal(session_steps(s), N_GEN);
    session_free(s);
    model_free(&m);
}

/* Past the model's context a session runs with a shift cache alone: no
 * uncached pass (formula), other caches refused at the start and when
 * switched to, the session left as it was. */
static void test_past_the_context(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.max_seq_len = 8;
    Model m;
    test_model(&m, &c);
    int prompt[4];
    test_tokens(prompt, 4, c.vocab, 2);
    SessionSpec sp = { .cfg = c, .kern = m.kern, .attend = ATTEND_NAIVE, .cache_spec = "contiguous",
                       .prompt = prompt, .prompt_len = 4, .go = { .n_generate = 20 } };
    Session *s;
    Err e = { 0 };
    assert_int_equal(session_init(&s, &sp, &e), -1);
    assert_non_null(strstr(e.msg, "needs 23 positions; model 'test-2L-4H-2KV' has max_seq_len 8 (a shift cache"));
    sp.cache_spec = "shift:keep=2";
    sp.uncached = UNCACHED_MEASURED;
    assert_int_equal(session_init(&s, &sp, &e), -1);
    assert_non_null(strstr(e.msg, "no uncached pass runs"));
    sp.uncached = UNCACHED_AUTO;
    assert_int_equal(session_init(&s, &sp, &e), 0);
    step_all(s);
    assert_int_equal(session_positions(s), 23);
    assert_true(session_record(s, session_steps(s) - 1)->unc_formula);
    const size_t steps = session_steps(s);
    assert_int_equal(session_set_cache(s, "contiguous", &e), -1);
    assert_string_equal(session_cache_spec(s), "shift:keep=2");
    assert_int_equal(session_steps(s), steps);
    session_free(s);
    model_free(&m);
}

/* Switching the cache replays to the same pass, with its own counters; a
 * bad spec leaves the session as it was. */
static void test_switch_cache(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[5];
    test_tokens(prompt, 5, c.vocab, 4);
    Session *s = open_session(&m, "contiguous", prompt, 5, 0, UNCACHED_AUTO);
    Err e = { 0 };
    assert_int_equal(session_seek(s, 4, &e), 0);
    uint64_t reserved = session_record(s, 3)->ctr.cache_bytes_reserved;
    assert_int_equal(session_set_cache(s, "dynamic", &e), 0);
    assert_int_equal(session_steps(s), 4);
    assert_string_equal(session_cache_spec(s), "dynamic");
    assert_true(session_record(s, 3)->ctr.cache_bytes_reserved < reserved);
    assert_true(session_record(s, 3)->ctr.allocations > 0);

    assert_int_equal(session_set_cache(s, "magic", &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_string_equal(session_cache_spec(s), "dynamic");
    assert_int_equal(session_steps(s), 4);

    /* a cache too small for the run fails at the pass that overflows and
     * leaves the old one in place */
    assert_int_equal(session_seek(s, 6, &e), 0);
    assert_int_equal(session_set_cache(s, "contiguous:max=6", &e), -1);
    assert_string_equal(session_cache_spec(s), "dynamic");
    assert_int_equal(session_steps(s), 6);

    /* another model: the session is rebuilt and replayed */
    Config c2 = test_config(1, 2, 1);
    int prompt2[3] = { 1, 2, 3 };
    assert_int_equal(session_set_model(s, &c2, m.kern, prompt2, 3, &e), 0);
    assert_int_equal(session_model(s)->cfg.n_layers, 1);
    assert_int_equal(session_steps(s), 6);
    assert_string_equal(session_cache_spec(s), "dynamic");
    session_free(s);
    model_free(&m);
}

/* A record counts the rows attention read for the pass's last token: the
 * positions with a cache that keeps them all, the sinks and the window with
 * a ring at each decode pass (fewer than the positions). */
static void test_rows_read(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[9];
    test_tokens(prompt, 9, c.vocab, 3);
    Session *full = open_session(&m, "contiguous", prompt, 9, 0, UNCACHED_FORMULA);
    Session *ring = open_session(&m, "ring:window=4,sinks=2", prompt, 9, 0, UNCACHED_FORMULA);
    step_all(full);
    step_all(ring);
    assert_int_equal(session_steps(full), session_steps(ring));
    for (size_t i = 0; i < session_steps(full); i++) {
        const StepRecord *a = session_record(full, i), *b = session_record(ring, i);
        assert_int_equal(a->seen_min, a->context);
        assert_int_equal(a->seen_max, a->context);
        assert_int_equal(b->context, a->context);
        if (b->phase == PHASE_PREFILL)
            continue; /* a pass of several tokens holds more rows than the window while it runs */
        const size_t want = a->context < 6 ? a->context : 6; /* 2 sinks + a window of 4 */
        assert_int_equal(b->seen_min, want);
        assert_int_equal(b->seen_max, want);
    }
    session_free(full);
    session_free(ring);
    model_free(&m);
}

/* Bad input fails before any work, with the reason. */
static void test_bad_spec(void **state)
{
    (void)state;
    Config c = test_config(1, 2, 1);
    Model m;
    test_model(&m, &c);
    int prompt[2] = { 0, 1 };
    Session *s;
    Err e = { 0 };
    SessionSpec sp = { .cfg = c, .kern = m.kern, .prompt = prompt, .prompt_len = 2, .go = { .n_generate = 300 } };
    assert_int_equal(session_init(&s, &sp, &e), -1);
    assert_non_null(strstr(e.msg, "max_seq_len"));
    assert_null(s);
    prompt[1] = 999;
    sp.go.n_generate = 2;
    assert_int_equal(session_init(&s, &sp, &e), -1);
    assert_non_null(strstr(e.msg, "vocabulary"));
    prompt[1] = 1;
    sp.cache_spec = "contiguous:bogus=1";
    assert_int_equal(session_init(&s, &sp, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    model_free(&m);
}

/* A batch of three on a paged cache: sequence 1 shares the prompt's full
 * pages by prefix, the fork shares every page and the first decode copies
 * the partly filled one; sequence 0 chooses what it chooses alone. */
static void test_batch_fork(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[8];
    test_tokens(prompt, 8, c.vocab, 5);
    Session *one = open_session(&m, "paged:page=3", prompt, 8, 0, UNCACHED_MEASURED);
    SessionSpec sp = {
        .cfg = m.cfg, .kern = m.kern, .attend = ATTEND_NAIVE, .cache_spec = "paged:page=3", .prompt = prompt,
        .prompt_len = 8, .go = { .n_generate = N_GEN }, .uncached = UNCACHED_MEASURED, .batch = 3,
    };
    Session *s;
    Err e = { 0 };
    if (session_init(&s, &sp, &e) < 0)
        fail_msg("session_init: %s", e.msg);
    assert_int_equal(session_batch(s), 3);
    KvStats st;
    assert_int_equal(session_step(s, &e), 1); /* prefill: pages 0, 1 by all three, page 2 by 0 and the fork */
    kv_stats(session_cache(s), &st);
    assert_int_equal(st.prefix_hits, 2);
    assert_int_equal(st.pages_shared, 3);
    assert_int_equal(st.cow_copies, 0);
    assert_int_equal(session_step(s, &e), 1); /* the first write into page 2 copies it */
    kv_stats(session_cache(s), &st);
    assert_int_equal(st.cow_copies, 1);
    assert_int_equal(st.pages_shared, 2);
    assert_int_equal(session_back(s, &e), 1); /* replay reaches the same pool */
    assert_int_equal(session_step(s, &e), 1);
    KvStats again;
    kv_stats(session_cache(s), &again);
    assert_memory_equal(&st, &again, sizeof st);
    step_all(s);
    step_all(one);
    size_t n1, nb;
    const int *t1 = session_tokens(one, &n1), *tb = session_tokens(s, &nb);
    assert_int_equal(n1, nb);
    assert_memory_equal(t1, tb, n1 * sizeof(int));
    /* the uncached equivalent re-runs all three sequences */
    const StepRecord *r1 = session_record(one, 1), *rb = session_record(s, 1);
    assert_int_equal(rb->unc.tokens_projected, 3 * r1->unc.tokens_projected);
    session_free(one);
    session_free(s);
    model_free(&m);
}

int main(void)
{
    use_repo_data();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_match_generate),
        cmocka_unit_test(test_formula_matches_measured),
        cmocka_unit_test(test_back_forward_identical),
        cmocka_unit_test(test_attention_rows),
        cmocka_unit_test(test_attention_rows_after_a_shift),
        cmocka_unit_test(test_past_the_context),
        cmocka_unit_test(test_switch_cache),
        cmocka_unit_test(test_bad_spec),
        cmocka_unit_test(test_rows_read),
        cmocka_unit_test(test_batch_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
