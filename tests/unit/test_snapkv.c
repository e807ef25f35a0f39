/* test_snapkv.c: SnapKV's prompt compression. After the prompt each layer
 * holds exactly the budget: the window, and the positions before it that
 * the window's queries weighed most (pooled over neighbours); decode never
 * evicts; with a budget at least the prompt it is exact. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/generate.h"

#define LOGIT_TOL 1e-5

/* Positions of (layer 0, seq 0) held, as a bit mask over the first 64. */
static uint64_t held_mask(const KvCache *c, size_t layer, size_t n)
{
    KvCell cells[64];
    kv_cells(c, layer, 0, cells, n);
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (cells[i].state == CELL_EXACT)
            m |= (uint64_t)1 << i;
        else if (cells[i].state != CELL_EVICTED)
            fail_msg("position %zu: state %d, neither held nor evicted", i, cells[i].state);
    return m;
}

static uint64_t bits(const int *pos, size_t n)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++)
        m |= (uint64_t)1 << pos[i];
    return m;
}

/* Hand the same weights of nq queries to both KV heads. */
static void vote(KvCache *c, const float *w, size_t nq, size_t n)
{
    for (size_t h = 0; h < c->geo.n_kv_heads; h++)
        c->ops->observe(c, 0, 0, h, w, 64, 0, 1, nq, n);
}

/* A window of 2 over a prompt of 10: its queries weigh 1, 3, 5 and 7 most
 * (and themselves, which does not count); 6 positions stay, in 4 blocks. */
static void test_window_votes(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 2, .head_dim = 4, .max_seq_len = 64 };
    Err e = { 0 };
    KvCache *c = kv_open("snapkv:budget=6,window=2,pool=1", &g, &e);
    assert_non_null(c);
    float rows[16 * 2 * 4] = { 0 };
    assert_int_equal(kv_append(c, 0, 0, 0, 10, rows, rows, NULL, &e), 0);
    assert_int_equal(c->ops->observe_queries(c, 10), 2);
    assert_int_equal(c->ops->observe_queries(c, 1), 0); /* decode asks for nothing */
    float w[2 * 64] = { 0 };                            /* query i at w[i * 64 + j] */
    float *q8 = w, *q9 = w + 64;
    q8[1] = 0.4f, q8[5] = 0.3f, q8[0] = 0.05f, q8[8] = 0.25f;
    q9[3] = 0.2f, q9[7] = 0.15f, q9[2] = 0.1f, q9[9] = 0.55f;
    vote(c, w, 2, 10);
    static const int want[] = { 1, 3, 5, 7, 8, 9 };
    assert_true(held_mask(c, 0, 10) == bits(want, 6));
    assert_int_equal(kv_n_blocks(c, 0, 0), 4);
    KvBlock b;
    kv_block(c, 0, 0, 1, 3, &b);
    assert_int_equal(b.pos, 7);
    assert_int_equal(b.n, 3);
    KvStats st = { 0 };
    kv_stats(c, &st);
    assert_int_equal(st.evictions, 4);
    /* decode: every token stays */
    for (size_t p = 10; p < 16; p++)
        assert_int_equal(kv_append(c, 0, 0, p, 1, rows, rows, NULL, &e), 0);
    kv_stats(c, &st);
    assert_int_equal(st.evictions, 4);
    assert_int_equal(kv_length(c, 0, 0), 16);
    assert_int_equal(kv_bytes_used(c), 12 * 2 * 2 * 4 * sizeof(float));
    kv_free(c);
}

/* per_head=1: each KV head keeps what its own queries weighed (head 0
 * looks at 1 and 2, head 1 at 5 and 6), as the paper chooses; the layer's
 * cells show every position some head holds, and each head's blocks are
 * its own rows, one a block. The default sums the heads' votes into one
 * choice for the layer. */
static void test_per_head_choices(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 2, .head_dim = 4, .max_seq_len = 64 };
    Err e = { 0 };
    float rows[10 * 2 * 4];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        rows[i] = (float)i; /* token t, head h, value d at (t * 2 + h) * 4 + d */
    float w0[64] = { 0 }, w1[64] = { 0 }; /* the last query's weights, head 0 and head 1 */
    w0[1] = 0.5f, w0[2] = 0.4f, w0[6] = 0.05f;
    w1[5] = 0.5f, w1[6] = 0.4f, w1[1] = 0.05f;
    KvCache *c = kv_open("snapkv:budget=3,window=1,pool=1,per_head=1", &g, &e);
    assert_non_null(c);
    assert_int_equal(kv_append(c, 0, 0, 0, 10, rows, rows, NULL, &e), 0);
    c->ops->observe(c, 0, 0, 0, w0, 64, 0, 1, 1, 10);
    c->ops->observe(c, 0, 0, 1, w1, 64, 0, 1, 1, 10);
    static const size_t want[2][3] = { { 1, 2, 9 }, { 5, 6, 9 } };
    assert_int_equal(kv_n_blocks(c, 0, 0), 3);
    for (size_t h = 0; h < 2; h++)
        for (size_t i = 0; i < 3; i++) {
            KvBlock b;
            kv_block(c, 0, 0, h, i, &b);
            assert_int_equal(b.pos, want[h][i]);
            assert_int_equal(b.n, 1);
            const float *k = b.k; /* the f32 row of that token and head */
            assert_true(k[0] == (float)((want[h][i] * 2 + h) * 4));
        }
    static const int either[] = { 1, 2, 5, 6, 9 };
    assert_true(held_mask(c, 0, 10) == bits(either, 5));
    kv_free(c);

    c = kv_open("snapkv:budget=3,window=1,pool=1", &g, &e); /* one choice: the summed votes */
    assert_non_null(c);
    assert_int_equal(kv_append(c, 0, 0, 0, 10, rows, rows, NULL, &e), 0);
    c->ops->observe(c, 0, 0, 0, w0, 64, 0, 1, 1, 10);
    c->ops->observe(c, 0, 0, 1, w1, 64, 0, 1, 1, 10);
    static const int summed[] = { 1, 5, 9 }; /* 0.55 (1) and 0.5 (5) lead 0.45 (6) and 0.4 (2) */
    assert_true(held_mask(c, 0, 10) == bits(summed, 3));
    kv_free(c);

    assert_null(kv_open("snapkv:per_head=2", &g, &e));
    assert_non_null(strstr(e.msg, "per_head=2"));
}

/* Pooling keeps a neighbourhood: one position weighed most pulls its
 * neighbours in ahead of two lone positions weighed less. */
static void test_pool_keeps_neighbours(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 2, .head_dim = 4, .max_seq_len = 64 };
    Err e = { 0 };
    float rows[12 * 2 * 4] = { 0 };
    float w[2 * 64] = { 0 };
    for (size_t i = 0; i < 2; i++)
        w[i * 64 + 4] = 0.5f, w[i * 64 + 9] = 0.3f, w[i * 64 + 0] = 0.2f;
    static const char *const specs[] = { "snapkv:budget=5,window=2,pool=1", "snapkv:budget=5,window=2,pool=3" };
    static const int alone[] = { 0, 4, 9, 10, 11 }, pooled[] = { 3, 4, 5, 10, 11 };
    for (size_t k = 0; k < 2; k++) {
        KvCache *c = kv_open(specs[k], &g, &e);
        assert_non_null(c);
        assert_int_equal(kv_append(c, 0, 0, 0, 12, rows, rows, NULL, &e), 0);
        vote(c, w, 2, 12);
        uint64_t got = held_mask(c, 0, 12), want = k ? bits(pooled, 5) : bits(alone, 5);
        if (got != want)
            fail_msg("%s: held mask %#llx, want %#llx", specs[k], (unsigned long long)got, (unsigned long long)want);
        kv_free(c);
    }
}

static void test_bad_specs(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = 64 };
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        { "snapkv:budget=8,window=16", "cache 'snapkv': window=16 must not exceed budget=8" },
        { "snapkv:pool=4", "cache 'snapkv': pool=4 must be odd (1 = no smoothing)" },
        { "snapkv:window=0", "window" },
        { "snapkv:recent=4", "has no option 'recent' (accepted: budget=ROWS, window=W, pool=K, per_head=0|1)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Err e = { 0 };
        assert_null(kv_open(bad[i].spec, &g, &e));
        assert_int_equal(e.kind, ERR_USAGE);
        if (!strstr(e.msg, bad[i].msg) || strchr(e.msg, '\n'))
            fail_msg("%s: '%s', want one line with '%s'", bad[i].spec, e.msg, bad[i].msg);
    }
}

/* ---- through the model ---- */

enum { PLEN = 40, N_GEN = 6, BUDGET = 16, WINDOW = 4, POOL = 3 };

typedef struct {
    const KvCache *cache;
    size_t n_layers, n_heads, group, max_seq_len;
    int keep_probs;
    uint64_t kept[4]; /* per layer, after the prompt */
    size_t evicted;   /* after the prompt */
    size_t checked;
} Watch;

/* The kept set the window's weights call for, recomputed from the
 * weights the forward recorded (ForwardState.probs), in the cache's order
 * of summation: KV head, window query, query head of its group. */
static uint64_t expected_kept(const Watch *w, const ForwardState *s, size_t layer)
{
    const size_t max_seq_len = w->max_seq_len;
    const size_t n = PLEN - WINDOW;
    double vote[PLEN] = { 0 };
    for (size_t kh = 0; kh < w->n_heads / w->group; kh++)
        for (size_t t = PLEN - WINDOW; t < PLEN; t++)
            for (size_t gi = 0; gi < w->group; gi++) {
                size_t h = kh * w->group + gi;
                const float *p = s->probs + ((layer * w->n_heads + h) * s->max_q + t) * max_seq_len;
                for (size_t j = 0; j <= t; j++)
                    vote[j] += p[j];
            }
    double pooled[PLEN];
    for (size_t j = 0; j < n; j++) {
        double sum = 0;
        for (size_t i = j >= POOL / 2 ? j - POOL / 2 : 0; i <= j + POOL / 2 && i < n; i++)
            sum += vote[i];
        pooled[j] = sum / POOL;
    }
    uint64_t m = 0;
    for (size_t r = 0; r < BUDGET - WINDOW; r++) { /* best first, the earlier on a tie */
        size_t best = SIZE_MAX;
        for (size_t j = 0; j < n; j++)
            if (!(m >> j & 1) && (best == SIZE_MAX || pooled[j] > pooled[best]))
                best = j;
        m |= (uint64_t)1 << best;
    }
    for (size_t j = n; j < PLEN; j++)
        m |= (uint64_t)1 << j;
    return m;
}

static int watch_step(void *user, const StepReport *r)
{
    Watch *w = user;
    const KvCache *c = w->cache;
    KvStats st = { 0 };
    kv_stats(c, &st);
    for (size_t l = 0; l < w->n_layers; l++) {
        size_t held = 0;
        for (size_t b = 0; b < kv_n_blocks(c, l, 0); b++) {
            KvBlock blk;
            kv_block(c, l, 0, 0, b, &blk);
            held += blk.n;
        }
        uint64_t mask = held_mask(c, l, kv_length(c, l, 0) < 64 ? kv_length(c, l, 0) : 64);
        if (r->phase == PHASE_PREFILL) {
            if (held != BUDGET)
                fail_msg("layer %zu holds %zu rows after the prompt, want the budget %d", l, held, BUDGET);
            for (size_t p = PLEN - WINDOW; p < PLEN; p++)
                if (!(mask >> p & 1))
                    fail_msg("layer %zu: window position %zu evicted", l, p);
            w->kept[l] = mask;
            if (w->keep_probs && mask != expected_kept(w, r->state, l))
                fail_msg("layer %zu kept %#llx, the window's weights call for %#llx", l, (unsigned long long)mask,
                         (unsigned long long)expected_kept(w, r->state, l));
        } else {
            size_t decoded = r->pos0 + 1 - PLEN;
            if (held != BUDGET + decoded)
                fail_msg("layer %zu holds %zu rows after %zu decode steps, want %zu", l, held, decoded,
                         (size_t)BUDGET + decoded);
            if ((mask & (((uint64_t)1 << PLEN) - 1)) != w->kept[l])
                fail_msg("layer %zu: the prompt's kept set changed during decode", l);
        }
    }
    if (r->phase == PHASE_PREFILL)
        w->evicted = st.evictions;
    else if (st.evictions != w->evicted)
        fail_msg("decode evicted: %zu evictions, %zu after the prompt", st.evictions, w->evicted);
    w->checked++;
    return 0;
}

/* Budget 16 of a prompt of 40: exactly the budget after the prompt, the
 * window kept, the set the window's weights call for (recorded weights and
 * the observe path agree), and decode only adds. */
static void test_prompt_then_decode(void **state)
{
    (void)state;
    Config cfg = test_config(3, 4, 2);
    Model m;
    test_model(&m, &cfg);
    int prompt[PLEN], out[N_GEN];
    test_tokens(prompt, PLEN, cfg.vocab, 5);
    KvGeometry geo = model_kv_geometry(&m, 1);
    uint64_t kept[2][4];
    for (int keep = 0; keep < 2; keep++) {
        for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
            if (keep && algo == ATTEND_FLASH)
                continue; /* flash records no weights */
            m.attend = (AttendAlgo)algo;
            Err e = { 0 };
            char spec[64];
            snprintf(spec, sizeof spec, "snapkv:budget=%d,window=%d,pool=%d", BUDGET, WINDOW, POOL);
            KvCache *c = kv_open(spec, &geo, &e);
            assert_non_null(c);
            Watch w = { .cache = c, .n_layers = cfg.n_layers, .n_heads = cfg.n_heads,
                        .group = cfg.n_heads / cfg.n_kv_heads, .max_seq_len = cfg.max_seq_len,
                        .keep_probs = keep };
            GenOptions go = { .n_generate = N_GEN, .keep_probs = keep };
            if (generate(&m, c, prompt, 1, PLEN, &go, out, watch_step, &w, &e) < 0)
                fail_msg("generate: %s", e.msg);
            assert_int_equal(w.checked, N_GEN);
            assert_int_equal(w.evicted, cfg.n_layers * (PLEN - BUDGET));
            if (algo == ATTEND_NAIVE)
                memcpy(kept[keep], w.kept, sizeof w.kept);
            else /* flash in decode, naive for the prompt's window: the same choice */
                assert_memory_equal(kept[0], w.kept, sizeof w.kept);
            kv_free(c);
        }
    }
    assert_memory_equal(kept[0], kept[1], sizeof kept[0]);
    printf("  layer 0 kept %#llx of a %d-token prompt\n", (unsigned long long)kept[0][0], PLEN);
    model_free(&m);
}

/* A budget of at least the prompt evicts nothing: the same tokens as the
 * uncached run and logits within LOGIT_TOL, one pass or in chunks, batch of
 * 2, every attention form. */
static void test_budget_above_prompt_is_exact(void **state)
{
    (void)state;
    Config cfg = test_config(2, 4, 2);
    Model m;
    test_model(&m, &cfg);
    enum { BATCH = 2 };
    int prompt[BATCH * PLEN], out_c[BATCH * N_GEN], out_u[BATCH * N_GEN];
    test_tokens(prompt, BATCH * PLEN, cfg.vocab, 9);
    const size_t per_step = BATCH * cfg.vocab;
    TestLog lu = { malloc(N_GEN * per_step * sizeof(float)), per_step, 0 };
    TestLog lc = { malloc(N_GEN * per_step * sizeof(float)), per_step, 0 };
    Err e = { 0 };
    GenOptions go = { .n_generate = N_GEN };
    assert_int_equal(generate(&m, NULL, prompt, BATCH, PLEN, &go, out_u, log_logits, &lu, &e), 0);
    static const char *const specs[] = { "snapkv:budget=40,window=8", "snapkv:budget=256,window=32,pool=5",
                                         "snapkv:budget=40,window=8,per_head=1" };
    static const size_t chunks[] = { 0, 16 };
    double worst = 0;
    for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++)
        for (size_t si = 0; si < 3; si++)
            for (size_t ci = 0; ci < 2; ci++) {
                m.attend = (AttendAlgo)algo;
                KvGeometry geo = model_kv_geometry(&m, BATCH);
                KvCache *c = kv_open(specs[si], &geo, &e);
                assert_non_null(c);
                go.chunk = chunks[ci];
                lc.n = 0;
                assert_int_equal(generate(&m, c, prompt, BATCH, PLEN, &go, out_c, log_logits, &lc, &e), 0);
                assert_memory_equal(out_c, out_u, sizeof out_c);
                double d = max_rel_diff(lc.logits, lu.logits, N_GEN * per_step, LOGIT_TOL, specs[si]);
                worst = fmax(worst, d);
                KvStats st = { 0 };
                kv_stats(c, &st);
                assert_int_equal(st.evictions, 0);
                kv_free(c);
            }
    printf("  budget >= prompt: same tokens, largest logit difference %.3g\n", worst);
    assert_true(worst <= LOGIT_TOL);
    free(lu.logits);
    free(lc.logits);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_votes),
        cmocka_unit_test(test_pool_keeps_neighbours),
        cmocka_unit_test(test_per_head_choices),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_prompt_then_decode),
        cmocka_unit_test(test_budget_above_prompt_is_exact),
    };
    return cmocka_run_group_tests_name("snapkv", tests, NULL, NULL);
}
