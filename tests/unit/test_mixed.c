/* test_mixed.c: the mixed-precision cache (the mixed-precision proposal): rows age from f16 to
 * the cold format in groups past the hot threshold (through warm when set);
 * attention sees them in order as up to three blocks; memory shrinks as
 * rows age; the merged view and the fused read give the same output. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/generate.h"

static KvCache *open_mixed(const char *spec, size_t max)
{
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 2, .head_dim = 32, .max_seq_len = max };
    Err e = { 0 };
    KvCache *c = kv_open(spec, &g, &e);
    if (!c)
        fail_msg("%s: %s", spec, e.msg);
    return c;
}

static void append_rows(KvCache *c, size_t n)
{
    float row[2 * 32];
    Err e = { 0 };
    for (size_t t = 0; t < n; t++) {
        size_t pos = kv_length(c, 0, 0);
        for (size_t i = 0; i < 64; i++)
            row[i] = (float)pos + 0.01f * (float)i;
        assert_int_equal(kv_append(c, 0, 0, pos, 1, row, row, NULL, &e), 0);
    }
}

/* The mixed-precision proposal's defaults: threshold 32, group 16, cold q4_0. */
static void test_aging_in_groups(void **state)
{
    (void)state;
    KvCache *c = open_mixed("mixed:hot=32,group=16,cold=q4_0", 256);
    append_rows(c, 32);
    assert_int_equal(kv_n_blocks(c, 0, 0), 1); /* all hot, f16 */
    append_rows(c, 1);                         /* 33 > 32: the oldest 16 go cold */
    assert_int_equal(kv_n_blocks(c, 0, 0), 2);
    KvBlock cold, hot;
    kv_block(c, 0, 0, 1, 0, &cold);
    kv_block(c, 0, 0, 1, 1, &hot);
    assert_int_equal(cold.pos, 0);
    assert_int_equal(cold.n, 16);
    assert_int_equal(cold.k_fmt, FMT_Q4_0);
    assert_int_equal(hot.pos, 16);
    assert_int_equal(hot.n, 17);
    assert_int_equal(hot.k_fmt, FMT_F16);
    /* the aged rows still hold their values (to q4_0 precision) at their positions */
    float dq[32];
    codec_ref[FMT_Q4_0].dequantize(dq, (const char *)cold.k + 7 * cold.k_stride, 32);
    assert_true(fabsf(dq[0] - 7.32f) <= 1.0f && fabsf(dq[31] - 7.63f) <= 1.0f); /* head 1; one q4_0 step is ~0.95 */
    /* memory: 16 rows of q4_0 and 17 of f16, K and V, 2 heads */
    size_t want = 2 * 2 * (16 * format_row_bytes(FMT_Q4_0, 32) + 17 * format_row_bytes(FMT_F16, 32));
    assert_int_equal(kv_bytes_used(c), want);
    kv_free(c);
}

static void test_gradual_aging(void **state)
{
    (void)state;
    KvCache *c = open_mixed("mixed:hot=8,group=4,warm=q8_0,warm_rows=8,cold=q4_0", 256);
    append_rows(c, 40);
    /* hot keeps <= 8, warm <= 8, the rest is cold, all in position order */
    size_t nb = kv_n_blocks(c, 0, 0), pos = 0;
    assert_int_equal(nb, 3);
    static const Format want[3] = { FMT_Q4_0, FMT_Q8_0, FMT_F16 };
    for (size_t b = 0; b < nb; b++) {
        KvBlock blk;
        kv_block(c, 0, 0, 0, b, &blk);
        assert_int_equal(blk.pos, pos);
        assert_int_equal(blk.k_fmt, want[b]);
        pos += blk.n;
    }
    assert_int_equal(pos, 40);
    KvCell cells[40];
    kv_cells(c, 0, 0, cells, 40);
    assert_int_equal(cells[0].k_fmt, FMT_Q4_0);
    assert_int_equal(cells[39].k_fmt, FMT_F16);
    kv_free(c);

    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = 32, .max_seq_len = 64 };
    Err e = { 0 };
    assert_null(kv_open("mixed:hot=8,group=16", &g, &e));
    assert_non_null(strstr(e.msg, "group=16 must not exceed hot=8"));
    assert_null(kv_open("mixed:cold=q3", &g, &e));
    assert_non_null(strstr(e.msg, "unknown format 'q3'"));
}

/* Generation through the mixed cache: the merged view (materialize) and
 * fused reads agree; the loss against the exact run is small but real. */
static void test_read_paths_agree(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.head_dim = 32, c.d_model = 64;
    Model m;
    test_model(&m, &c);
    int prompt[40], out[3][8];
    test_tokens(prompt, 40, c.vocab, 8);
    float *lg[3];
    for (int algo = 0; algo < 3; algo++) {
        Err e = { 0 };
        KvGeometry geo = model_kv_geometry(&m, 1);
        KvCache *kc = kv_open("mixed:hot=16,group=8,warm=q8_0,warm_rows=16", &geo, &e);
        m.attend = (AttendAlgo)algo;
        lg[algo] = malloc(c.vocab * sizeof(float));
        GenOptions go = { .n_generate = 8 };
        Generator *g;
        assert_int_equal(gen_init(&g, &m, kc, prompt, 1, 40, &go, &e), 0);
        StepReport r;
        while (gen_step(g, &r, &e) == 1)
            memcpy(lg[algo], r.logits, c.vocab * sizeof(float)); /* the last step's */
        size_t len;
        memcpy(out[algo], gen_sequence(g, 0, &len) + 40, sizeof out[algo]);
        gen_free(g);
        kv_free(kc);
    }
    assert_memory_equal(out[0], out[1], sizeof out[0]);
    assert_memory_equal(out[0], out[2], sizeof out[0]);
    assert_true(max_rel_diff(lg[1], lg[0], c.vocab, 1e-5, "materialize vs naive") <= 1e-5);
    assert_true(max_rel_diff(lg[2], lg[0], c.vocab, 1e-5, "flash vs naive") <= 1e-5);
    for (int i = 0; i < 3; i++)
        free(lg[i]);
    model_free(&m);
}

/* What the views say it stores: f16 hot rows and the cold (and warm)
 * format, not the f32 of the header; a uniform layout names K and V. */
static void test_formats_described(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        { "mixed:hot=32,group=16,cold=q4_0", "K/V f16 hot, q4_0 cold" },
        { "mixed:hot=8,group=4,cold=q4_0,warm=q8_0,warm_rows=8", "K/V f16 hot, q8_0 warm, q4_0 cold" },
        { "contiguous+quant:k=q8_0,v=q4_0", "K/V q8_0/q4_0" },
        { "kivi:bits=2,group=8", "K u2 per channel, V q4_0; recent f16" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        KvCache *c = open_mixed(cases[i][0], 64);
        char buf[64];
        kv_formats(c, buf, sizeof buf);
        assert_string_equal(buf, cases[i][1]);
        kv_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aging_in_groups),
        cmocka_unit_test(test_gradual_aging),
        cmocka_unit_test(test_read_paths_agree),
        cmocka_unit_test(test_formats_described),
    };
    return cmocka_run_group_tests_name("mixed", tests, NULL, NULL);
}
