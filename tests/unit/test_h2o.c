/* test_h2o.c: heavy-hitter eviction. The cache never holds more than its
 * budget; the recent window is never evicted; the positions kept are the
 * ones that drew the most attention; with a budget larger than the sequence
 * it is exact. */
#include "testutil.h"

#include "kv/cache.h"
#include "sim/quality.h"

static void test_budget_recent_and_heavy_hitters(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 2, .head_dim = 4, .max_seq_len = 64 };
    Err e = { 0 };
    KvCache *c = kv_open("h2o:budget=6,recent=2,pass=4", &g, &e);
    assert_non_null(c);
    float rows[4 * 2 * 4] = { 0 };
    /* 4 rows, then attention that loves position 1 */
    assert_int_equal(kv_append(c, 0, 0, 0, 4, rows, rows, NULL, &e), 0);
    float w[2 * 64] = { 0 }; /* G = 1 head per KV head here; stride 64 */
    w[1] = 0.9f, w[0] = 0.05f, w[2] = 0.03f, w[3] = 0.02f;
    for (size_t h = 0; h < 2; h++)
        c->ops->observe(c, 0, 0, h, w, 0, 64, 1, 1, 4);
    /* 4 more: 8 held > budget 6: the two weakest outside the recent 2 (6, 7) go: positions 4 and 5,
     * which have drawn no attention yet (a recent window protects only the newest) */
    assert_int_equal(kv_append(c, 0, 0, 4, 4, rows, rows, NULL, &e), 0);
    memset(w, 0, sizeof w);
    for (size_t h = 0; h < 2; h++)
        c->ops->observe(c, 0, 0, h, w, 0, 64, 1, 1, 8);
    KvCell cells[8];
    kv_cells(c, 0, 0, cells, 8);
    static const int want[8] = { CELL_EXACT, CELL_EXACT, CELL_EXACT, CELL_EXACT,
                                 CELL_EVICTED, CELL_EVICTED, CELL_EXACT, CELL_EXACT };
    for (size_t i = 0; i < 8; i++)
        if (cells[i].state != want[i])
            fail_msg("position %zu: state %d, want %d", i, cells[i].state, want[i]);
    /* blocks: positions 0-3, then 6-7 */
    assert_int_equal(kv_n_blocks(c, 0, 0), 2);
    KvBlock b;
    kv_block(c, 0, 0, 1, 1, &b);
    assert_int_equal(b.pos, 6);
    assert_int_equal(b.n, 2);
    KvStats st;
    kv_stats(c, &st);
    assert_int_equal(st.evictions, 2);
    assert_int_equal(kv_bytes_used(c), 6 * 2 * 2 * 4 * sizeof(float));
    kv_free(c);

    assert_null(kv_open("h2o:budget=4,recent=8", &g, &e));
    assert_non_null(strstr(e.msg, "recent=8 must not exceed budget=4"));
}

/* Through the model: with a budget above the sequence length nothing is
 * evicted and the run is exact; below it, memory stays bounded and some
 * attention mass is lost. */
static void test_through_the_model(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int prompt[40];
    test_tokens(prompt, 40, c.vocab, 21);
    GenOptions o = { .n_generate = 6 };
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(&m, 1);
    QualitySummary s;
    KvCache *big = kv_open("h2o:budget=64,recent=8,pass=16", &geo, &e);
    assert_int_equal(quality_run(&m, big, prompt, 40, &o, NULL, NULL, &s, &e), 0);
    printf("  budget 64: attention error %.3g, mass kept %.4f\n", s.max_attn_err, s.min_mass_kept);
    assert_true(s.max_attn_err < 1e-5 && s.min_mass_kept > 1 - 1e-5);
    kv_free(big);
    KvCache *small = kv_open("h2o:budget=16,recent=4,pass=16", &geo, &e);
    assert_int_equal(quality_run(&m, small, prompt, 40, &o, NULL, NULL, &s, &e), 0);
    printf("  budget 16: attention error %.3g, mass kept %.4f\n", s.max_attn_err, s.min_mass_kept);
    assert_true(s.min_mass_kept < 1 - 1e-3);
    assert_true(kv_bytes_used(small) <= 2 * 16 * kv_row_pair_bytes(&geo, FMT_F32, FMT_F32));
    KvStats st;
    kv_stats(small, &st);
    assert_true(st.evictions > 0);
    kv_free(small);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_recent_and_heavy_hitters),
        cmocka_unit_test(test_through_the_model),
    };
    return cmocka_run_group_tests_name("h2o", tests, NULL, NULL);
}
