/* test_ring.c: the ring (sliding window + sinks) cache. Against a model
 * with the same sliding window it is exact; its memory is bounded; with
 * sinks it keeps the first positions; on a full-attention model it drops
 * what fell out of the window, and says so in its cells. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/generate.h"

#define RING_TOL 1e-5

static double run_pair(const Model *m, const char *spec, size_t plen, size_t n_gen, size_t chunk, int *same)
{
    int prompt[64], a[64], b[64];
    test_tokens(prompt, plen, m->cfg.vocab, 3);
    TestLog la = { malloc(n_gen * m->cfg.vocab * sizeof(float)), m->cfg.vocab, 0 };
    TestLog lb = { malloc(n_gen * m->cfg.vocab * sizeof(float)), m->cfg.vocab, 0 };
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *c = kv_open(spec, &geo, &e);
    if (!c)
        fail_msg("%s: %s", spec, e.msg);
    GenOptions go = { .n_generate = n_gen, .chunk = chunk };
    assert_int_equal(generate(m, c, prompt, 1, plen, &go, a, log_logits, &la, &e), 0);
    assert_int_equal(generate(m, NULL, prompt, 1, plen, &go, b, log_logits, &lb, &e), 0);
    *same = memcmp(a, b, n_gen * sizeof(int)) == 0;
    double d = max_rel_diff(la.logits, lb.logits, n_gen * m->cfg.vocab, RING_TOL, spec);
    kv_free(c);
    free(la.logits);
    free(lb.logits);
    return d;
}

static void test_exact_under_the_models_window(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.sliding_window = 6;
    Model m;
    test_model(&m, &c);
    static const char *specs[] = { "ring:window=6", "ring:window=6,pass=1", "ring:window=6,pass=4",
                                   "ring:window=6,pass=64" };
    static const size_t chunks[] = { 0, 3 };
    for (size_t i = 0; i < 4; i++)
        for (size_t k = 0; k < 2; k++)
            for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
                m.attend = (AttendAlgo)algo;
                int same;
                double d = run_pair(&m, specs[i], 20, 12, chunks[k], &same);
                if (!same || d > RING_TOL)
                    fail_msg("%s chunk %zu %s: tokens %s, logit diff %.3g", specs[i], chunks[k],
                             attend_algo_name(m.attend), same ? "same" : "differ", d);
            }
    model_free(&m);
}

static void test_bounded_memory_and_sinks(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = 1000 };
    Err e = { 0 };
    KvCache *c = kv_open("ring:window=5,sinks=2,pass=1", &g, &e);
    assert_non_null(c);
    size_t reserved = kv_bytes_reserved(c);
    assert_int_equal(reserved, (2 + 5) * 2 * 4 * sizeof(float)); /* sinks + window + pass - 1 slots */
    float row[4];
    for (size_t pos = 0; pos < 40; pos++) {
        for (size_t i = 0; i < 4; i++)
            row[i] = (float)pos;
        assert_int_equal(kv_append(c, 0, 0, pos, 1, row, row, NULL, &e), 0);
    }
    assert_int_equal(kv_bytes_reserved(c), reserved);
    assert_int_equal(kv_length(c, 0, 0), 7);
    /* blocks in position order: sinks 0,1 then the last five 35..39 (wrapped storage) */
    size_t nb = kv_n_blocks(c, 0, 0), seen = 0, expect[7] = { 0, 1, 35, 36, 37, 38, 39 };
    for (size_t b = 0; b < nb; b++) {
        KvBlock blk;
        kv_block(c, 0, 0, 0, b, &blk);
        for (size_t r = 0; r < blk.n; r++, seen++) {
            assert_int_equal(blk.pos + r, expect[seen]);
            const float *k = (const float *)((const char *)blk.k + r * blk.k_stride);
            assert_true(k[0] == (float)expect[seen]); /* the row stored for that position */
        }
    }
    assert_int_equal(seen, 7);
    KvCell cells[40];
    kv_cells(c, 0, 0, cells, 40);
    assert_int_equal(cells[1].state, CELL_EXACT);
    assert_int_equal(cells[2].state, CELL_EVICTED);
    assert_int_equal(cells[34].state, CELL_EVICTED);
    assert_int_equal(cells[35].state, CELL_EXACT);
    kv_free(c);

    assert_null(kv_open("ring", &g, &e));
    assert_non_null(strstr(e.msg, "needs window=W"));
    assert_null(kv_open("ring:window=4,size=2", &g, &e));
}

/* A ring larger than the machine is refused from its size, as a usage
 * error naming the most it could hold, with nothing allocated; the largest
 * pass parse_size accepts (SIZE_MAX / 4) would overflow a byte count. */
static void test_refused_beyond_memory(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 32, .n_seqs = 4, .n_kv_heads = 8, .head_dim = 128, .max_seq_len = SIZE_MAX / 8 };
    Err e = { 0 };
    assert_null(kv_open("ring:window=4,sinks=2,pass=3222222222222", &g, &e));
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "for 3222222222227 rows per layer, sequence and KV head"));
    assert_non_null(strstr(e.msg, "holds at most"));
    char spec[64];
    snprintf(spec, sizeof spec, "ring:window=4,pass=%zu", SIZE_MAX / 4);
    assert_null(kv_open(spec, &g, &e));
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "holds at most"));
    KvCache *c = kv_open("ring:window=4,sinks=2,pass=32", &g, &e);
    assert_non_null(c);
    kv_free(c);

    /* a sequence never reaches past max_seq_len, so neither does the ring:
     * the same huge pass on a model of 1000 positions reserves 1000 rows */
    g.max_seq_len = 1000;
    assert_non_null(c = kv_open("ring:window=4,sinks=2,pass=3222222222222", &g, &e));
    assert_int_equal(kv_bytes_reserved(c), 32 * 4 * 8 * (size_t)1000 * 2 * 128 * sizeof(float));
    kv_free(c);
    assert_non_null(c = kv_open("ring:window=4,sinks=3000", &g, &e));
    assert_int_equal(kv_bytes_reserved(c), 32 * 4 * 8 * (size_t)1001 * 2 * 128 * sizeof(float));
    kv_free(c);

    /* a stated limit: 1 MiB holds 1 MiB / (32 * 4 * 8 * 2 * 512 bytes) = 1 row per head */
    g.mem_limit = (size_t)1 << 20;
    assert_null(kv_open("ring:window=2,pass=1", &g, &e));
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "for 2 rows per layer, sequence and KV head; its limit of 1.00 MiB holds at most 1"));
    assert_non_null(c = kv_open("ring:window=1,pass=1", &g, &e));
    kv_free(c);
}

/* On a full-attention model a ring evicts: the output moves away from the
 * uncached reference once the sequence outgrows the window. */
static void test_lossy_on_full_attention(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    int same;
    double short_d = run_pair(&m, "ring:window=32,pass=8", 10, 4, 0, &same);
    assert_true(same && short_d <= RING_TOL); /* shorter than the window: nothing dropped */
    double long_d = run_pair(&m, "ring:window=4,sinks=2,pass=8", 30, 4, 0, &same);
    printf("  window 4 + 2 sinks over 33 positions: max rel logit difference %.3g\n", long_d);
    assert_true(long_d > 1e-3);
    model_free(&m);
}

/* Positions older than the window are never read: their rows were
 * poisoned with NaN when appended, and attention over the ring afterwards is
 * finite and equals attention over exactly the sinks and the last W rows,
 * every form and ISA. The sinks are attended: they carry weight. */
static void test_poisoned_old_rows_never_read(void **state)
{
    (void)state;
    enum { HD = 16, W = 6, S = 2, N = 40 };
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = HD, .max_seq_len = 64 };
    Err e = { 0 };
    KvCache *c = kv_open("ring:window=6,sinks=2,pass=1", &g, &e);
    assert_non_null(c);
    float keys[N][HD], vals[N][HD];
    for (size_t pos = 0; pos < N; pos++) {
        const int evicted = pos >= S && pos + W < N;
        for (size_t i = 0; i < HD; i++) {
            keys[pos][i] = evicted ? NAN : 0.05f * (float)((pos * 7 + i * 3) % 11) - 0.2f;
            vals[pos][i] = evicted ? NAN : (float)pos + 0.01f * (float)i;
        }
        assert_int_equal(kv_append(c, 0, 0, pos, 1, keys[pos], vals[pos], NULL, &e), 0);
    }
    /* the reference: the kept rows only, as two plain blocks */
    KvBlock want_blocks[2] = {
        { .pos = 0, .n = S, .k = keys[0], .v = vals[0], .k_stride = sizeof keys[0], .v_stride = sizeof vals[0] },
        { .pos = N - W, .n = W, .k = keys[N - W], .v = vals[N - W], .k_stride = sizeof keys[0],
          .v_stride = sizeof vals[0] },
    };
    KvBlock got_blocks[8], view_blocks[8];
    size_t nb = kv_n_blocks(c, 0, 0);
    assert_true(nb <= 8);
    for (size_t b = 0; b < nb; b++)
        kv_block(c, 0, 0, 0, b, &got_blocks[b]);
    float q[HD], want[HD], got[HD], scores[N + ATTEND_TILE], view[2 * N * HD], probs[N];
    for (size_t i = 0; i < HD; i++)
        q[i] = 0.3f - 0.04f * (float)i;
    AttnArgs a = { .q = q, .out = want, .n_q = 1, .group = 1, .head_dim = HD, .pos0 = N - 1,
                   .blocks = want_blocks, .n_blocks = 2, .scores = scores, .view = view,
                   .view_blocks = view_blocks, .probs = probs };
    attend(kernels_select("ref", NULL), ATTEND_NAIVE, &a, NULL);
    assert_true(probs[0] > 0 && probs[1] > 0); /* the sinks carry weight */
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    a.blocks = got_blocks, a.n_blocks = nb, a.out = got, a.probs = NULL;
    for (size_t k = 0; k < n_isa; k++)
        for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
            attend(isa[k], (AttendAlgo)algo, &a, NULL);
            for (size_t i = 0; i < HD; i++)
                if (!isfinite(got[i]))
                    fail_msg("%s %s read a poisoned row", isa[k]->isa, attend_algo_name((AttendAlgo)algo));
            if (max_rel_diff(got, want, HD, 1e-5, "ring") > 1e-5)
                fail_msg("%s %s: not the sinks plus the window", isa[k]->isa, attend_algo_name((AttendAlgo)algo));
        }
    assert_int_equal(kv_bytes_used(c), (S + W) * 2 * HD * sizeof(float)); /* W rows plus the sinks */
    kv_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_under_the_models_window),
        cmocka_unit_test(test_bounded_memory_and_sinks),
        cmocka_unit_test(test_refused_beyond_memory),
        cmocka_unit_test(test_lossy_on_full_attention),
        cmocka_unit_test(test_poisoned_old_rows_never_read),
    };
    return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
