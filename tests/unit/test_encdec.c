/* test_encdec.c: the encoder-decoder of the encoder-decoder notes and beam search.
 *
 * Beam search with a cache (contiguous, dynamic, paged) chooses the same
 * beams, with the same scores, as beam search that recomputes everything;
 * the cross cache is computed once, shared, never copied, its bytes the same
 * whatever the width; forks copy rows (contiguous) or share pages (paged,
 * copies on first write only) and every page comes back; width 1 is plain
 * greedy decoding; the memory figures are the encoder-decoder notes' closed form. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/beam.h"
#include "model/encdec.h"
#include "model/forward.h"

/* Scores of the cached and uncached searches agree to float rounding. */
#define SCORE_TOL 1e-5

/* A small encoder-decoder: GQA (4 heads, 2 KV heads), source 9, target 12. */
static Config encdec_config(uint64_t seed, int eos)
{
    Config c = test_config(2, 4, 2);
    snprintf(c.name, sizeof c.name, "test-encdec");
    c.architecture = ARCH_ENCDEC;
    c.encoder_layers = 2;
    c.src_len = 9;
    c.max_seq_len = 12;
    c.bos_token = 1;
    c.eos_token = eos;
    c.seed = seed;
    Err e = { 0 };
    if (config_validate(&c, &e) < 0)
        fail_msg("config: %s", e.msg);
    return c;
}

typedef struct {
    size_t page_bytes;  /* paged: bytes of one page; 0 otherwise */
    size_t row_bytes;   /* one position of one sequence, every layer and KV head (K and V) */
    int contiguous;     /* forks copy rows */
    int cached;         /* a self cache (and the shared cross cache) is in use */
    size_t cow, forks;  /* summed over steps */
    int failed;
} StepCheck;

/* Every step: a contiguous fork copies exactly the rows it forks; a paged
 * step copies exactly the rows held in its copy-on-write pages, forks nothing. */
static int check_step(void *user, const BeamStep *st)
{
    StepCheck *k = user;
    /* a copy on write copies the rows the shared tail page holds before this step: pos mod page */
    size_t page_rows = k->page_bytes ? k->page_bytes / k->row_bytes : 0;
    uint64_t want = k->page_bytes ? st->cow_copies * (st->pos % page_rows) * k->row_bytes
                                  : k->contiguous ? st->forks * (st->pos + 1) * k->row_bytes : st->ctr.bytes_copied;
    if (st->ctr.bytes_copied != want) {
        printf("  step %zu: %llu bytes copied, want %llu (forks %zu, cow %zu)\n", st->step,
               (unsigned long long)st->ctr.bytes_copied, (unsigned long long)want, st->forks, st->cow_copies);
        k->failed = 1;
    }
    if (k->cached && st->cross_refs != (st->n_next ? st->n_next : st->n_beams)) {
        printf("  step %zu: %zu cross references for %zu beams\n", st->step, st->cross_refs, st->n_next);
        k->failed = 1;
    }
    k->cow += st->cow_copies;
    k->forks += st->forks;
    return 0;
}

static void search(const Model *m, const int *src, const char *spec, size_t W, BeamResult *out, StepCheck *chk)
{
    Err e = { 0 };
    KvCache *c = NULL;
    StepCheck unused = { 0 };
    if (!chk)
        chk = &unused;
    if (spec) {
        KvGeometry geo = encdec_self_geometry(m, W);
        c = kv_open(spec, &geo, &e);
        if (!c)
            fail_msg("kv_open %s: %s", spec, e.msg);
        KvStats st;
        kv_stats(c, &st);
        chk->row_bytes = m->cfg.n_layers * kv_row_pair_bytes(&geo, FMT_F32, FMT_F32); /* all KV heads */
        chk->page_bytes = st.page_rows * chk->row_bytes;
        chk->contiguous = strcmp(c->ops->name, "contiguous") == 0;
        chk->cached = 1;
    }
    BeamOptions o = { .width = W, .max_len = m->cfg.max_seq_len, .alpha = 1.0 };
    if (beam_search(m, src, c, &o, out, check_step, chk, &e) < 0)
        fail_msg("beam_search %s W=%zu: %s", spec ? spec : "uncached", W, e.msg);
    if (chk->failed)
        fail_msg("%s W=%zu: copies or references miscounted", spec ? spec : "uncached", W);
    if (c) {
        KvStats st;
        kv_stats(c, &st);
        assert_int_equal(st.pages_used, 0); /* every page back: no leak */
        assert_int_equal(st.pages_free + st.pages_cached, st.pages_total);
        assert_int_equal(kv_bytes_used(c), 0);
        kv_free(c);
    }
}

/* Same hypotheses (tokens, ends) and scores within SCORE_TOL. */
static void assert_same_beams(const BeamResult *a, const BeamResult *b, const char *what)
{
    if (a->n != b->n)
        fail_msg("%s: %zu vs %zu hypotheses", what, a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const Hypothesis *x = &a->hyps[i], *y = &b->hyps[i];
        if (x->len != y->len || x->finished != y->finished ||
            memcmp(x->tokens, y->tokens, x->len * sizeof(int)) != 0)
            fail_msg("%s: hypothesis %zu differs (len %zu vs %zu)", what, i, x->len, y->len);
        if (fabs(x->score - y->score) > SCORE_TOL || fabs(x->logp - y->logp) > SCORE_TOL)
            fail_msg("%s: hypothesis %zu score %.9g vs %.9g", what, i, x->score, y->score);
    }
}

/* Bidirectional attention: every query sees every row, whatever pos0; it
 * equals causal attention of a query placed at the last row. */
static void test_bidirectional_attention(void **state)
{
    (void)state;
    const Kernels *k = kernels_select("ref", NULL);
    enum { HD = 8, G = 2, ROWS = 70, NQ = 3 };
    static float kr[ROWS][HD], vr[ROWS][HD], q[NQ][G * HD], out_b[NQ][G * HD], out_c[G * HD];
    static float scores[G * 128], view[2 * ROWS * HD];
    for (size_t r = 0; r < ROWS; r++)
        for (size_t d = 0; d < HD; d++)
            kr[r][d] = sinf((float)(r * HD + d)), vr[r][d] = cosf((float)(r * 3 + d));
    for (size_t t = 0; t < NQ; t++)
        for (size_t d = 0; d < G * HD; d++)
            q[t][d] = sinf((float)(t * 31 + d) * 0.7f);
    KvBlock blocks[2] = {
        { .pos = 0, .n = 40, .k = kr, .v = vr, .k_stride = HD * 4, .v_stride = HD * 4 },
        { .pos = 40, .n = 30, .k = kr[40], .v = vr[40], .k_stride = HD * 4, .v_stride = HD * 4 },
    };
    KvBlock view_blocks[2];
    for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
        AttnArgs a = { .q = q[0], .q_stride = G * HD, .out = out_b[0], .out_stride = G * HD, .n_q = NQ, .group = G,
                       .head_dim = HD, .pos0 = 0, .bidirectional = 1, .blocks = blocks, .n_blocks = 2,
                       .scores = scores, .view = view, .view_blocks = view_blocks };
        Counters ctr = { 0 };
        attend(k, (AttendAlgo)algo, &a, &ctr);
        assert_int_equal(ctr.flops_qk, 2 * (uint64_t)NQ * G * ROWS * HD); /* every query saw all 70 rows */
        for (size_t t = 0; t < NQ; t++) {
            AttnArgs c = a;
            c.q = q[t], c.out = out_c, c.n_q = 1, c.pos0 = ROWS - 1, c.bidirectional = 0;
            attend(k, (AttendAlgo)algo, &c, NULL);
            assert_true(max_rel_diff(out_b[t], out_c, G * HD, 0, "bidirectional") == 0);
        }
    }
}

/* The decoder-only tensors of an encoder-decoder are a decoder-only model's
 * of the same config; the same seed gives the same bits. */
static void test_weights(void **state)
{
    (void)state;
    Config c = encdec_config(7, -1), d = c;
    d.architecture = ARCH_DECODER, d.encoder_layers = 0, d.src_len = 0;
    Model a, b, dec;
    test_model(&a, &c);
    test_model(&b, &c);
    test_model(&dec, &d);
    assert_int_equal(a.arena_floats, model_param_floats(&c));
    assert_true(a.arena_floats > dec.arena_floats);
    assert_memory_equal(a.arena, b.arena, a.arena_floats * sizeof(float));
    assert_memory_equal(a.arena, dec.arena, dec.arena_floats * sizeof(float));
    assert_non_null(a.enc_layers);
    assert_non_null(a.cross);
    assert_null(dec.enc_layers);
    model_free(&a);
    model_free(&b);
    model_free(&dec);
}

/* The heart of it: cached == uncached for widths 1, 2, 4, 8, several seeds,
 * with and without an end token, on contiguous, dynamic and paged caches. */
static void test_beam_cached_equals_uncached(void **state)
{
    (void)state;
    static const char *const specs[] = { "contiguous", "dynamic", "paged:page=4", "paged:page=1", "paged:page=3" };
    static const size_t widths[] = { 1, 2, 4, 8 };
    size_t finished_seen = 0, forks_seen = 0, cow_seen = 0;
    const Kernels *best = kernels_select(NULL, NULL);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        for (int with_eos = 0; with_eos < 2; with_eos++) {
            /* an end token that the model actually produces: greedy's third token */
            Config c = encdec_config(seed, -1);
            Model m;
            test_model(&m, &c);
            m.kern = seed == 2 ? kernels_select("ref", NULL) : best;
            m.attend = seed == 3 ? ATTEND_NAIVE : ATTEND_FLASH;
            int src[9], greedy[12];
            size_t n_greedy;
            Err e = { 0 };
            test_tokens(src, c.src_len, c.vocab, (unsigned)seed);
            if (encdec_greedy(&m, src, NULL, c.max_seq_len, greedy, &n_greedy, &e) < 0)
                fail_msg("greedy: %s", e.msg);
            if (with_eos)
                m.cfg.eos_token = greedy[2] != m.cfg.bos_token ? greedy[2] : 0;
            for (size_t wi = 0; wi < 4; wi++) {
                size_t W = widths[wi];
                BeamResult ref;
                search(&m, src, NULL, W, &ref, NULL);
                assert_true(ref.n >= 1 && ref.n <= W);
                for (size_t i = 0; i < ref.n; i++)
                    finished_seen += ref.hyps[i].finished;
                assert_int_equal(ref.cross_fills, 0); /* the uncached path recomputes the cross K/V ... */
                assert_true(ref.cross_kv_rows >= ref.steps * c.src_len * c.n_layers); /* ... every step */
                for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
                    char what[96];
                    snprintf(what, sizeof what, "seed %llu eos %d W %zu %s", (unsigned long long)seed,
                             m.cfg.eos_token, W, specs[si]);
                    BeamResult got;
                    StepCheck chk = { 0 };
                    search(&m, src, specs[si], W, &got, &chk);
                    assert_same_beams(&got, &ref, what);
                    assert_int_equal(got.cross_fills, 1);
                    assert_int_equal(got.cross_kv_rows, c.src_len * c.n_layers); /* once */
                    assert_int_equal(got.cross_refs_end, 0);
                    assert_true(got.cross_peak_refs >= 1 && got.cross_peak_refs <= W);
                    assert_int_equal(got.steps, ref.steps);
                    if (W == 1)
                        assert_int_equal(got.forks, 0);
                    forks_seen += got.forks;
                    cow_seen += chk.cow;
                    if (strcmp(specs[si], "paged:page=1") == 0)
                        assert_int_equal(chk.cow, 0); /* full pages: a fork never writes into a shared one */
                    beam_result_free(&got);
                }
                beam_result_free(&ref);
            }
            model_free(&m);
        }
    }
    /* the test exercised what it claims */
    assert_true(finished_seen > 0);
    assert_true(forks_seen > 0);
    assert_true(cow_seen > 0);
}

/* Width 1 is greedy decoding, cached or not. */
static void test_greedy_is_width_one(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        Config c = encdec_config(seed, seed % 2 ? 5 : -1);
        Model m;
        test_model(&m, &c);
        int src[9], g_c[12], g_u[12];
        size_t n_c = 0, n_u = 0;
        Err e = { 0 };
        test_tokens(src, c.src_len, c.vocab, (unsigned)seed + 10);
        KvGeometry geo = encdec_self_geometry(&m, 1);
        KvCache *cache = kv_open("contiguous", &geo, &e);
        assert_non_null(cache);
        if (encdec_greedy(&m, src, cache, c.max_seq_len, g_c, &n_c, &e) < 0 ||
            encdec_greedy(&m, src, NULL, c.max_seq_len, g_u, &n_u, &e) < 0)
            fail_msg("greedy: %s", e.msg);
        assert_int_equal(n_c, n_u);
        assert_memory_equal(g_c, g_u, n_c * sizeof(int));
        BeamResult r;
        search(&m, src, "paged:page=4", 1, &r, NULL);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.hyps[0].len, n_c);
        assert_memory_equal(r.hyps[0].tokens, g_c, n_c * sizeof(int));
        assert_int_equal(r.hyps[0].finished, c.eos_token >= 0 && g_c[n_c - 1] == c.eos_token);
        beam_result_free(&r);
        kv_free(cache);
        model_free(&m);
    }
}

/* The cross cache: computed once, its bytes counted once whatever W; the
 * self cache measured per beam equals the closed form (contiguous, every
 * beam at max_len), and a paged cache shares pages among beams. */
static void test_cross_cache_shared(void **state)
{
    (void)state;
    Config c = encdec_config(11, -1);
    Model m;
    test_model(&m, &c);
    int src[9];
    test_tokens(src, c.src_len, c.vocab, 3);
    EncDecMemory mem;
    Err e = { 0 };
    size_t cross_bytes = 0;
    for (size_t W = 1; W <= 8; W *= 2) {
        assert_int_equal(encdec_memory(&c, c.max_seq_len, W, &mem, &e), 0);
        BeamResult r;
        StepCheck chk = { 0 };
        search(&m, src, "contiguous", W, &r, &chk);
        assert_int_equal(r.cross_bytes, mem.cross_per_beam); /* one cross cache, whatever W */
        if (cross_bytes)
            assert_int_equal(r.cross_bytes, cross_bytes);
        cross_bytes = r.cross_bytes;
        assert_int_equal(r.cross_fills, 1);
        assert_int_equal(r.steps, c.max_seq_len); /* no end token: every beam reaches max_len */
        assert_int_equal(r.beams_last, W);
        assert_int_equal(r.self_bytes_last, W * mem.self_per_beam);
        beam_result_free(&r);

        search(&m, src, "paged:page=4", W, &r, &chk);
        if (W > 1) /* beams share their common prefix's pages */
            assert_true(r.self_bytes_peak < W * mem.self_per_beam);
        beam_result_free(&r);
    }
    model_free(&m);
}

/* The encoder-decoder notes' estimate, recomputed from the preset: 163,840 B of self cache
 * and 1,228,800 B of cross cache per beam, 11,141,120 B for 8 beams (the
 * seed rounds to 1.4 MB per beam and writes 11.2 MB). */
static void test_memory_closed_form(void **state)
{
    (void)state;
    use_repo_data();
    Config c;
    Err e = { 0 };
    if (config_load(&c, "encdec", &e) < 0 || config_validate(&c, &e) < 0)
        fail_msg("encdec preset: %s", e.msg);
    assert_int_equal(c.architecture, ARCH_ENCDEC);
    assert_int_equal(c.n_layers, 4);
    assert_int_equal(c.n_heads, 8);
    assert_int_equal(c.head_dim, 32);
    assert_int_equal(c.src_len, 150);
    assert_int_equal(c.max_seq_len, 20);
    EncDecMemory mem;
    assert_int_equal(encdec_memory(&c, c.max_seq_len, 8, &mem, &e), 0);
    assert_int_equal(mem.self_per_beam, 4 * 8 * 20 * 32 * 4 * 2);
    assert_int_equal(mem.self_per_beam, 163840);
    assert_int_equal(mem.cross_per_beam, 4 * 8 * 150 * 32 * 4 * 2);
    assert_int_equal(mem.cross_per_beam, 1228800);
    assert_int_equal(mem.seed_per_beam, 1392640);
    assert_int_equal(mem.seed_total, 11141120);
    assert_int_equal(mem.shared_total, 8 * 163840 + 1228800);
}

static void test_bad_input(void **state)
{
    (void)state;
    Config c = encdec_config(1, -1);
    Model m, dec;
    test_model(&m, &c);
    int src[9] = { 0 };
    BeamResult r;
    Err e = { 0 };
    BeamOptions o = { .width = 0, .max_len = 4, .alpha = 1 };
    assert_int_equal(beam_search(&m, src, NULL, &o, &r, NULL, NULL, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    o.width = 2, o.max_len = c.max_seq_len + 1;
    assert_int_equal(beam_search(&m, src, NULL, &o, &r, NULL, NULL, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    /* a cache with too few sequences for the width */
    o.width = 4, o.max_len = 4;
    KvGeometry geo = encdec_self_geometry(&m, 2);
    KvCache *small = kv_open("contiguous", &geo, &e);
    assert_int_equal(beam_search(&m, src, small, &o, &r, NULL, NULL, &e), -1);
    kv_free(small);
    /* a source token outside the vocabulary */
    src[3] = (int)c.vocab;
    o.width = 2;
    assert_int_equal(beam_search(&m, src, NULL, &o, &r, NULL, NULL, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);

    /* a decoder-only model has no encoder: beam search over a source, and the
     * encoder keys, are refused; an encoder-decoder refuses model_forward */
    Config d = test_config(2, 4, 2);
    test_model(&dec, &d);
    src[3] = 0;
    assert_int_equal(beam_search(&dec, src, NULL, &o, &r, NULL, NULL, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    Config bad = d;
    bad.src_len = 5;
    assert_int_equal(config_validate(&bad, &e), -1);
    bad = c;
    bad.encoder_layers = 0;
    assert_int_equal(config_validate(&bad, &e), -1);
    bad = c;
    bad.eos_token = bad.bos_token;
    assert_int_equal(config_validate(&bad, &e), -1);
    bad = c;
    bad.bos_token = (int)c.vocab;
    assert_int_equal(config_validate(&bad, &e), -1);
    assert_int_equal(config_set(&bad, "architecture", "seq2seq", &e), -1);
    assert_int_equal(config_set(&bad, "eos_token", "none", &e), 0);
    assert_int_equal(bad.eos_token, -1);
    ForwardState fs;
    assert_int_equal(forward_state_init(&fs, &c, 4, 0, &e), 0);
    float logits[64];
    Counters ctr = { 0 };
    int tok = 1;
    assert_int_equal(model_forward(&m, &fs, NULL, &tok, 1, 1, 0, logits, &ctr, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    forward_state_free(&fs);
    model_free(&dec);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bidirectional_attention),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_beam_cached_equals_uncached),
        cmocka_unit_test(test_greedy_is_width_one),
        cmocka_unit_test(test_cross_cache_shared),
        cmocka_unit_test(test_memory_closed_form),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
