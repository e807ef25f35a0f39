/* test_mla.c: multi-head latent attention (model/mla.h).
 *
 * The latent cache is exact: cached and uncached generation agree for both
 * read paths and every f32 layout; the two paths agree with each other; the
 * cache holds kv_lora_rank + qk_rope_dim values per token and layer (the
 * memory.h figure); the counters follow the closed forms; the tile LRU's
 * hit counts are what its access pattern implies, run after run. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/forward.h"
#include "model/generate.h"
#include "model/memory.h"
#include "model/mla.h"

#define CACHE_REL_TOL 1e-5 /* cached vs uncached logits, one path (f32 cache: float rounding only) */
#define PATH_REL_TOL 1e-4  /* decompress vs absorbed: the same sums in another order (issue 5) */
#define N_GEN 8
#define MAX_BATCH 2

static Config mla_tiny(void)
{
    use_repo_data();
    Config c;
    Err e = { 0 };
    if (config_load(&c, "mla-tiny", &e) < 0 || config_validate(&c, &e) < 0)
        fail_msg("mla-tiny: %s", e.msg);
    return c;
}

typedef struct {
    float *logits; /* [N_GEN][n_seqs][vocab] */
    size_t per_step, n;
    MlaStats last;   /* after the last step */
    Counters decode; /* the last decode step's counters */
    size_t decode_context;
} Log;

static int log_step(void *user, const StepReport *r)
{
    Log *l = user;
    if (r->sampled)
        memcpy(l->logits + l->n++ * l->per_step, r->logits, l->per_step * sizeof(float));
    const MlaStats *st = mla_state_stats(r->state->mla);
    assert_non_null(st);
    l->last = *st;
    if (r->phase == PHASE_DECODE) {
        l->decode = r->ctr;
        l->decode_context = r->context;
    }
    return 0;
}

static void log_init(Log *l, const Config *c, size_t batch)
{
    memset(l, 0, sizeof *l);
    l->per_step = batch * c->vocab;
    l->logits = malloc(N_GEN * l->per_step * sizeof(float));
    assert_non_null(l->logits);
}

/* Generate N_GEN tokens (spec NULL: uncached); returns the cache (or NULL)
 * for the caller to inspect and free. */
static KvCache *run(const Model *m, const char *spec, size_t batch, size_t plen, int *out, Log *log)
{
    const Config *c = &m->cfg;
    int prompt[MAX_BATCH * 64];
    test_tokens(prompt, batch * plen, c->vocab, (unsigned)plen);
    Err e = { 0 };
    KvCache *cache = NULL;
    if (spec) {
        KvGeometry geo = model_kv_geometry(m, batch);
        cache = kv_open(spec, &geo, &e);
        if (!cache)
            fail_msg("kv_open %s: %s", spec, e.msg);
    }
    GenOptions go = { .n_generate = N_GEN };
    if (generate(m, cache, prompt, batch, plen, &go, out, log_step, log, &e) < 0)
        fail_msg("generate: %s", e.msg);
    assert_int_equal(log->n, N_GEN);
    return cache;
}

/* Largest |a - b| over a step, relative to the step's largest |b|. */
static double worst_rel(const Log *a, const Log *b)
{
    double worst = 0;
    for (size_t s = 0; s < N_GEN; s++) {
        double scale = 0, d = 0;
        for (size_t i = 0; i < a->per_step; i++) {
            scale = fmax(scale, fabs(b->logits[s * b->per_step + i]));
            d = fmax(d, fabs((double)a->logits[s * a->per_step + i] - b->logits[s * b->per_step + i]));
        }
        worst = fmax(worst, d / scale);
    }
    return worst;
}

/* Cached equals uncached, for both paths, three layouts, two batch sizes,
 * every ISA; and the two paths equal each other. */
static void test_cached_equals_uncached(void **state)
{
    (void)state;
    Config c = mla_tiny();
    Model m;
    test_model(&m, &c);
    const Kernels *isa[4];
    size_t n_isa = kernels_available(isa, 4);
    static const char *const specs[] = { "contiguous", "dynamic", "paged:page=16" };
    static const size_t batches[] = { 1, MAX_BATCH };
    size_t runs = 0, failures = 0;
    for (size_t k = 0; k < n_isa; k++) {
        m.kern = isa[k];
        for (size_t bi = 0; bi < 2; bi++) {
            const size_t batch = batches[bi], plen = 37; /* 44 positions: three pages of 16 */
            Log ref[2];
            int out_ref[2][MAX_BATCH * N_GEN];
            for (int path = 0; path < 2; path++) { /* the uncached run of each path */
                m.mla_path = (MlaPath)path;
                log_init(&ref[path], &c, batch);
                run(&m, NULL, batch, plen, out_ref[path], &ref[path]);
            }
            double paths = worst_rel(&ref[MLA_DECOMPRESS], &ref[MLA_ABSORBED]);
            if (paths > PATH_REL_TOL || memcmp(out_ref[0], out_ref[1], batch * N_GEN * sizeof(int)) != 0) {
                printf("  PATHS DISAGREE: isa=%s batch=%zu, max rel logit diff %.3g\n", m.kern->isa, batch, paths);
                failures++;
            }
            for (int path = 0; path < 2; path++)
                for (size_t si = 0; si < 3; si++) {
                    m.mla_path = (MlaPath)path;
                    Log lc;
                    int out[MAX_BATCH * N_GEN];
                    log_init(&lc, &c, batch);
                    kv_free(run(&m, specs[si], batch, plen, out, &lc));
                    double d = worst_rel(&lc, &ref[path]);
                    int same = memcmp(out, out_ref[path], batch * N_GEN * sizeof(int)) == 0;
                    runs++;
                    if (!same || d > CACHE_REL_TOL) {
                        printf("  DISAGREE: isa=%s path=%s cache=%s batch=%zu: tokens %s, max rel logit diff %.3g\n",
                               m.kern->isa, mla_path_name(m.mla_path), specs[si], batch, same ? "same" : "differ",
                               d);
                        failures++;
                    }
                    free(lc.logits);
                }
            free(ref[0].logits);
            free(ref[1].logits);
        }
    }
    printf("  %zu runs (%zu ISA paths x 2 batches x 2 MLA paths x 3 layouts), %zu disagreements\n", runs, n_isa,
           failures);
    assert_int_equal(runs, n_isa * 12);
    assert_int_equal(failures, 0);
    model_free(&m);
}

/* A sliding window and chunked prefill go through the same paths. */
static void test_window_and_chunks(void **state)
{
    (void)state;
    Config c = mla_tiny();
    c.sliding_window = 12;
    Model m;
    test_model(&m, &c);
    int prompt[30], out_c[N_GEN], out_u[N_GEN];
    test_tokens(prompt, 30, c.vocab, 9);
    for (int path = 0; path < 2; path++) {
        m.mla_path = (MlaPath)path;
        Log lc, lu;
        log_init(&lc, &c, 1);
        log_init(&lu, &c, 1);
        Err e = { 0 };
        KvGeometry geo = model_kv_geometry(&m, 1);
        KvCache *cache = kv_open("paged:page=8", &geo, &e);
        assert_non_null(cache);
        GenOptions go = { .n_generate = N_GEN, .chunk = 7 };
        assert_int_equal(generate(&m, cache, prompt, 1, 30, &go, out_c, log_step, &lc, &e), 0);
        assert_int_equal(generate(&m, NULL, prompt, 1, 30, &go, out_u, log_step, &lu, &e), 0);
        assert_memory_equal(out_c, out_u, sizeof out_c);
        assert_true(worst_rel(&lc, &lu) <= CACHE_REL_TOL);
        kv_free(cache);
        free(lc.logits);
        free(lu.logits);
    }
    model_free(&m);
}

/* Bytes per token: (kv_lora_rank + qk_rope_dim) x element size x layers,
 * memory.h's figure, measured on the caches themselves; no V is stored. */
static void test_latent_bytes_per_token(void **state)
{
    (void)state;
    Config c = mla_tiny();
    Model m;
    test_model(&m, &c);
    const size_t latent = c.kv_lora_rank + c.qk_rope_dim;
    KvShape shape = memory_shape(&c);
    assert_int_equal(memory_shape_values(&shape), latent);
    static const struct {
        const char *spec;
        size_t elem;
    } cases[] = {
        { "contiguous", 4 }, { "dynamic", 4 }, { "paged:page=16", 4 }, { "contiguous+quant:k=f16", 2 },
        { "dynamic+quant:k=f16", 2 }, { "ring:window=64,sinks=4", 4 }, { "mixed:hot=64,group=16", 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Log l;
        int out[N_GEN];
        log_init(&l, &c, 1);
        /* 25 + 8 - 1 = 32 positions: two full pages of 16 */
        KvCache *cache = run(&m, cases[i].spec, 1, 25, out, &l);
        size_t positions = kv_length(cache, 0, 0);
        assert_int_equal(positions, 32);
        size_t per_token = kv_bytes_used(cache) / positions;
        size_t want = latent * cases[i].elem * c.n_layers;
        if (per_token != want)
            fail_msg("%s: %zu bytes per token, want %zu", cases[i].spec, per_token, want);
        if (cases[i].elem == 4)
            assert_int_equal(per_token, memory_token_layer_bytes(&shape, FMT_F32) * c.n_layers);
        KvGeometry geo = model_kv_geometry(&m, 1);
        assert_int_equal(kv_row_pair_bytes(&geo, FMT_F32, FMT_F32), latent * 4);
        kv_free(cache);
        free(l.logits);
    }
    model_free(&m);

    /* the MLA notes' shape (the mla preset): 512 + 64 = 576 values */
    Config seed;
    Err e = { 0 };
    assert_int_equal(config_load(&seed, "mla", &e), 0);
    assert_int_equal(config_validate(&seed, &e), 0);
    assert_int_equal(mla_check_config(&seed, &e), 0);
    KvGeometry g = config_kv_geometry(&seed, 1);
    assert_int_equal(g.head_dim, 576);
    assert_int_equal(g.n_kv_heads, 1);
    assert_true(g.k_only);
    assert_int_equal(kv_row_pair_bytes(&g, FMT_F16, FMT_F16), 1152); /* the MLA notes' 1,152 bytes at fp16 */
    KvShape s = memory_shape(&seed);
    assert_int_equal(memory_token_layer_bytes(&s, FMT_F16), 1152);
    /* a real cache of that geometry (2 layers) holds exactly that */
    g.n_layers = 2, g.max_seq_len = 32;
    KvCache *cache = kv_open("paged:page=16+quant:k=f16", &g, &e);
    assert_non_null(cache);
    float *rows = calloc(16 * 576, sizeof(float));
    int tok[16] = { 0 };
    assert_int_equal(kv_reserve(cache, 0, 0, tok, 16, NULL, &e), 0);
    for (size_t l = 0; l < 2; l++)
        assert_int_equal(kv_append(cache, l, 0, 0, 16, rows, rows, NULL, &e), 0);
    assert_int_equal(kv_bytes_used(cache), 16 * 2 * 1152);
    kv_free(cache);
    free(rows);
}

static void expect_flops(const Counters *got, const MlaFlops *per_layer, size_t layers, const char *what)
{
    const uint64_t L = layers;
    if (got->flops_q != L * per_layer->q || got->flops_k != L * per_layer->k || got->flops_v != L * per_layer->v ||
        got->flops_o != L * per_layer->o || got->flops_qk != L * per_layer->qk || got->flops_av != L * per_layer->av ||
        got->flops_softmax != L * per_layer->softmax)
        fail_msg("%s: measured q %llu k %llu v %llu o %llu qk %llu av %llu softmax %llu; closed form x %zu layers: "
                 "q %llu k %llu v %llu o %llu qk %llu av %llu softmax %llu",
                 what, (unsigned long long)got->flops_q, (unsigned long long)got->flops_k,
                 (unsigned long long)got->flops_v, (unsigned long long)got->flops_o,
                 (unsigned long long)got->flops_qk, (unsigned long long)got->flops_av,
                 (unsigned long long)got->flops_softmax, layers, (unsigned long long)(L * per_layer->q),
                 (unsigned long long)(L * per_layer->k), (unsigned long long)(L * per_layer->v),
                 (unsigned long long)(L * per_layer->o), (unsigned long long)(L * per_layer->qk),
                 (unsigned long long)(L * per_layer->av), (unsigned long long)(L * per_layer->softmax));
}

/* A decode step's counters against mla_flops and the bytes it names. */
static void test_flops_closed_forms(void **state)
{
    (void)state;
    Config c = mla_tiny();
    Model m;
    test_model(&m, &c);
    const size_t L = c.n_layers, H = c.n_heads, lat = c.kv_lora_rank + c.qk_rope_dim;
    int out[N_GEN];
    MlaFlops f;

    /* absorbed: one query sees the whole context; nothing up-projected */
    Log la;
    log_init(&la, &c, 1);
    m.mla_path = MLA_ABSORBED;
    kv_free(run(&m, "contiguous", 1, 20, out, &la));
    size_t n = la.decode_context;
    assert_int_equal(n, 20 + N_GEN - 1);
    mla_flops(&c, MLA_ABSORBED, 1, n, 0, &f);
    expect_flops(&la.decode, &f, L, "absorbed");
    assert_int_equal(la.decode.kv_bytes_read, L * n * lat * sizeof(float));
    assert_int_equal(la.decode.view_bytes, 0);

    /* decompress without the LRU: every row up-projected at every step */
    Log ld;
    log_init(&ld, &c, 1);
    m.mla_path = MLA_DECOMPRESS;
    m.mla_tiles = 0;
    kv_free(run(&m, "contiguous", 1, 20, out, &ld));
    mla_flops(&c, MLA_DECOMPRESS, 1, n, n, &f);
    expect_flops(&ld.decode, &f, L, "decompress, no LRU");
    assert_int_equal(ld.decode.kv_bytes_read, L * n * lat * sizeof(float));
    const size_t tile_row = (H * (c.qk_nope_dim + c.v_head_dim) + c.qk_rope_dim) * sizeof(float);
    assert_int_equal(ld.decode.view_bytes, L * 2 * n * tile_row); /* written, then read back */
    assert_int_equal(ld.last.tiles.lookups, 0);

    /* with the LRU: the step's tile is held, only the new row is up-projected */
    Log lt;
    log_init(&lt, &c, 1);
    m.mla_tiles = MLA_DEFAULT_TILES;
    kv_free(run(&m, "contiguous", 1, 20, out, &lt));
    mla_flops(&c, MLA_DECOMPRESS, 1, n, 1, &f);
    expect_flops(&lt.decode, &f, L, "decompress, LRU");
    assert_int_equal(lt.decode.kv_bytes_read, L * lat * sizeof(float));

    /* the same output whichever way */
    assert_true(worst_rel(&ld, &la) <= PATH_REL_TOL);
    assert_true(worst_rel(&lt, &ld) <= CACHE_REL_TOL);

    /* the paths' cost at the MLA notes' shape, context 1024 (per layer, decode):
     * absorbed does far less arithmetic than decompressing every row */
    Config seed;
    Err e = { 0 };
    assert_int_equal(config_load(&seed, "mla", &e), 0);
    MlaFlops fa, fd;
    mla_flops(&seed, MLA_ABSORBED, 1, 1024, 0, &fa);
    mla_flops(&seed, MLA_DECOMPRESS, 1, 1024, 1024, &fd);
    assert_int_equal(fd.v, 2ull * 1024 * 512 * 20 * 256); /* W_uv over every row */
    assert_true(mla_flops_total(&fd) > 20 * mla_flops_total(&fa));
    free(la.logits);
    free(ld.logits);
    free(lt.logits);
    model_free(&m);
}

/* The LRU's counts follow from its access pattern, and repeat exactly. */
static void test_tile_lru(void **state)
{
    (void)state;
    Config c = mla_tiny();
    Model m;
    test_model(&m, &c);
    m.mla_path = MLA_DECOMPRESS;
    int out[N_GEN];
    const size_t plen = 20, L = c.n_layers;

    /* 4 tiles, 2 layers, context < 64: one tile per layer, held from step to
     * step: the prefill misses, every decode lookup hits */
    Log a, b;
    log_init(&a, &c, 1);
    log_init(&b, &c, 1);
    kv_free(run(&m, "contiguous", 1, plen, out, &a));
    kv_free(run(&m, "contiguous", 1, plen, out, &b));
    assert_memory_equal(&a.last.tiles, &b.last.tiles, sizeof a.last.tiles);
    assert_int_equal(a.last.tiles.lookups, N_GEN * L);
    assert_int_equal(a.last.tiles.misses, L);
    assert_int_equal(a.last.tiles.hits, (N_GEN - 1) * L);
    assert_int_equal(a.last.tiles.rows_decompressed, L * (plen + N_GEN - 1)); /* each row once */
    assert_true(fabs(mla_tile_hit_rate(&a.last.tiles) - (double)(N_GEN - 1) / N_GEN) < 1e-12);
    /* the prefetch of the next layer's block is skipped: its tile is held */
    assert_int_equal(a.last.prefetch.queued, (N_GEN - 1) * (L - 1));
    assert_int_equal(a.last.prefetch.skipped, a.last.prefetch.queued);

    /* one tile for two layers: they push each other out, nothing hits */
    Log one;
    log_init(&one, &c, 1);
    m.mla_tiles = 1;
    kv_free(run(&m, "contiguous", 1, plen, out, &one));
    assert_int_equal(one.last.tiles.hits, 0);
    assert_int_equal(one.last.tiles.misses, N_GEN * L);
    assert_int_equal(one.last.tiles.evictions, N_GEN * L - 1);
    assert_true(worst_rel(&one, &a) <= CACHE_REL_TOL);
    free(a.logits);
    free(b.logits);
    free(one.logits);
    model_free(&m);
}

/* Absorbed prefetch over pages: every issued block is read, in time. */
static void test_prefetch(void **state)
{
    (void)state;
    Config c = mla_tiny();
    Model m;
    test_model(&m, &c);
    Log l;
    int out[N_GEN];
    log_init(&l, &c, 1);
    kv_free(run(&m, "paged:page=8", 1, 20, out, &l));
    const MlaPrefetchStats *p = &l.last.prefetch;
    assert_true(p->issued > 0);
    assert_int_equal(p->queued, p->issued + p->skipped);
    assert_int_equal(p->skipped, 0);
    assert_int_equal(p->used, p->issued);
    assert_int_equal(p->in_flight, 0);
    assert_true(p->lines >= p->issued);
    free(l.logits);
    model_free(&m);
}

/* A sequence restarted in the same forward state does not reuse the tiles
 * of the old one: the result equals a fresh state's. */
static void test_restart_forgets_tiles(void **state)
{
    (void)state;
    Config c = mla_tiny();
    Model m;
    test_model(&m, &c);
    m.mla_path = MLA_DECOMPRESS;
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(&m, 1);
    KvCache *cache = kv_open("contiguous", &geo, &e);
    ForwardState fs, fresh;
    assert_int_equal(forward_state_init(&fs, &c, 16, 0, &e), 0);
    assert_int_equal(forward_state_init(&fresh, &c, 16, 0, &e), 0);
    int a[10], b[10];
    test_tokens(a, 10, c.vocab, 1);
    test_tokens(b, 10, c.vocab, 2);
    float *la = malloc(c.vocab * sizeof(float)), *lb = malloc(c.vocab * sizeof(float));
    Counters ctr = { 0 };
    assert_int_equal(model_forward(&m, &fs, cache, a, 1, 10, 0, la, &ctr, &e), 0);
    kv_reset(cache);
    assert_int_equal(model_forward(&m, &fs, cache, b, 1, 10, 0, la, &ctr, &e), 0);
    kv_reset(cache);
    assert_int_equal(model_forward(&m, &fresh, cache, b, 1, 10, 0, lb, &ctr, &e), 0);
    assert_memory_equal(la, lb, c.vocab * sizeof(float));
    forward_state_free(&fs);
    forward_state_free(&fresh);
    kv_free(cache);
    free(la);
    free(lb);
    model_free(&m);
}

/* With keep_probs, MLA fills the attention weights: each row sums to 1. */
static void test_probs(void **state)
{
    (void)state;
    Config c = mla_tiny();
    Model m;
    test_model(&m, &c);
    for (int path = 0; path < 2; path++) {
        m.mla_path = (MlaPath)path;
        Err e = { 0 };
        ForwardState fs;
        assert_int_equal(forward_state_init(&fs, &c, 6, 1, &e), 0);
        int tok[6];
        test_tokens(tok, 6, c.vocab, 4);
        float *logits = malloc(c.vocab * sizeof(float));
        Counters ctr = { 0 };
        assert_int_equal(model_forward(&m, &fs, NULL, tok, 1, 6, 0, logits, &ctr, &e), 0);
        for (size_t l = 0; l < c.n_layers; l++)
            for (size_t h = 0; h < c.n_heads; h++)
                for (size_t t = 0; t < 6; t++) {
                    const float *p = fs.probs + ((l * c.n_heads + h) * fs.max_q + t) * c.max_seq_len;
                    double sum = 0;
                    for (size_t j = 0; j <= t; j++)
                        sum += p[j];
                    assert_true(fabs(sum - 1.0) < 1e-5);
                }
        forward_state_free(&fs);
        free(logits);
    }
    model_free(&m);
}

/* What MLA refuses, in one line each. */
static void test_refusals(void **state)
{
    (void)state;
    Config c = mla_tiny();
    Err e = { 0 };
    Config bad = c;
    bad.head_dim = 32;
    assert_int_equal(mla_check_config(&bad, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "head_dim"));
    bad = c;
    bad.n_kv_heads = 2;
    assert_int_equal(mla_check_config(&bad, &e), -1);
    assert_non_null(strstr(e.msg, "n_kv_heads"));
    bad = c;
    snprintf(bad.weights, sizeof bad.weights, "worked-example.txt");
    Model m;
    const Kernels *k = kernels_select("ref", &e);
    assert_int_equal(model_init(&m, &bad, k, &e), -1);
    assert_non_null(strstr(e.msg, "synthetic"));

    /* the pitfalls are GQA's */
    test_model(&m, &c);
    m.bugs = BUG_ROPE_POSITION;
    int prompt[4] = { 1, 2, 3, 4 }, out[2];
    GenOptions go = { .n_generate = 2 };
    assert_int_equal(generate(&m, NULL, prompt, 1, 4, &go, out, NULL, NULL, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    model_free(&m);

    assert_int_equal(mla_path_parse("absorbed", &(MlaPath){ 0 }), 0);
    assert_int_equal(mla_path_parse("decompressed", &(MlaPath){ 0 }), -1);
}

/* A GQA model holds no MLA tensors and keeps its K/V geometry; an MLA
 * model's tensors come on top of the same layout. */
static void test_gqa_models_unchanged(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    assert_null(m.mla);
    assert_int_equal(m.arena_floats, model_param_floats(&c));
    KvGeometry g = model_kv_geometry(&m, 1);
    assert_false(g.k_only);
    assert_int_equal(g.n_kv_heads, 2);
    model_free(&m);

    Config t = mla_tiny();
    Config gqa = t;
    gqa.attention = ATTN_GQA;
    assert_true(model_param_floats(&t) > model_param_floats(&gqa));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cached_equals_uncached),
        cmocka_unit_test(test_window_and_chunks),
        cmocka_unit_test(test_latent_bytes_per_token),
        cmocka_unit_test(test_flops_closed_forms),
        cmocka_unit_test(test_tile_lru),
        cmocka_unit_test(test_prefetch),
        cmocka_unit_test(test_restart_forgets_tiles),
        cmocka_unit_test(test_probs),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_gqa_models_unchanged),
    };
    return cmocka_run_group_tests_name("mla", tests, NULL, NULL);
}
