/* test_speculate.c: greedy speculative decoding gives the target's own
 * tokens, for every draft length K = 1 .. 8 and every cache kind that rolls
 * back (kjv-tiny drafting for kjv-small, on Bible text); the caches that
 * cannot roll back say why; a paged cache rolls back into a shared page and
 * the other sequence keeps its rows. */
#include "testutil.h"

#include "sim/setup.h"
#include "sim/speculate.h"

#define N_GEN 40

typedef struct {
    Model target, draft;
    int *prompt;
    size_t plen;
} Fixture;

static int setup(void **state)
{
    use_repo_data();
    Fixture *f = calloc(1, sizeof *f);
    Err e = { 0 };
    ModelOpts t = { .model = "kjv-small" }, d = { .model = "kjv-tiny" };
    PromptOpts po = { .text = "And God said, Let there be light: and there was light. And God saw the light,",
                      .batch = 1 };
    size_t batch = 1;
    if (setup_load_model(&t, 0, &f->target, &e) < 0 || setup_load_model(&d, 0, &f->draft, &e) < 0 ||
        setup_make_prompt(&po, &f->target.cfg, &f->prompt, &batch, &f->plen, &e) < 0) {
        printf("  setup: %s\n", e.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    Fixture *f = *state;
    model_free(&f->target);
    model_free(&f->draft);
    free(f->prompt);
    free(f);
    return 0;
}

static KvCache *open_cache(const Model *m, const char *spec)
{
    Err e = { 0 };
    KvGeometry g = model_kv_geometry(m, 1);
    KvCache *c = kv_open(spec, &g, &e);
    if (!c)
        fail_msg("kv_open %s: %s", spec, e.msg);
    return c;
}

/* The target alone, greedy, with a cache of spec. */
static void target_alone(const Fixture *f, const char *spec, int *out)
{
    Err e = { 0 };
    KvCache *c = open_cache(&f->target, spec);
    GenOptions o = { .n_generate = N_GEN };
    if (generate(&f->target, c, f->prompt, 1, f->plen, &o, out, NULL, NULL, &e) < 0)
        fail_msg("generate %s: %s", spec, e.msg);
    kv_free(c);
}

static void test_greedy_identity(void **state)
{
    Fixture *f = *state;
    static const char *const specs[] = { "contiguous", "dynamic", "paged:page=4", "paged:page=16",
                                         "contiguous+quant:k=q8_0,v=q4_0", "paged:page=8+quant:k=q4_0,v=q4_0" };
    size_t accepted = 0, drafted = 0;
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        int want[N_GEN], got[N_GEN];
        target_alone(f, specs[s], want);
        for (size_t k = 1; k <= 8; k++) {
            Err e = { 0 };
            KvCache *tc = open_cache(&f->target, specs[s]), *dc = open_cache(&f->draft, specs[s]);
            SpecStats st;
            memset(got, -1, sizeof got);
            if (speculate_greedy(&f->target, tc, &f->draft, dc, f->prompt, f->plen, N_GEN, k, got, &st, &e) < 0)
                fail_msg("%s K=%zu: %s", specs[s], k, e.msg);
            for (size_t i = 0; i < N_GEN; i++)
                if (got[i] != want[i])
                    fail_msg("%s K=%zu: token %zu is %d, the target alone chose %d", specs[s], k, i, got[i],
                             want[i]);
            assert_int_equal(st.generated, N_GEN);
            /* each cache holds exactly the committed tokens' rows: all but the last generated */
            for (size_t l = 0; l < f->target.cfg.n_layers; l++)
                assert_int_equal(kv_length(tc, l, 0), f->plen + N_GEN - 1);
            assert_true(kv_length(dc, 0, 0) <= f->plen + N_GEN - 1);
            /* every verification pass commits j + 1 tokens */
            assert_int_equal(st.generated - 1, st.accepted + (st.target_passes - 1));
            assert_int_equal(st.target_rolled, st.drafted - st.accepted);
            accepted += st.accepted, drafted += st.drafted;
            kv_free(tc);
            kv_free(dc);
        }
    }
    assert_true(accepted > 0 && accepted < drafted); /* the draft is right sometimes, not always */
    printf("  6 caches x K = 1..8: the target's %d tokens every time (%zu of %zu proposals kept)\n", N_GEN, accepted,
           drafted);
}

static void test_refusals(void **state)
{
    Fixture *f = *state;
    static const char *const specs[] = { "ring:window=32", "shift:ctx=64,keep=4", "h2o:budget=32,recent=8",
                                         "snapkv:budget=32,window=8", "mixed", "kivi", "paged:page=16+sparse:threshold=64,keep=0.5" };
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        Err e = { 0 };
        KvCache *tc = open_cache(&f->target, "contiguous"), *dc = open_cache(&f->draft, specs[s]);
        int out[4];
        SpecStats st;
        assert_int_equal(speculate_greedy(&f->target, tc, &f->draft, dc, f->prompt, f->plen, 4, 2, out, &st, &e), -1);
        assert_int_equal(e.kind, ERR_USAGE);
        if (!strstr(e.msg, "cannot roll back"))
            fail_msg("%s: '%s'", specs[s], e.msg);
        kv_free(tc);
        kv_free(dc);
    }
}

/* Paged: sequence 1, forked from 0, rolls back into their shared last page:
 * the page stays shared until 1 writes, then 1 gets a copy, and 0's rows are
 * as they were. */
static void test_paged_shared_page(void **state)
{
    (void)state;
    Err e = { 0 };
    KvGeometry g = { .n_layers = 1, .n_seqs = 2, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = 32 };
    KvCache *c = kv_open("paged:page=4", &g, &e);
    assert_non_null(c);
    float k[10 * 4], v[10 * 4];
    int toks[10];
    for (size_t i = 0; i < 40; i++)
        k[i] = (float)i, v[i] = -(float)i;
    for (int i = 0; i < 10; i++)
        toks[i] = i;
    assert_int_equal(kv_reserve(c, 0, 0, toks, 10, NULL, &e), 0);
    assert_int_equal(kv_append(c, 0, 0, 0, 10, k, v, NULL, &e), 0);
    assert_int_equal(kv_fork(c, 0, 1, NULL, &e), 0);
    KvStats s;
    kv_stats(c, &s);
    assert_int_equal(s.pages_shared, 3);
    assert_int_equal(kv_truncate(c, 1, 6, NULL, &e), 0); /* into page 1 (rows 4..7) */
    kv_stats(c, &s);
    assert_int_equal(s.pages_shared, 2); /* pages 0 and 1 still shared; page 2 is 0's alone */
    assert_int_equal(kv_length(c, 0, 1), 6);
    float k2[4] = { 100, 101, 102, 103 }, v2[4] = { 7, 7, 7, 7 };
    int t2 = 99;
    assert_int_equal(kv_reserve(c, 1, 6, &t2, 1, NULL, &e), 0);
    assert_int_equal(kv_append(c, 0, 1, 6, 1, k2, v2, NULL, &e), 0);
    kv_stats(c, &s);
    assert_int_equal(s.pages_shared, 1); /* 1 wrote into page 1: a copy */
    assert_int_equal(s.cow_copies, 1);
    KvBlock b;
    kv_block(c, 0, 0, 0, 1, &b); /* sequence 0's page 1: row 2 is position 6, untouched */
    assert_true(((const float *)b.k)[2 * 4] == 24.0f);
    kv_block(c, 0, 1, 0, 1, &b);
    assert_true(((const float *)b.k)[2 * 4] == 100.0f);
    assert_int_equal(b.n, 3);
    kv_free(c);
}

/* The same with pages shared by a prefix hit (the pool knew the tokens):
 * their rows were never written by sequence 1, and after the roll back its
 * next row must be. */
static void test_paged_prefix_page(void **state)
{
    (void)state;
    Err e = { 0 };
    KvGeometry g = { .n_layers = 1, .n_seqs = 2, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = 32 };
    KvCache *c = kv_open("paged:page=4", &g, &e);
    assert_non_null(c);
    float k[10 * 4], v[10 * 4];
    int toks[10];
    for (size_t i = 0; i < 40; i++)
        k[i] = (float)i, v[i] = -(float)i;
    for (int i = 0; i < 10; i++)
        toks[i] = i;
    for (size_t seq = 0; seq < 2; seq++) {
        assert_int_equal(kv_reserve(c, seq, 0, toks, 10, NULL, &e), 0);
        assert_int_equal(kv_append(c, 0, seq, 0, 10, k, v, NULL, &e), 0);
    }
    KvStats s;
    kv_stats(c, &s);
    assert_int_equal(s.prefix_hits, 2); /* pages 0 and 1 */
    assert_int_equal(kv_truncate(c, 1, 6, NULL, &e), 0);
    float k2[4] = { 200, 201, 202, 203 }, v2[4] = { 7, 7, 7, 7 };
    int t2 = 99;
    assert_int_equal(kv_reserve(c, 1, 6, &t2, 1, NULL, &e), 0);
    assert_int_equal(kv_append(c, 0, 1, 6, 1, k2, v2, NULL, &e), 0);
    KvBlock b;
    kv_block(c, 0, 1, 0, 1, &b);
    assert_true(((const float *)b.k)[2 * 4] == 200.0f); /* written, not taken for the pool's (200: unlike what an earlier test left in freed memory) */
    kv_block(c, 0, 0, 0, 1, &b);
    assert_true(((const float *)b.k)[2 * 4] == 24.0f);
    kv_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_identity),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_paged_shared_page),
        cmocka_unit_test(test_paged_prefix_page),
    };
    return cmocka_run_group_tests_name("speculate", tests, setup, teardown);
}
