/* test_sink.c: learnt attention sinks (attn_sink = learned): the config key,
 * every attention form against a softmax with the sink's term computed here
 * in double, and the model with a sink through every cache kind: exact
 * caches agree with the uncached run, a very negative sink gives the
 * no-sink model's logits, and a sink of weight moves every cache's logits. */
#include "testutil.h"

#include <unistd.h>

#include "kernels/attend_split.h"
#include "model/checkpoint.h"
#include "kv/cache.h"
#include "model/generate.h"
#include "util/pool.h"

#define SINK_TOL 2e-5       /* attention forms against the double reference, relative */
#define LOGIT_REL_TOL 1e-5  /* cached against uncached, as test_generate */
#define N_GENERATE 4

/* --- the config key ---------------------------------------------------- */

static void test_config_key(void **state)
{
    (void)state;
    Config c = test_config(1, 2, 1);
    Err e = { 0 };
    assert_int_equal(c.attn_sink, SINK_NONE);
    assert_int_equal(config_set(&c, "attn_sink", "learned", &e), 0);
    assert_int_equal(c.attn_sink, SINK_LEARNED);
    assert_int_equal(config_validate(&c, &e), 0);
    assert_int_equal(config_set(&c, "attn_sink", "none", &e), 0);
    assert_int_equal(c.attn_sink, SINK_NONE);
    assert_int_equal(config_set(&c, "attn_sink", "yes", &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    Config mla;
    assert_int_equal(config_load(&mla, "mla-tiny", &e), 0);
    mla.attn_sink = SINK_LEARNED;
    assert_int_equal(config_validate(&mla, &e), -1);
    assert_non_null(strstr(e.msg, "MLA"));
}

/* A model with sinks has n_layers * n_heads parameters more, the others
 * keep their bits (the sinks draw nothing), and the sinks start at 0. */
static void test_weights_layout(void **state)
{
    (void)state;
    Config plain = test_config(2, 4, 2), sink = plain;
    sink.attn_sink = SINK_LEARNED;
    assert_int_equal(model_param_floats(&sink), model_param_floats(&plain) + 2 * 4);
    Model a, b;
    test_model(&a, &plain);
    test_model(&b, &sink);
    assert_null(a.layers[0].attn_sink);
    assert_memory_equal(a.arena, b.arena, a.arena_floats * sizeof(float));
    for (size_t l = 0; l < 2; l++)
        for (size_t h = 0; h < 4; h++)
            assert_true(b.layers[l].attn_sink[h] == 0.0f);
    model_free(&a);
    model_free(&b);
}

/* A weights file keeps the sinks (layerL.attn_sink), and `--weights FILE`
 * finds them from that tensor alone (the header records the shape only). */
static void test_weights_file(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.attn_sink = SINK_LEARNED;
    Model m, back;
    test_model(&m, &c);
    for (size_t l = 0; l < 2; l++)
        for (size_t h = 0; h < 4; h++)
            m.layers[l].attn_sink[h] = 0.25f * (float)(l * 4 + h) - 1.0f;
    char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/kvscope-sink-XXXXXX.kvw", dir && *dir ? dir : P_tmpdir);
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    close(fd);
    KvwTensor t[4 + 10 * 2];
    const size_t n = model_tensors(&m, t, sizeof t / sizeof t[0], KVW_F16);
    assert_int_equal(n, 3 + 10 * 2);
    KvwShape shape = model_kvw_shape(&c);
    Err e = { 0 };
    assert_int_equal(kvw_write(path, &shape, t, n, &e), 0);
    Config got;
    assert_int_equal(config_from_kvw(&got, path, &e), 0);
    assert_int_equal(got.attn_sink, SINK_LEARNED);
    test_model(&back, &got);
    assert_memory_equal(back.layers[1].attn_sink, m.layers[1].attn_sink, 4 * sizeof(float)); /* f32 on disk */
    model_free(&back);
    c.attn_sink = SINK_NONE; /* a file without them: a model without them */
    model_free(&m);
    test_model(&m, &c);
    assert_int_equal(model_tensors(&m, t, sizeof t / sizeof t[0], KVW_F16), 3 + 9 * 2);
    assert_int_equal(kvw_write(path, &shape, t, 3 + 9 * 2, &e), 0);
    assert_int_equal(config_from_kvw(&got, path, &e), 0);
    assert_int_equal(got.attn_sink, SINK_NONE);
    unlink(path);
    model_free(&m);
}

/* --- attention forms ---------------------------------------------------- */

static void fill(float *x, size_t n, unsigned salt)
{
    uint32_t s = 2463534242u ^ (salt * 2654435761u);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        x[i] = -1.5f + 3.0f * (float)(s >> 8) / (float)(1u << 24);
    }
}

/* Query t (position pos0 + t), head g over f32 rows k, v [rows][hd], causal:
 * out = sum_j p_j v_j with p_j = e^(s_j - m) / (e^(z - m) + sum_k e^(s_k - m)). */
static void reference(const float *q, const float *k, const float *v, size_t hd, size_t rows, size_t pos0, size_t t,
                      float z, float *out, double *mass)
{
    const size_t seen = pos0 + t + 1 < rows ? pos0 + t + 1 : rows;
    double *s = malloc(seen * sizeof *s), m = z, den;
    for (size_t j = 0; j < seen; j++) {
        s[j] = 0;
        for (size_t i = 0; i < hd; i++)
            s[j] += (double)q[i] * k[j * hd + i];
        s[j] /= sqrt((double)hd);
        m = s[j] > m ? s[j] : m;
    }
    den = exp(z - m);
    for (size_t j = 0; j < seen; j++)
        den += exp(s[j] - m);
    *mass = 0;
    for (size_t i = 0; i < hd; i++) {
        double o = 0;
        for (size_t j = 0; j < seen; j++)
            o += exp(s[j] - m) / den * v[j * hd + i];
        out[i] = (float)o;
    }
    for (size_t j = 0; j < seen; j++)
        *mass += exp(s[j] - m) / den;
    free(s);
}

typedef struct {
    size_t hd, G, rows, n_q, pos0;
    float *k, *v, *q, *out, *probs;
    KvBlock blocks[3];
} Att;

static void att_make(Att *t, size_t hd, size_t G, size_t rows, size_t n_q)
{
    *t = (Att){ .hd = hd, .G = G, .rows = rows, .n_q = n_q, .pos0 = rows - n_q };
    t->k = malloc(rows * hd * sizeof(float));
    t->v = malloc(rows * hd * sizeof(float));
    t->q = malloc(n_q * G * hd * sizeof(float));
    t->out = malloc(n_q * G * hd * sizeof(float));
    t->probs = malloc(n_q * G * rows * sizeof(float));
    fill(t->k, rows * hd, 1);
    fill(t->v, rows * hd, 2);
    fill(t->q, n_q * G * hd, 3);
    for (size_t i = 0; i < n_q * G * hd; i++)
        t->q[i] *= 3.0f; /* peaked enough that the sink and the rows compete */
    size_t start = 0;
    for (size_t b = 0; b < 3; b++) { /* three runs: a paged cache's walk */
        const size_t n = rows / 3 + (b < rows % 3);
        t->blocks[b] = (KvBlock){ .pos = start, .n = n, .k = t->k + start * hd, .v = t->v + start * hd,
                                  .k_stride = hd * sizeof(float), .v_stride = hd * sizeof(float),
                                  .k_fmt = FMT_F32, .v_fmt = FMT_F32 };
        start += n;
    }
}

static void att_free(Att *t)
{
    free(t->k), free(t->v), free(t->q), free(t->out), free(t->probs);
}

/* algo -1: split-K on the pool */
static void att_run(const Kernels *k, int algo, Att *t, const float *sink)
{
    float *scores = malloc(t->G * (t->rows + ATTEND_TILE) * sizeof(float));
    float *view = malloc(2 * t->rows * t->hd * sizeof(float));
    KvBlock view_blocks[3];
    AttnArgs a = {
        .q = t->q, .q_stride = t->G * t->hd, .out = t->out, .out_stride = t->G * t->hd, .n_q = t->n_q,
        .group = t->G, .head_dim = t->hd, .pos0 = t->pos0, .blocks = t->blocks, .n_blocks = 3, .scores = scores,
        .view = view, .view_blocks = view_blocks, .sink = sink,
        .probs = algo == ATTEND_NAIVE ? t->probs : NULL, .probs_q_stride = t->G * t->rows, .probs_g_stride = t->rows,
    };
    if (algo < 0)
        attend_split(k, &a, 2, NULL);
    else
        attend(k, (AttendAlgo)algo, &a, NULL);
    free(scores);
    free(view);
}

/* Every form, on every ISA, one tile and several, against the reference;
 * the naive form's weights sum to 1 - p_sink. */
static void test_forms(void **state)
{
    (void)state;
    Err e = { 0 };
    assert_int_equal(pool_set_threads(2, &e), 0);
    const Kernels *isa[4];
    const size_t n_isa = kernels_available(isa, 4);
    static const size_t rowss[] = { 5, 300, ATTEND_TILE + 200 }; /* the last: two tiles, and two split parts */
    const float sink[4] = { 0.7f, -1.3f, 8.0f, -30.0f };
    size_t checked = 0;
    for (size_t ri = 0; ri < 3; ri++) {
        Att t;
        att_make(&t, 32, 4, rowss[ri], 3);
        float *want = malloc(t.n_q * t.G * t.hd * sizeof(float));
        double mass[3][4];
        for (size_t q = 0; q < t.n_q; q++)
            for (size_t g = 0; g < t.G; g++)
                reference(t.q + (q * t.G + g) * t.hd, t.k, t.v, t.hd, t.rows, t.pos0, q, sink[g],
                          want + (q * t.G + g) * t.hd, &mass[q][g]);
        for (size_t i = 0; i < n_isa; i++)
            for (int algo = -1; algo <= ATTEND_FLASH; algo++) {
                att_run(isa[i], algo, &t, sink);
                const double d = max_rel_diff(t.out, want, t.n_q * t.G * t.hd, SINK_TOL, "out");
                if (d > SINK_TOL)
                    fail_msg("isa %s form %s rows %zu: %.3g from the reference", isa[i]->isa,
                             algo < 0 ? "split" : attend_algo_name((AttendAlgo)algo), t.rows, d);
                checked++;
                if (algo != ATTEND_NAIVE)
                    continue;
                for (size_t q = 0; q < t.n_q; q++)
                    for (size_t g = 0; g < t.G; g++) {
                        double sum = 0;
                        for (size_t j = 0; j < t.pos0 + q + 1; j++)
                            sum += t.probs[q * t.G * t.rows + g * t.rows + j];
                        assert_true(fabs(sum - mass[q][g]) < 1e-5);
                        if (g == 2)
                            assert_true(sum < 0.99); /* the sink took mass */
                    }
            }
        free(want);
        att_free(&t);
    }
    printf("  %zu (ISA, form, rows) runs within %.0e of the double softmax with its sink term\n", checked, SINK_TOL);
}

/* --- the model through every cache --------------------------------------- */

static Config sink_config(void)
{
    Config c = test_config(2, 4, 2);
    c.attn_sink = SINK_LEARNED;
    c.max_seq_len = 640;
    return c;
}

static void set_sinks(Model *m, float base)
{
    for (size_t l = 0; l < m->cfg.n_layers; l++)
        for (size_t h = 0; h < m->cfg.n_heads; h++)
            m->layers[l].attn_sink[h] = base + 0.5f * (float)((l * 3 + h) % 5) - 1.0f;
}

/* Generate from a prompt of plen with spec (NULL: uncached); the logits of
 * each token chosen into logits [N_GENERATE][vocab], the tokens into out. */
static void gen(const Model *m, const char *spec, size_t plen, int *out, float *logits)
{
    int *prompt = malloc(plen * sizeof(int));
    test_tokens(prompt, plen, m->cfg.vocab, 3);
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *cache = spec ? kv_open(spec, &geo, &e) : NULL;
    if (spec && !cache)
        fail_msg("%s: %s", spec, e.msg);
    TestLog log = { logits, m->cfg.vocab, 0 };
    GenOptions go = { .n_generate = N_GENERATE };
    if (generate(m, cache, prompt, 1, plen, &go, out, log_logits, &log, &e) < 0)
        fail_msg("generate %s: %s", spec ? spec : "uncached", e.msg);
    kv_free(cache);
    free(prompt);
}

static double logit_diff(const float *a, const float *b, size_t n)
{
    double scale = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(b[i]));
        d = fmax(d, fabs((double)a[i] - b[i]));
    }
    return d / scale;
}

/* Exact caches give the uncached run's tokens and logits with a sink, in
 * every form, one thread and two (flash decode splits its 520+ rows). */
static void test_cached_equals_uncached(void **state)
{
    (void)state;
    static const char *const exact[] = { "contiguous", "dynamic", "paged:page=16", "ring:window=640",
                                         "shift:keep=4" };
    const size_t n_exact[] = { 5, 2 }; /* two threads: contiguous and dynamic (flash decode splits there) */
    static const AttendAlgo algos[] = { ATTEND_NAIVE, ATTEND_MATERIALIZE, ATTEND_FLASH };
    Config c = sink_config();
    Model m;
    test_model(&m, &c);
    set_sinks(&m, 0.0f);
    const size_t V = c.vocab, plen = 520;
    int tu[N_GENERATE], tc[N_GENERATE];
    float *lu = malloc(N_GENERATE * V * sizeof(float)), *lc = malloc(N_GENERATE * V * sizeof(float));
    Err e = { 0 };
    for (size_t threads = 1; threads <= 2; threads++) {
        assert_int_equal(pool_set_threads(threads, &e), 0);
        for (size_t a = threads == 1 ? 0 : 2; a < 3; a++) { /* two threads: flash decode splits */
            m.attend = algos[a];
            gen(&m, NULL, plen, tu, lu);
            for (size_t s = 0; s < n_exact[threads - 1]; s++) {
                gen(&m, exact[s], plen, tc, lc);
                const double d = logit_diff(lc, lu, N_GENERATE * V);
                if (memcmp(tc, tu, sizeof tu) != 0 || d > LOGIT_REL_TOL)
                    fail_msg("%s, %s, %zu threads: tokens %s, logits %.3g apart", exact[s],
                             attend_algo_name(algos[a]), threads, memcmp(tc, tu, sizeof tu) ? "differ" : "same", d);
            }
        }
    }
    free(lu), free(lc);
    model_free(&m);
}

/* Every cache kind and form: a sink of -1e4 gives the logits of the same
 * weights without sinks (its term is exp(-1e4 - m) = 0), and sinks of some
 * weight move them: no path leaves the sink out. */
static void test_every_cache_takes_the_sink(void **state)
{
    (void)state;
    static const char *const specs[] = {
        "contiguous", "dynamic", "paged:page=16", "contiguous+quant:k=q8_0,v=q4_0", "mixed:hot=32,group=16,cold=q4_0",
        "ring:window=64,sinks=4", "shift:keep=4", "h2o:budget=48,recent=16", "snapkv:budget=48,window=8",
        "contiguous+quant:k=int4,v=fp4", "kivi:bits=4,group=32", "paged:page=16+sparse:threshold=64,keep=0.5", NULL,
    };
    static const int splits[] = { 1, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0 }; /* reaching 512+ rows in decode */
    static const AttendAlgo algos[] = { ATTEND_NAIVE, ATTEND_MATERIALIZE, ATTEND_FLASH };
    Config cs = sink_config(), cn = cs;
    cn.attn_sink = SINK_NONE;
    Model ms, mn;
    test_model(&ms, &cs);
    test_model(&mn, &cn);
    const size_t V = cs.vocab;
    int ts[N_GENERATE], tn[N_GENERATE];
    float *ls = malloc(N_GENERATE * V * sizeof(float)), *ln = malloc(N_GENERATE * V * sizeof(float));
    Err e = { 0 };
    size_t runs = 0;
    for (size_t threads = 1; threads <= 2; threads++) {
        assert_int_equal(pool_set_threads(threads, &e), 0);
        const size_t plen = threads == 1 ? 100 : 520; /* two threads: flash decode splits 512+ rows */
        for (size_t a = threads == 1 ? 0 : 2; a < 3; a++)
            for (int dot = 0; dot <= 1; dot++)
                for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
                    if (threads == 2 && !splits[s]) /* split-K needs a long reach: the evicting kinds do not */
                        continue;
                    ms.attend = mn.attend = algos[a];
                    ms.int_dot = mn.int_dot = dot ? INT_DOT_EVEN : INT_DOT_OFF;
                    set_sinks(&ms, -1e4f);
                    gen(&ms, specs[s], plen, ts, ls);
                    gen(&mn, specs[s], plen, tn, ln);
                    const char *name = specs[s] ? specs[s] : "uncached";
                    const double same = logit_diff(ls, ln, N_GENERATE * V);
                    if (memcmp(ts, tn, sizeof ts) != 0 || same > LOGIT_REL_TOL)
                        fail_msg("%s, %s: a sink of -1e4 is %.3g from no sink", name, attend_algo_name(algos[a]),
                                 same);
                    set_sinks(&ms, 1.0f);
                    gen(&ms, specs[s], plen, ts, ls);
                    const double moved = logit_diff(ls, ln, N_GENERATE * V);
                    if (moved < 1e-3)
                        fail_msg("%s, %s: sinks of about 1 moved the logits by %.3g only", name,
                                 attend_algo_name(algos[a]), moved);
                    runs++;
                }
    }
    printf("  %zu (cache, form, int-dot, threads) runs: a sink of -1e4 is no sink, sinks near 1 move the logits\n",
           runs);
    free(ls), free(ln);
    model_free(&ms);
    model_free(&mn);
}

int main(void)
{
    use_repo_data();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_key),
        cmocka_unit_test(test_weights_layout),
        cmocka_unit_test(test_weights_file),
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_cached_equals_uncached),
        cmocka_unit_test(test_every_cache_takes_the_sink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
