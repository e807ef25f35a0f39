/* test_quality.c: quality against the exact shadow. An exact cache shows no
 * error and keeps all the attention mass; a window that drops rows loses
 * mass; coarser formats lose more. */
#include "testutil.h"

#include "kv/cache.h"
#include "sim/quality.h"

static QualitySummary measure(const Model *m, const char *spec, size_t plen, size_t n_gen)
{
    int prompt[64];
    test_tokens(prompt, plen, m->cfg.vocab, 6);
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *c = kv_open(spec, &geo, &e);
    if (!c)
        fail_msg("%s: %s", spec, e.msg);
    GenOptions o = { .n_generate = n_gen };
    QualitySummary s;
    if (quality_run(m, c, prompt, plen, &o, NULL, NULL, &s, &e) < 0)
        fail_msg("quality %s: %s", spec, e.msg);
    kv_free(c);
    printf("  %-34s attention error %.3g, mass kept >= %.4f, logit error %.3g, first divergence %zu/%zu\n",
           spec, s.max_attn_err, s.min_mass_kept, s.max_logit_err, s.first_divergence, s.steps);
    return s;
}

static void test_quality(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.head_dim = 32, c.d_model = 64;
    Model m;
    test_model(&m, &c);
    for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
        m.attend = (AttendAlgo)algo;
        QualitySummary exact = measure(&m, "contiguous", 30, 6);
        assert_true(exact.max_attn_err < 1e-5);
        assert_true(exact.min_mass_kept > 1 - 1e-5);
        assert_true(exact.max_logit_err < 1e-4);
        assert_int_equal(exact.first_divergence, 6);
        assert_int_equal(exact.steps, 6);
    }
    m.attend = ATTEND_FLASH;
    QualitySummary ring = measure(&m, "ring:window=8,sinks=2,pass=8", 40, 6);
    assert_true(ring.min_mass_kept < 0.99 && ring.min_mass_kept > 0);
    assert_true(ring.max_attn_err > 1e-3);
    QualitySummary q8 = measure(&m, "contiguous+quant:k=q8_0,v=q8_0", 30, 6);
    QualitySummary q4 = measure(&m, "contiguous+quant:k=q4_0,v=q4_0", 30, 6);
    assert_true(q8.min_mass_kept > 1 - 1e-5); /* quantizing drops nothing */
    assert_true(q8.max_attn_err > 0 && q8.max_attn_err < q4.max_attn_err);
    measure(&m, "mixed:hot=16,group=8", 30, 6);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_quality) };
    return cmocka_run_group_tests_name("quality", tests, NULL, NULL);
}
