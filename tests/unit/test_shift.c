/* test_shift.c: the context-shift cache (llama.cpp's). A kept key rotated
 * back by the positions discarded equals that key computed at its new
 * position from scratch, within float rounding; a shift cache that never
 * fills is the exact cache; with one that fills, generation runs past the
 * model's context while every RoPE position stays inside it; every other
 * cache keeps the text's positions and its limits. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/forward.h"
#include "model/generate.h"

#define SHIFT_TOL 1e-5   /* logits against the exact cache (relative) */
#define ROTATE_TOL 1e-5  /* a re-rotated key against one rotated from scratch (absolute; keys within [-1, 1]) */

/* A raw (unrotated) key or value of position t, head h, channel i. */
static float raw(size_t t, size_t h, size_t i)
{
    return (float)sin(0.37 * (double)t + 1.3 * (double)h + 0.61 * (double)i);
}

/* Largest |stored K - rope(raw key, cache position)| over the held rows of
 * layer 0, sequence 0; fails if a kept row (below keep) or a V row is not
 * bit for bit what was appended. */
static double key_error(const KvCache *c, size_t keep, size_t hd, double theta, RopeFn rope)
{
    const size_t shift = kv_pos_shift(c, 0);
    double worst = 0;
    float want[256];
    for (size_t h = 0; h < c->geo.n_kv_heads; h++) {
        KvBlock blk;
        assert_int_equal(kv_n_blocks(c, 0, 0), 1);
        kv_block(c, 0, 0, h, 0, &blk);
        assert_int_equal(blk.pos, 0);
        for (size_t r = 0; r < blk.n; r++) {
            const size_t t = r < keep ? r : r + shift; /* the text position of row r */
            const float *k = (const float *)((const char *)blk.k + r * blk.k_stride);
            const float *v = (const float *)((const char *)blk.v + r * blk.v_stride);
            for (size_t i = 0; i < hd; i++) {
                want[i] = raw(t, h, i);
                if (v[i] != want[i])
                    fail_msg("V of text position %zu moved but changed", t);
            }
            rope(want, 1, hd, r, theta, NULL);
            for (size_t i = 0; i < hd; i++) {
                if (r < keep && k[i] != want[i])
                    fail_msg("kept K row %zu was touched", r);
                worst = fmax(worst, fabs((double)k[i] - want[i]));
            }
        }
    }
    return worst;
}

/* Append text positions 0 .. n-1 one at a time, each K rotated at the
 * position the cache gives it (text position minus its shift), as the
 * model does. */
static void feed(KvCache *c, size_t from, size_t n, double theta, RopeFn rope)
{
    const KvGeometry *g = &c->geo;
    float k[4 * 256], v[4 * 256];
    Err e = { 0 };
    int tok = 1;
    for (size_t t = from; t < n; t++) {
        if (kv_reserve(c, 0, t, &tok, 1, NULL, &e) < 0)
            fail_msg("reserve %zu: %s", t, e.msg);
        const size_t at = t - kv_pos_shift(c, 0);
        for (size_t h = 0; h < g->n_kv_heads; h++)
            for (size_t i = 0; i < g->head_dim; i++)
                k[h * g->head_dim + i] = v[h * g->head_dim + i] = raw(t, h, i);
        rope(k, g->n_kv_heads, g->head_dim, at, theta, NULL);
        for (size_t l = 0; l < g->n_layers; l++)
            if (kv_append(c, l, 0, at, 1, k, v, NULL, &e) < 0)
                fail_msg("append %zu: %s", t, e.msg);
    }
}

static void test_rerotated_key_equals_key_at_new_position(void **state)
{
    (void)state;
    const double theta = 10000.0;
    KvGeometry g = { .n_layers = 2, .n_seqs = 1, .n_kv_heads = 2, .head_dim = 64, .max_seq_len = 64,
                     .rope_theta = theta };
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    for (size_t k = 0; k < n_isa; k++) { /* keys rotated by each ISA's RoPE, as the model does */
        Err e = { 0 };
        KvCache *c = kv_open("shift:ctx=32,keep=4", &g, &e);
        if (!c)
            fail_msg("%s", e.msg);
        feed(c, 0, 33, theta, isa[k]->rope); /* the 33rd token does not fit: one shift of (32 - 4) / 2 = 14 */
        assert_int_equal(kv_pos_shift(c, 0), 14);
        assert_int_equal(kv_length(c, 0, 0), 32 - 14 + 1);
        double once = key_error(c, 4, 64, theta, isa[k]->rope);
        feed(c, 33, 400, theta, isa[k]->rope); /* many shifts: a row may be rotated more than once before it goes */
        KvStats st;
        kv_stats(c, &st);
        double many = key_error(c, 4, 64, theta, isa[k]->rope);
        printf("  %s: re-rotated vs rotated from scratch: max |diff| %.3g after one shift of 14, %.3g after %zu "
               "shifts (%zu positions discarded, text at 400, %zu rows held)\n", isa[k]->isa, once, many, st.shifts,
               st.shifted_out, kv_length(c, 0, 0));
        assert_int_equal(st.shifted_out, kv_pos_shift(c, 0));
        assert_true(kv_length(c, 0, 0) <= 32);
        assert_true(once <= ROTATE_TOL && many <= ROTATE_TOL);

        KvCell cells[400];
        kv_cells(c, 1, 0, cells, 400);
        assert_int_equal(cells[3].state, CELL_EXACT);             /* kept */
        assert_int_equal(cells[4].state, CELL_EVICTED);           /* discarded */
        assert_int_equal(cells[4 + st.shifted_out - 1].state, CELL_EVICTED);
        assert_int_equal(cells[4 + st.shifted_out].state, CELL_EXACT); /* the oldest survivor */
        assert_int_equal(cells[399].state, CELL_EXACT);
        kv_free(c);
    }
}

/* Generate with spec and with contiguous: tokens and logits. */
static double versus_exact(const Model *m, const char *spec, size_t plen, size_t n_gen, int *same)
{
    int prompt[128], a[128], b[128];
    test_tokens(prompt, plen, m->cfg.vocab, 5);
    const size_t V = m->cfg.vocab;
    TestLog la = { malloc(n_gen * V * sizeof(float)), V, 0 }, lb = { malloc(n_gen * V * sizeof(float)), V, 0 };
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *c = kv_open(spec, &geo, &e), *exact = kv_open("contiguous", &geo, &e);
    assert_non_null(c);
    assert_non_null(exact);
    GenOptions go = { .n_generate = n_gen };
    if (generate(m, c, prompt, 1, plen, &go, a, log_logits, &la, &e) < 0)
        fail_msg("%s: %s", spec, e.msg);
    assert_int_equal(generate(m, exact, prompt, 1, plen, &go, b, log_logits, &lb, &e), 0);
    KvStats st;
    kv_stats(c, &st);
    assert_int_equal(st.shifts, 0);
    *same = memcmp(a, b, n_gen * sizeof(int)) == 0;
    double d = max_rel_diff(la.logits, lb.logits, n_gen * V, SHIFT_TOL, spec);
    kv_free(c);
    kv_free(exact);
    free(la.logits);
    free(lb.logits);
    return d;
}

static void test_never_shifting_is_exact(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    /* the default ctx is max_seq_len (256); ctx=64 prefills the 40-token prompt in passes of (64 - 4) / 2 */
    static const char *specs[] = { "shift", "shift:ctx=64,keep=4" };
    for (size_t i = 0; i < 2; i++)
        for (int algo = ATTEND_NAIVE; algo <= ATTEND_FLASH; algo++) {
            m.attend = (AttendAlgo)algo;
            int same;
            double d = versus_exact(&m, specs[i], 40, 20, &same);
            printf("  %-20s %-6s vs contiguous: tokens %s, max rel logit diff %.3g\n", specs[i],
                   attend_algo_name(m.attend), same ? "identical" : "DIFFER", d);
            assert_true(same);
            assert_true(d <= SHIFT_TOL);
            if (i == 0) /* one prefill pass, the same rows and positions: the same arithmetic */
                assert_true(d == 0.0);
        }
    model_free(&m);
}

/* A model of 32 positions generates 150 tokens through shift:ctx=32; the
 * exact cache refuses the run up front. */
static void test_runs_past_the_context(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.max_seq_len = 32;
    Model m;
    test_model(&m, &c);
    int prompt[40], out[150];
    test_tokens(prompt, 40, c.vocab, 2);
    KvGeometry geo = model_kv_geometry(&m, 1);
    Err e = { 0 };
    GenOptions go = { .n_generate = 150 };
    KvCache *c32 = kv_open("shift:ctx=32,keep=4", &geo, &e), *exact = kv_open("contiguous", &geo, &e);
    assert_non_null(c32);
    assert_non_null(exact);
    for (size_t plen = 10; plen <= 40; plen += 30) { /* 40: longer than the context, prefilled in passes of 14 */
        kv_reset(c32);
        if (generate(&m, c32, prompt, 1, plen, &go, out, NULL, NULL, &e) < 0)
            fail_msg("prompt %zu: %s", plen, e.msg);
        const size_t text = generate_positions(plen, 150);
        assert_int_equal(kv_pos_shift(c32, 0) + kv_length(c32, 0, 0), text);
        assert_true(kv_length(c32, 0, 0) <= 32);
        printf("  prompt %zu + 150 generated through a context of 32: %zu positions, %zu shifted out, %zu held\n",
               plen, text, kv_pos_shift(c32, 0), kv_length(c32, 0, 0));
    }
    assert_int_equal(generate(&m, exact, prompt, 1, 10, &go, out, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "max_seq_len 32"));
    kv_free(c32);
    kv_free(exact);
    model_free(&m);
}

/* Every other cache keeps the text's positions: no shift, the run's
 * positions checked against max_seq_len before anything runs, the same
 * overflow from kv_check_room; and the shifting path with nothing shifted
 * is bit for bit the contiguous cache's (test_never_shifting_is_exact). */
static void test_contiguous_unchanged(void **state)
{
    (void)state;
    Config c = test_config(1, 4, 2);
    c.max_seq_len = 16;
    Model m;
    test_model(&m, &c);
    KvGeometry geo = model_kv_geometry(&m, 1);
    Err e = { 0 };
    KvCache *cache = kv_open("contiguous", &geo, &e);
    assert_false(kv_shifts(cache));
    assert_int_equal(kv_pos_shift(cache, 0), 0);
    assert_int_equal(kv_check_room(cache, 17, &e), -1);
    assert_non_null(strstr(e.msg, "cache overflow"));
    ForwardState fs;
    assert_int_equal(forward_state_init(&fs, &c, 4, 0, &e), 0);
    int tokens[4] = { 1, 2, 3, 4 };
    float *logits = malloc(c.vocab * sizeof(float));
    Counters ctr = { 0 };
    assert_int_equal(model_forward(&m, &fs, cache, tokens, 1, 4, 0, logits, &ctr, &e), 0);
    Counters before = ctr;
    /* past the context: refused before the pass touches the cache */
    assert_int_equal(model_forward(&m, &fs, cache, tokens, 1, 4, 13, logits, &ctr, &e), -1);
    assert_string_equal(e.msg, "position 16 is beyond max_seq_len 16");
    assert_int_equal(kv_length(cache, 0, 0), 4);
    assert_memory_equal(&ctr, &before, sizeof ctr);
    forward_state_free(&fs);
    free(logits);
    kv_free(cache);
    model_free(&m);
}

static void test_bad_specs(void **state)
{
    (void)state;
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = 8, .max_seq_len = 128,
                     .rope_theta = 10000.0 };
    static const struct {
        const char *spec, *says;
    } bad[] = {
        { "shift:keep=128", "keep=128 leaves nothing to discard in ctx=128 (keep at most 126)" },
        { "shift:ctx=16,keep=15", "keep at most 14" },
        { "shift:ctx=129", "ctx=129 is beyond the model's 128 positions" },
        { "shift:ctx=0", "at least 1" },
        { "shift:window=4", "has no option 'window' (accepted: ctx=C (default: max_seq_len), keep=N)" },
        { "shift+quant:k=q8_0", "stores f32 rows" },
    };
    Err e = { 0 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e = (Err){ 0 };
        KvCache *c = kv_open(bad[i].spec, &g, &e);
        if (c || e.kind != ERR_USAGE || !strstr(e.msg, bad[i].says) || strchr(e.msg, '\n'))
            fail_msg("%s: got '%s'", bad[i].spec, e.msg);
    }
    KvCache *c = kv_open("shift:keep=0", &g, &e);
    assert_non_null(c);
    assert_int_equal(kv_max_pass(c), 64);
    kv_free(c);
    assert_non_null(c = kv_open("shift+quant:k=f32,v=f32", &g, &e));
    kv_free(c);
    g.rope_theta = 0; /* a geometry that does not say how its keys were rotated */
    assert_null(kv_open("shift", &g, &e));
    assert_non_null(strstr(e.msg, "re-rotates RoPE keys"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rerotated_key_equals_key_at_new_position),
        cmocka_unit_test(test_never_shifting_is_exact),
        cmocka_unit_test(test_runs_past_the_context),
        cmocka_unit_test(test_contiguous_unchanged),
        cmocka_unit_test(test_bad_specs),
    };
    return cmocka_run_group_tests_name("shift", tests, NULL, NULL);
}
