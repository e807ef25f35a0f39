/* test_paged.c: the paged cache: attention over pages equals the contiguous
 * cache bit for bit; full pages of a common prefix are shared, shorter
 * prefixes are not; fork shares and the first write copies; an exhausted
 * pool is a clear error; reset gives every page back. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/generate.h"

/* Generate with `spec`; returns the logits of every chosen token. */
static float *run(const Model *m, const char *spec, const int *prompt, size_t batch, size_t plen, size_t n_gen,
                  int *out, KvStats *stats)
{
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, batch);
    KvCache *c = spec ? kv_open(spec, &geo, &e) : NULL;
    if (spec && !c)
        fail_msg("kv_open %s: %s", spec, e.msg);
    TestLog log = { malloc(n_gen * batch * m->cfg.vocab * sizeof(float)), batch * m->cfg.vocab, 0 };
    GenOptions go = { .n_generate = n_gen };
    if (generate(m, c, prompt, batch, plen, &go, out, log_logits, &log, &e) < 0)
        fail_msg("generate %s: %s", spec ? spec : "uncached", e.msg);
    if (stats && c)
        kv_stats(c, stats);
    kv_free(c);
    return log.logits;
}

static void test_paged_equals_contiguous(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    static const size_t pages[] = { 1, 3, 16, 128 };
    static const size_t plens[] = { 1, 5, 40 };
    const Kernels *best = kernels_select(NULL, NULL);
    for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo += ATTEND_FLASH - ATTEND_NAIVE) {
        m.kern = best;
        m.attend = (AttendAlgo)algo;
        for (size_t pi = 0; pi < 3; pi++) {
            size_t plen = plens[pi], n_gen = 20, batch = 2;
            int prompt[80], want[40], got[40], plain[40];
            test_tokens(prompt, batch * plen, c.vocab, (unsigned)plen);
            float *ref = run(&m, "contiguous", prompt, batch, plen, n_gen, want, NULL);
            free(run(&m, NULL, prompt, batch, plen, n_gen, plain, NULL));
            assert_memory_equal(want, plain, batch * n_gen * sizeof(int)); /* greedy = uncached */
            for (size_t k = 0; k < 4; k++) {
                char spec[32];
                snprintf(spec, sizeof spec, "paged:page=%zu", pages[k]);
                float *lg = run(&m, spec, prompt, batch, plen, n_gen, got, NULL);
                assert_memory_equal(got, want, batch * n_gen * sizeof(int));
                if (memcmp(lg, ref, n_gen * batch * c.vocab * sizeof(float)) != 0)
                    fail_msg("%s %s prompt %zu: logits differ from contiguous", spec,
                             attend_algo_name(m.attend), plen);
                free(lg);
            }
            free(ref);
        }
    }
    model_free(&m);
}

/* Two prompts sharing 2 full pages (and a bit) of prefix: those 2 pages are
 * mapped once; the partial third page is not shared. */
static void test_prefix_sharing(void **state)
{
    (void)state;
    Config c = test_config(1, 4, 2);
    Model m;
    test_model(&m, &c);
    const size_t page = 8, plen = 21; /* 2 full pages + 5 rows, then the prompts differ */
    int prompt[2 * 21], out[2 * 2];
    test_tokens(prompt, plen, c.vocab, 1);
    memcpy(prompt + plen, prompt, plen * sizeof(int));
    prompt[plen + 20] = (prompt[20] + 1) % (int)c.vocab; /* last token differs */
    KvStats st;
    float *lg = run(&m, "paged:page=8", prompt, 2, plen, 2, out, &st);
    free(lg);
    /* each sequence holds 22 positions = 3 pages; 2 of sequence 1's are sequence 0's */
    assert_int_equal(st.prefix_hits, 2);
    assert_int_equal(st.pages_shared, 2);
    assert_int_equal(st.pages_used, 3 + 3 - 2);
    assert_int_equal(st.waste_rows, 2 * (3 * page - 22));

    /* a common prefix shorter than one page shares nothing */
    int short_prompt[2 * 6];
    test_tokens(short_prompt, 6, c.vocab, 2);
    memcpy(short_prompt + 6, short_prompt, 6 * sizeof(int));
    short_prompt[11] = (short_prompt[11] + 1) % (int)c.vocab;
    lg = run(&m, "paged:page=8", short_prompt, 2, 6, 2, out, &st);
    free(lg);
    assert_int_equal(st.prefix_hits, 0);
    assert_int_equal(st.pages_shared, 0);
    model_free(&m);
}

/* Fork shares every page; the first append into the shared tail copies it
 * once; the two sequences then differ only where they were written. */
static void test_fork_copy_on_write(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 2, .n_seqs = 2, .n_kv_heads = 2, .head_dim = 4, .max_seq_len = 32 };
    Err e = { 0 };
    KvCache *c = kv_open("paged:page=4", &g, &e);
    assert_non_null(c);
    float k[6 * 2 * 4], v[6 * 2 * 4];
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        k[i] = (float)i, v[i] = -(float)i;
    int toks[6] = { 1, 2, 3, 4, 5, 6 };
    Counters ctr = { 0 };
    assert_int_equal(kv_reserve(c, 0, 0, toks, 6, &ctr, &e), 0);
    for (size_t l = 0; l < 2; l++)
        assert_int_equal(kv_append(c, l, 0, 0, 6, k, v, &ctr, &e), 0);
    assert_int_equal(kv_fork(c, 0, 1, &ctr, &e), 0);
    KvStats st;
    kv_stats(c, &st);
    assert_int_equal(st.pages_used, 2);
    assert_int_equal(st.pages_shared, 2);
    assert_int_equal(ctr.bytes_copied, 0);

    int t7 = 7;
    assert_int_equal(kv_reserve(c, 1, 6, &t7, 1, &ctr, &e), 0); /* into the shared tail page */
    for (size_t l = 0; l < 2; l++)
        assert_int_equal(kv_append(c, l, 1, 6, 1, k, v, &ctr, &e), 0);
    kv_stats(c, &st);
    assert_int_equal(st.cow_copies, 1);
    assert_int_equal(st.pages_used, 3);
    assert_int_equal(st.pages_shared, 1); /* the full first page stays shared */
    assert_int_equal(ctr.bytes_copied, 2 * 2 * 2 * (16 + 16)); /* the 2 rows held, not the whole page */
    /* sequence 0's tail is untouched; sequence 1 sees its parent's rows then its own */
    KvBlock a, b;
    kv_block(c, 0, 0, 1, 1, &a);
    kv_block(c, 0, 1, 1, 1, &b);
    assert_int_equal(a.n, 2);
    assert_int_equal(b.n, 3);
    assert_memory_equal(a.k, b.k, 2 * a.k_stride);
    assert_true(((const float *)b.k)[2 * 4] == k[1 * 4]); /* row 6 of seq 1 = token 0's head-1 row */

    kv_drop(c, 1);
    kv_drop(c, 0);
    kv_stats(c, &st);
    assert_int_equal(st.pages_used, 0);
    assert_int_equal(st.pages_cached, 1); /* the one full page keeps its hash */
    kv_free(c);
}

static void test_pool_exhaustion_and_reset(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = 64 };
    Err e = { 0 };
    KvCache *c = kv_open("paged:page=4,pages=2", &g, &e);
    int toks[12] = { 0 };
    assert_int_equal(kv_reserve(c, 0, 0, toks, 8, NULL, &e), 0);
    assert_int_equal(kv_reserve(c, 0, 8, toks, 1, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "page pool exhausted: all 2 pages"));
    kv_reset(c);
    KvStats st;
    kv_stats(c, &st);
    assert_int_equal(st.pages_free, 2);
    assert_int_equal(st.pages_used, 0);
    assert_int_equal(kv_reserve(c, 0, 0, toks, 8, NULL, &e), 0);
    kv_free(c);

    const char *bad[] = { "paged:page=0", "paged:page=x", "paged:size=4" };
    for (size_t i = 0; i < 3; i++) {
        assert_null(kv_open(bad[i], &g, &e));
        assert_int_equal(e.kind, ERR_USAGE);
    }
}

/* A page given back with its hash is found again by the same prefix. */
static void test_cached_pages_are_reused(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = 64 };
    Err e = { 0 };
    KvCache *c = kv_open("paged:page=4,pages=3", &g, &e);
    int a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8] = { 9, 9, 9, 9, 9, 9, 9, 9 };
    float rows[8 * 4] = { 0 };
    KvStats st;
    assert_int_equal(kv_reserve(c, 0, 0, a, 8, NULL, &e), 0);
    assert_int_equal(kv_append(c, 0, 0, 0, 8, rows, rows, NULL, &e), 0);
    kv_drop(c, 0);
    assert_int_equal(kv_reserve(c, 0, 0, a, 8, NULL, &e), 0); /* same prefix: both pages found */
    kv_stats(c, &st);
    assert_int_equal(st.prefix_hits, 2);
    kv_drop(c, 0);
    assert_int_equal(kv_reserve(c, 0, 0, b, 8, NULL, &e), 0); /* 1 clean page + 1 evicted */
    kv_stats(c, &st);
    assert_int_equal(st.evictions, 1);
    kv_free(c);
}

/* A full page is shared only when its whole prefix is named too: with a
 * chunk that splits pages, sequence 0's third page (positions 8..11) is not
 * findable by a sequence whose first page holds the same tokens at 0..3. */
static void test_prefix_hash_needs_the_whole_prefix(void **state)
{
    (void)state;
    Config c = test_config(1, 4, 2);
    Model m;
    test_model(&m, &c);
    int a[14], b[14], want[3], got[3];
    test_tokens(a, 14, c.vocab, 11);
    test_tokens(b, 14, c.vocab, 12);
    memcpy(b, a + 8, 4 * sizeof(int)); /* B's page 0 holds A's page 2 tokens */
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(&m, 1);
    KvCache *kc = kv_open("paged:page=4", &geo, &e);
    GenOptions go = { .n_generate = 3, .chunk = 6 };
    assert_int_equal(generate(&m, kc, a, 1, 14, &go, got, NULL, NULL, &e), 0);
    kv_drop(kc, 0); /* A's named pages stay cached in the pool */
    assert_int_equal(generate(&m, kc, b, 1, 14, &go, got, NULL, NULL, &e), 0);
    KvStats st;
    kv_stats(kc, &st);
    assert_int_equal(st.prefix_hits, 0);
    kv_free(kc);
    assert_int_equal(generate(&m, NULL, b, 1, 14, &go, want, NULL, NULL, &e), 0);
    assert_memory_equal(got, want, sizeof got);
    model_free(&m);
}

/* Block-sparse: past the threshold only the most recent half of the pages
 * stay; the rest are given back and attention no longer sees them. */
static void test_block_sparse(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = 128 };
    Err e = { 0 };
    KvCache *c = kv_open("paged:page=4+sparse:threshold=16,keep=0.5", &g, &e);
    assert_non_null(c);
    assert_true(c->lossy);
    float rows[4] = { 0 };
    int tok = 1;
    KvStats st;
    for (size_t pos = 0; pos < 40; pos++) {
        assert_int_equal(kv_reserve(c, 0, pos, &tok, 1, NULL, &e), 0);
        assert_int_equal(kv_append(c, 0, 0, pos, 1, rows, rows, NULL, &e), 0);
        kv_stats(c, &st);
        if (pos < 17)
            assert_int_equal(st.pages_dropped, 0);
    }
    kv_stats(c, &st);
    /* the last check ran before position 39 was reserved: 39 positions = 10 pages, 5 kept */
    assert_true(st.sparse_on);
    assert_int_equal(st.pages_active, 5);
    assert_int_equal(st.pages_dropped, 5);
    assert_int_equal(st.pages_used, 5);
    assert_int_equal(st.bytes_saved, 5 * 4 * 2 * 4 * sizeof(float));
    assert_int_equal(kv_n_blocks(c, 0, 0), 5);
    KvBlock b;
    kv_block(c, 0, 0, 0, 0, &b);
    assert_int_equal(b.pos, 20); /* the oldest page still attended */
    KvCell cells[40];
    kv_cells(c, 0, 0, cells, 40);
    assert_int_equal(cells[19].state, CELL_EVICTED);
    assert_int_equal(cells[20].state, CELL_EXACT);

    /* memory dropped by the keep ratio: 10 logical pages, half of them held */
    assert_int_equal(kv_bytes_used(c), (size_t)(0.5 * 10) * 4 * 2 * 4 * sizeof(float));
    kv_free(c);

    /* through a model: below the threshold the sparse cache is the exact one, bit for bit */
    Config cfg = test_config(2, 4, 2);
    Model m;
    test_model(&m, &cfg);
    int prompt[20], want[12], got[12];
    test_tokens(prompt, 20, cfg.vocab, 5);
    float *ref = run(&m, "contiguous", prompt, 1, 20, 12, want, NULL);
    KvStats below;
    float *lg = run(&m, "paged:page=4+sparse:threshold=40,keep=0.5", prompt, 1, 20, 12, got, &below);
    assert_false(below.sparse_on);
    assert_memory_equal(got, want, sizeof got);
    assert_memory_equal(lg, ref, 12 * cfg.vocab * sizeof(float));
    free(lg);
    free(ref);
    model_free(&m);

    assert_null(kv_open("contiguous+sparse:threshold=4", &g, &e));
    assert_non_null(strstr(e.msg, "takes no modifier '+sparse'"));
    assert_null(kv_open("paged+sparse:keep=2", &g, &e));
    assert_non_null(strstr(e.msg, "outside [0, 1]"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paged_equals_contiguous),
        cmocka_unit_test(test_prefix_sharing),
        cmocka_unit_test(test_fork_copy_on_write),
        cmocka_unit_test(test_pool_exhaustion_and_reset),
        cmocka_unit_test(test_cached_pages_are_reused),
        cmocka_unit_test(test_block_sparse),
        cmocka_unit_test(test_prefix_hash_needs_the_whole_prefix),
    };
    return cmocka_run_group_tests_name("paged", tests, NULL, NULL);
}
