/* test_structure.c: attention structure as a model option. Specs parse or
 * fail with a clear message; exact caches still equal the uncached run with
 * every bias on, on every ISA path; on the retrieval prompt, a cache that
 * evicts the needle changes the answer, and one that keeps it (sinks, heavy
 * hitters) does not. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/generate.h"
#include "model/structure.h"
#include "sim/quality.h"

static void test_parse_place_describe(void **state)
{
    (void)state;
    Structure s;
    Err e = { 0 };
    char d[512];
    assert_int_equal(structure_parse("none", &s, &e), 0);
    assert_false(structure_on(&s));
    assert_string_equal(structure_describe(&s, d, sizeof d), "none");

    assert_int_equal(structure_parse("sink=2,local=0.1,heavy=4,heavy_bias=2.5,retrieval,needle=3", &s, &e), 0);
    assert_true(s.sink && s.local && s.heavy && s.retrieval);
    assert_int_equal(structure_place(&s, 50, &e), 0);
    assert_int_equal(s.bias.needle, 3);
    assert_int_equal(s.bias.ask, 49); /* the prompt's last token asks */
    const size_t heavy[] = { 10, 20, 30, 40 }; /* 50 tokens, 4 hitters: evenly spread */
    assert_memory_equal(s.heavy_pos, heavy, sizeof heavy);
    structure_describe(&s, d, sizeof d);
    assert_non_null(strstr(d, "sink +2 on position 0"));
    assert_non_null(strstr(d, "heavy hitters +2.5 at 10,20,30,40"));
    assert_non_null(strstr(d, "needle at 3 from the question at 49"));
    /* the biases, as attention sees them */
    assert_float_equal(attn_bias_at(&s.bias, 49, 0), 2.0f - 0.1f * 49, 1e-5);
    assert_float_equal(attn_bias_at(&s.bias, 49, 3), 8.0f - 0.1f * 46, 1e-5);
    assert_float_equal(attn_bias_at(&s.bias, 48, 3), -0.1f * 45, 1e-5); /* before the question */
    assert_float_equal(attn_bias_at(&s.bias, 45, 20), 2.5f - 0.1f * 25, 1e-5);

    static const char *bad[] = { "bogus", "sink=abc", "needle=3", "heavy=100", "sink=-1", "heavy_bias", "sink,,local",
                                 "local=1e9" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = '\0';
        if (structure_parse(bad[i], &s, &e) == 0)
            fail_msg("'%s' was accepted", bad[i]);
        assert_true(e.kind == ERR_USAGE && strstr(e.msg, "structure") != NULL);
    }
    assert_int_equal(structure_parse("retrieval,needle=9", &s, &e), 0);
    assert_int_equal(structure_place(&s, 10, &e), -1); /* the needle would be the question itself */
    assert_non_null(strstr(e.msg, "must come before the question"));
    assert_int_equal(structure_parse("heavy=5", &s, &e), 0);
    assert_int_equal(structure_place(&s, 4, &e), -1);
}

/* The first invariant holds with structure on: an exact cache gives the
 * uncached run's tokens and logits, every form, every ISA. */
static void test_exact_cache_with_structure(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    Structure s;
    Err e = { 0 };
    assert_int_equal(structure_parse("sink,local,heavy,retrieval", &s, &e), 0);
    const size_t plen = 24, n_gen = 8;
    assert_int_equal(structure_place(&s, plen, &e), 0);
    m.bias = &s.bias;
    int prompt[24], a[8], b[8];
    test_tokens(prompt, plen, c.vocab, 4);
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4), runs = 0;
    for (size_t k = 0; k < n_isa; k++)
        for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++)
            for (size_t chunk = 0; chunk <= 5; chunk += 5) {
                m.kern = isa[k];
                m.attend = (AttendAlgo)algo;
                KvGeometry geo = model_kv_geometry(&m, 1);
                KvCache *kc = kv_open("contiguous", &geo, &e);
                GenOptions go = { .n_generate = n_gen, .chunk = chunk };
                assert_int_equal(generate(&m, kc, prompt, 1, plen, &go, a, NULL, NULL, &e), 0);
                assert_int_equal(generate(&m, NULL, prompt, 1, plen, &go, b, NULL, NULL, &e), 0);
                if (memcmp(a, b, sizeof a) != 0)
                    fail_msg("%s %s chunk %zu: cached and uncached tokens differ", isa[k]->isa,
                             attend_algo_name(m.attend), chunk);
                kv_free(kc);
                runs++;
            }
    printf("  %zu (ISA, form, chunk) runs: cached == uncached with every bias on\n", runs);
    model_free(&m);
}

static QualitySummary quality(const Model *m, const char *spec, const int *prompt, size_t plen, size_t chunk)
{
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *c = kv_open(spec, &geo, &e);
    if (!c)
        fail_msg("%s: %s", spec, e.msg);
    GenOptions o = { .n_generate = 6, .chunk = chunk };
    QualitySummary s;
    if (quality_run(m, c, prompt, plen, &o, NULL, NULL, &s, &e) < 0)
        fail_msg("quality %s: %s", spec, e.msg);
    kv_free(c);
    printf("  %-28s mass kept >= %.4f, attention error %.3g, first divergence %zu/%zu\n", spec, s.min_mass_kept,
           s.max_attn_err, s.first_divergence, s.steps);
    return s;
}

/* The retrieval prompt: the last prompt token needs the one at position 1.
 * A window of 8 (prefill in passes of 8, so the needle is gone before the
 * question) loses it and the answer changes; 4 sinks keep it, and so does
 * heavy-hitter eviction when it sees the question's attention before it
 * evicts (a one-pass prefill): the answer stays. */
static void test_retrieval(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.head_dim = 32, c.d_model = 64;
    Model m;
    test_model(&m, &c);
    m.attend = ATTEND_FLASH;
    const size_t plen = 40;
    int prompt[40];
    test_tokens(prompt, plen, c.vocab, 9);
    Structure s;
    Err e = { 0 };
    assert_int_equal(structure_parse("retrieval", &s, &e), 0);
    assert_int_equal(structure_place(&s, plen, &e), 0);
    m.bias = &s.bias;

    QualitySummary exact = quality(&m, "contiguous", prompt, plen, 8);
    assert_int_equal(exact.first_divergence, exact.steps);
    assert_true(exact.max_attn_err < 1e-5 && exact.min_mass_kept > 1 - 1e-5);

    QualitySummary lost = quality(&m, "ring:window=8,pass=8", prompt, plen, 8);
    assert_int_equal(lost.first_divergence, 0); /* the very answer changes */
    assert_true(lost.min_mass_kept < 0.5);      /* most of the question's attention was on the needle */

    QualitySummary sinks = quality(&m, "ring:window=8,sinks=4,pass=8", prompt, plen, 8);
    assert_int_equal(sinks.first_divergence, sinks.steps);
    QualitySummary h2o = quality(&m, "h2o:budget=16,recent=8", prompt, plen, 0);
    assert_int_equal(h2o.first_divergence, h2o.steps);
    /* in passes of 8 it must choose before the question exists: shown, not asserted */
    quality(&m, "h2o:budget=16,recent=8,pass=8", prompt, plen, 8);
    assert_true(sinks.min_mass_kept > lost.min_mass_kept && h2o.min_mass_kept > lost.min_mass_kept);

    /* without the structure the same window keeps most of a near-uniform attention's mass... */
    m.bias = NULL;
    QualitySummary flat = quality(&m, "ring:window=8,pass=8", prompt, plen, 8);
    assert_true(flat.min_mass_kept > lost.min_mass_kept);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_place_describe),
        cmocka_unit_test(test_exact_cache_with_structure),
        cmocka_unit_test(test_retrieval),
    };
    return cmocka_run_group_tests_name("structure", tests, NULL, NULL);
}
