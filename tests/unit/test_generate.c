/* test_generate.c: the first invariant. With an exact cache, cached and
 * uncached generation choose identical tokens and produce the same logits
 * (within LOGIT_REL_TOL), whatever the prompt length, batch, head layout,
 * depth, cache layout and prefill chunking. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/generate.h"

#define LOGIT_REL_TOL 1e-5
#define N_GENERATE 6

/* Run both paths; 1 when they agree, else print why and return 0. */
static int agree(const Model *m, const char *spec, size_t batch, size_t plen, size_t chunk)
{
    const Config *c = &m->cfg;
    int *prompt = malloc(batch * plen * sizeof(int));
    int out_c[3 * N_GENERATE], out_u[3 * N_GENERATE];
    size_t per_step = batch * c->vocab;
    TestLog lc = { malloc(N_GENERATE * per_step * sizeof(float)), per_step, 0 };
    TestLog lu = { malloc(N_GENERATE * per_step * sizeof(float)), per_step, 0 };
    test_tokens(prompt, batch * plen, c->vocab, (unsigned)plen);

    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, batch);
    KvCache *cache = kv_open(spec, &geo, &e);
    assert_non_null(cache);
    GenOptions go = { .n_generate = N_GENERATE, .chunk = chunk };
    assert_int_equal(generate(m, cache, prompt, batch, plen, &go, out_c, log_logits, &lc, &e), 0);
    assert_int_equal(generate(m, NULL, prompt, batch, plen, &go, out_u, log_logits, &lu, &e), 0);
    assert_int_equal(lc.n, N_GENERATE);
    assert_int_equal(lu.n, N_GENERATE);

    int ok = memcmp(out_c, out_u, batch * N_GENERATE * sizeof(int)) == 0;
    double worst = 0;
    for (size_t s = 0; s < N_GENERATE; s++) {
        double scale = 0, d = 0;
        for (size_t i = 0; i < per_step; i++) {
            scale = fmax(scale, fabs(lu.logits[s * per_step + i]));
            d = fmax(d, fabs((double)lc.logits[s * per_step + i] - lu.logits[s * per_step + i]));
        }
        worst = fmax(worst, d / scale);
    }
    if (!ok || worst > LOGIT_REL_TOL) {
        printf("  DISAGREE: %s isa=%s attention=%s cache=%s batch=%zu prompt=%zu chunk=%zu tokens %s, max rel logit "
               "diff %.3g\n", c->name, m->kern->isa, attend_algo_name(m->attend), spec, batch, plen, chunk,
               ok ? "same" : "differ", worst);
        ok = 0;
    }
    kv_free(cache);
    free(prompt);
    free(lc.logits);
    free(lu.logits);
    return ok;
}

/* The whole matrix, on every ISA this CPU runs and in every attention form. */
static void test_cached_equals_uncached(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    static const size_t layers[] = { 1, 4 };
    static const size_t kv_heads[] = { 4, 2 }; /* MHA (4 of 4), GQA (2 of 4) */
    static const size_t prompt_lens[] = { 1, 5, 64 };
    static const size_t batches[] = { 1, 3 };
    static const char *const specs[] = { "contiguous", "dynamic" };
    static const size_t chunks[] = { 0, 4 };
    size_t runs = 0, failures = 0;
    for (size_t li = 0; li < 2; li++)
        for (size_t hi = 0; hi < 2; hi++) {
            Config c = test_config(layers[li], 4, kv_heads[hi]);
            Model m;
            test_model(&m, &c);
            for (size_t k = 0; k < n_isa; k++)
                for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
                    m.kern = isa[k];
                    m.attend = (AttendAlgo)algo;
                    for (size_t pi = 0; pi < 3; pi++)
                        for (size_t bi = 0; bi < 2; bi++)
                            for (size_t si = 0; si < 2; si++)
                                for (size_t ci = 0; ci < 2; ci++) {
                                    runs++;
                                    failures += !agree(&m, specs[si], batches[bi], prompt_lens[pi], chunks[ci]);
                                }
                }
            model_free(&m);
        }
    printf("  %zu configurations x %zu ISA paths x 3 attention forms = %zu runs, %zu disagreements\n", runs / n_isa / 3,
           n_isa, runs, failures);
    assert_int_equal(runs, 96 * n_isa * 3);
    assert_int_equal(failures, 0);
}

/* Chunked prefill (the document's split_prefill exercise) leaves exactly
 * the cache a single-pass prefill leaves. */
static void test_split_prefill_same_cache(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    const size_t plen = 13;
    int prompt[13], out[1];
    test_tokens(prompt, plen, c.vocab, 3);
    KvGeometry geo = model_kv_geometry(&m, 1);
    Err e = { 0 };
    KvCache *whole = kv_open("contiguous", &geo, &e), *split = kv_open("contiguous", &geo, &e);
    GenOptions go_whole = { .n_generate = 1 }, go_split = { .n_generate = 1, .chunk = 5 };
    assert_int_equal(generate(&m, whole, prompt, 1, plen, &go_whole, out, NULL, NULL, &e), 0);
    assert_int_equal(generate(&m, split, prompt, 1, plen, &go_split, out, NULL, NULL, &e), 0);
    for (size_t l = 0; l < c.n_layers; l++)
        for (size_t h = 0; h < c.n_kv_heads; h++) {
            KvBlock a, b;
            assert_int_equal(kv_length(whole, l, 0), plen);
            assert_int_equal(kv_length(split, l, 0), plen);
            kv_block(whole, l, 0, h, 0, &a);
            kv_block(split, l, 0, h, 0, &b);
            for (size_t r = 0; r < plen; r++) {
                const float *ka = (const float *)((const char *)a.k + r * a.k_stride);
                const float *kb = (const float *)((const char *)b.k + r * b.k_stride);
                const float *va = (const float *)((const char *)a.v + r * a.v_stride);
                const float *vb = (const float *)((const char *)b.v + r * b.v_stride);
                assert_true(max_rel_diff(kb, ka, c.head_dim, 1e-6, "K") <= 1e-6);
                assert_true(max_rel_diff(vb, va, c.head_dim, 1e-6, "V") <= 1e-6);
            }
        }
    kv_free(whole);
    kv_free(split);
    model_free(&m);
}

/* Decoding at the wrong RoPE position (pitfall 1) changes the logits: the
 * absolute position is what the engine uses. */
static void test_wrong_rope_position_changes_output(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[6], right[4], wrong[4];
    test_tokens(prompt, 6, c.vocab, 9);
    size_t per_step = c.vocab;
    TestLog lr = { malloc(4 * per_step * sizeof(float)), per_step, 0 };
    TestLog lw = { malloc(4 * per_step * sizeof(float)), per_step, 0 };
    KvGeometry geo = model_kv_geometry(&m, 1);
    Err e = { 0 };
    GenOptions go = { .n_generate = 4 };
    KvCache *cache = kv_open("contiguous", &geo, &e);
    assert_int_equal(generate(&m, cache, prompt, 1, 6, &go, right, log_logits, &lr, &e), 0);
    kv_reset(cache);
    m.bugs = BUG_ROPE_POSITION;
    assert_int_equal(generate(&m, cache, prompt, 1, 6, &go, wrong, log_logits, &lw, &e), 0);
    /* the prefill is unaffected; every decode step's logits move */
    assert_true(max_rel_diff(lw.logits, lr.logits, per_step, 0, "prefill") == 0.0);
    for (size_t s = 1; s < 4; s++) {
        double d = 0;
        for (size_t i = 0; i < per_step; i++)
            d = fmax(d, fabs((double)lw.logits[s * per_step + i] - lr.logits[s * per_step + i]));
        printf("  decode step %zu: max |logit change| %.3g\n", s, d);
        assert_true(d > 1e-3);
    }
    kv_free(cache);
    free(lr.logits);
    free(lw.logits);
    model_free(&m);
}

/* A sliding window (Mistral's) limits what each query sees, identically in
 * both paths; past the window it changes the output. */
static void test_sliding_window(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model full, windowed;
    test_model(&full, &c);
    c.sliding_window = 4;
    test_model(&windowed, &c);
    assert_true(agree(&windowed, "contiguous", 1, 10, 0));
    assert_true(agree(&windowed, "dynamic", 3, 10, 3));

    int prompt[10], a[4], b[4];
    test_tokens(prompt, 10, c.vocab, 4);
    size_t per_step = c.vocab;
    TestLog la = { malloc(4 * per_step * sizeof(float)), per_step, 0 };
    TestLog lb = { malloc(4 * per_step * sizeof(float)), per_step, 0 };
    Err e = { 0 };
    GenOptions go = { .n_generate = 4 };
    assert_int_equal(generate(&full, NULL, prompt, 1, 10, &go, a, log_logits, &la, &e), 0);
    assert_int_equal(generate(&windowed, NULL, prompt, 1, 10, &go, b, log_logits, &lb, &e), 0);
    double d = 0;
    for (size_t i = 0; i < per_step; i++)
        d = fmax(d, fabs((double)la.logits[i] - lb.logits[i]));
    printf("  window 4 vs none, prompt 10: max |logit change| %.3g\n", d);
    assert_true(d > 1e-3);
    free(la.logits);
    free(lb.logits);
    model_free(&full);
    model_free(&windowed);
}

/* Each of the document's four pitfalls, switched on, breaks the invariant:
 * the cached logits leave the uncached reference, which none of them touch. */
static void test_pitfalls_break_equivalence(void **state)
{
    (void)state;
    static const Bug bugs[] = { BUG_ROPE_POSITION, BUG_MASK_IN_DECODE, BUG_ROPE_ON_V, BUG_IGNORE_APPEND };
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[6], ref_tokens[5], out[5];
    test_tokens(prompt, 6, c.vocab, 5);
    size_t per_step = c.vocab;
    TestLog ref = { malloc(5 * per_step * sizeof(float)), per_step, 0 };
    Err e = { 0 };
    GenOptions go = { .n_generate = 5 };
    m.bugs = BUG_ROPE_POSITION | BUG_MASK_IN_DECODE | BUG_ROPE_ON_V | BUG_IGNORE_APPEND;
    assert_int_equal(generate(&m, NULL, prompt, 1, 6, &go, ref_tokens, log_logits, &ref, &e), 0);
    m.bugs = BUG_NONE;
    TestLog clean = { malloc(5 * per_step * sizeof(float)), per_step, 0 };
    assert_int_equal(generate(&m, NULL, prompt, 1, 6, &go, out, log_logits, &clean, &e), 0);
    assert_memory_equal(ref.logits, clean.logits, 5 * per_step * sizeof(float)); /* uncached: bugs do nothing */
    for (size_t i = 0; i < 4; i++) {
        TestLog lb = { malloc(5 * per_step * sizeof(float)), per_step, 0 };
        KvGeometry geo = model_kv_geometry(&m, 1);
        KvCache *cache = kv_open("contiguous", &geo, &e);
        m.bugs = bugs[i];
        assert_int_equal(generate(&m, cache, prompt, 1, 6, &go, out, log_logits, &lb, &e), 0);
        m.bugs = BUG_NONE;
        double d = 0;
        for (size_t k = 0; k < 5 * per_step; k++)
            d = fmax(d, fabs((double)lb.logits[k] - ref.logits[k]));
        printf("  %-15s max |logit - reference| %.3g\n", bug_name(bugs[i]), d);
        assert_true(d > 1e-3);
        kv_free(cache);
        free(lb.logits);
    }
    free(ref.logits);
    free(clean.logits);
    model_free(&m);
}

static void test_same_seed_same_bits(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model a, b;
    test_model(&a, &c);
    test_model(&b, &c);
    assert_int_equal(a.arena_floats, b.arena_floats);
    assert_memory_equal(a.arena, b.arena, a.arena_floats * sizeof(float));
    c.seed += 1;
    Model d;
    test_model(&d, &c);
    assert_memory_not_equal(a.arena, d.arena, a.arena_floats * sizeof(float));
    model_free(&a);
    model_free(&b);
    model_free(&d);
}

static void test_too_long_is_refused(void **state)
{
    (void)state;
    Config c = test_config(1, 4, 2);
    c.max_seq_len = 10;
    Model m;
    test_model(&m, &c);
    int prompt[8] = { 0 }, out[4];
    Err e = { 0 };
    GenOptions go = { .n_generate = 4 }; /* 8 + 4 - 1 = 11 positions > 10 */
    assert_int_equal(generate(&m, NULL, prompt, 1, 8, &go, out, NULL, NULL, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "max_seq_len 10"));
    go.n_generate = 3; /* exactly 10 positions: allowed */
    assert_int_equal(generate(&m, NULL, prompt, 1, 8, &go, out, NULL, NULL, &e), 0);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cached_equals_uncached),
        cmocka_unit_test(test_split_prefill_same_cache),
        cmocka_unit_test(test_wrong_rope_position_changes_output),
        cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_pitfalls_break_equivalence),
        cmocka_unit_test(test_same_seed_same_bits),
        cmocka_unit_test(test_too_long_is_refused),
    };
    return cmocka_run_group_tests_name("generate", tests, NULL, NULL);
}
