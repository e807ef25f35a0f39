/* test_backprop.c: the trainer's forward and backward. The forward's logits
 * are the engine's uncached forward's; every weight's gradient is checked
 * against central differences of a double-precision reference of the loss. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "model/forward.h"
#include "train/backprop.h"
#include "train/trainer.h"
#include "util/pool.h"

#define T_LEN 8

static Config tiny_config(void)
{
    Config c = test_config(2, 2, 1);
    c.d_model = 8, c.head_dim = 4, c.ffn_dim = 12, c.vocab = 16, c.max_seq_len = 16;
    return c;
}

/* The loss in double, straight from the definition, with weight `at` of
 * the arena moved by delta. */
static double ref_loss(const Model *m, const int *tok, size_t T, size_t at, double delta)
{
    const Config *c = &m->cfg;
    const size_t d = c->d_model, H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim, f = c->ffn_dim, V = c->vocab;
    const size_t qd = H * hd, kvd = KV * hd;
    double *w = malloc(m->arena_floats * sizeof *w);
    for (size_t i = 0; i < m->arena_floats; i++)
        w[i] = m->arena[i];
    w[at] += delta;
#define W(ptr) (w + ((ptr) - m->arena))
    double x[T_LEN][64], xn[T_LEN][64], q[T_LEN][64], k[T_LEN][64], v[T_LEN][64], o[T_LEN][64], g[T_LEN][64],
        u[T_LEN][64];
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < d; i++)
            x[t][i] = W(m->embed)[(size_t)tok[t] * d + i];
    for (size_t l = 0; l < c->n_layers; l++) {
        const LayerWeights *lw = model_layer(m, l);
        for (int part = 0; part < 2; part++) {
            const double *gain = part ? W(lw->ffn_norm) : W(lw->attn_norm);
            for (size_t t = 0; t < T; t++) {
                double ss = 0;
                for (size_t i = 0; i < d; i++)
                    ss += x[t][i] * x[t][i];
                double r = 1 / sqrt(ss / (double)d + c->norm_eps);
                for (size_t i = 0; i < d; i++)
                    xn[t][i] = x[t][i] * r * gain[i];
            }
            if (part == 0) {
                for (size_t t = 0; t < T; t++) {
                    for (size_t j = 0; j < qd; j++) {
                        q[t][j] = 0;
                        for (size_t i = 0; i < d; i++)
                            q[t][j] += W(lw->wq)[j * d + i] * xn[t][i];
                    }
                    for (size_t j = 0; j < kvd; j++) {
                        k[t][j] = v[t][j] = 0;
                        for (size_t i = 0; i < d; i++) {
                            k[t][j] += W(lw->wk)[j * d + i] * xn[t][i];
                            v[t][j] += W(lw->wv)[j * d + i] * xn[t][i];
                        }
                    }
                    for (size_t j = 0; j < qd + kvd; j += 2) { /* RoPE on q's heads, then k's */
                        double *vec = j < qd ? q[t] + j : k[t] + j - qd;
                        size_t i = (j < qd ? j : j - qd) % hd;
                        double ang = (double)t * pow(c->rope_theta, -(double)i / (double)hd);
                        double a = vec[0], b = vec[1];
                        vec[0] = a * cos(ang) - b * sin(ang);
                        vec[1] = a * sin(ang) + b * cos(ang);
                    }
                }
                for (size_t t = 0; t < T; t++)
                    for (size_t h = 0; h < H; h++) {
                        size_t kh = h / (H / KV);
                        /* a learnt sink: one more term in the denominator, no value */
                        const double z = lw->attn_sink ? W(lw->attn_sink)[h] : -1e300;
                        double s[T_LEN], mx = z, sum = 0;
                        for (size_t j = 0; j <= t; j++) {
                            s[j] = 0;
                            for (size_t i = 0; i < hd; i++)
                                s[j] += q[t][h * hd + i] * k[j][kh * hd + i];
                            s[j] /= sqrt((double)hd);
                            mx = s[j] > mx ? s[j] : mx;
                        }
                        for (size_t j = 0; j <= t; j++)
                            sum += s[j] = exp(s[j] - mx);
                        sum += lw->attn_sink ? exp(z - mx) : 0.0;
                        for (size_t i = 0; i < hd; i++) {
                            o[t][h * hd + i] = 0;
                            for (size_t j = 0; j <= t; j++)
                                o[t][h * hd + i] += s[j] / sum * v[j][kh * hd + i];
                        }
                    }
                for (size_t t = 0; t < T; t++)
                    for (size_t i = 0; i < d; i++)
                        for (size_t j = 0; j < qd; j++)
                            x[t][i] += W(lw->wo)[i * qd + j] * o[t][j];
            } else {
                for (size_t t = 0; t < T; t++) {
                    for (size_t j = 0; j < f; j++) {
                        g[t][j] = u[t][j] = 0;
                        for (size_t i = 0; i < d; i++) {
                            g[t][j] += W(lw->w_gate)[j * d + i] * xn[t][i];
                            u[t][j] += W(lw->w_up)[j * d + i] * xn[t][i];
                        }
                        g[t][j] = g[t][j] / (1 + exp(-g[t][j])) * u[t][j];
                    }
                    for (size_t i = 0; i < d; i++)
                        for (size_t j = 0; j < f; j++)
                            x[t][i] += W(lw->w_down)[i * f + j] * g[t][j];
                }
            }
        }
    }
    double loss = 0;
    for (size_t t = 0; t < T; t++) {
        double ss = 0, lg[64], mx = -1e300, sum = 0;
        for (size_t i = 0; i < d; i++)
            ss += x[t][i] * x[t][i];
        double r = 1 / sqrt(ss / (double)d + c->norm_eps);
        for (size_t j = 0; j < V; j++) {
            lg[j] = 0;
            for (size_t i = 0; i < d; i++)
                lg[j] += W(m->unembed)[j * d + i] * x[t][i] * r * W(m->final_norm)[i];
            mx = lg[j] > mx ? lg[j] : mx;
        }
        for (size_t j = 0; j < V; j++)
            sum += exp(lg[j] - mx);
        loss += mx + log(sum) - lg[tok[t + 1]];
    }
#undef W
    free(w);
    return loss / (double)T;
}

/* With attn_sink = learned, sinks spread around 0 (where training starts)
 * far enough that each takes a real share. */
static void set_sinks(Model *m)
{
    for (size_t l = 0; m->cfg.attn_sink && l < m->cfg.n_layers; l++)
        for (size_t h = 0; h < m->cfg.n_heads; h++)
            m->layers[l].attn_sink[h] = 0.6f * (float)((l * m->cfg.n_heads + h) % 4) - 0.9f;
}

static void forward_is_the_engines(Config cfg)
{
    Model m;
    test_model(&m, &cfg);
    set_sinks(&m);
    BackpropState *s;
    Err e = { 0 };
    assert_int_equal(backprop_init(&s, &cfg, T_LEN, &e), 0);
    int tok[T_LEN + 1];
    test_tokens(tok, T_LEN + 1, cfg.vocab, 4);
    float logits[T_LEN * 16], last[16];
    double loss = backprop_forward(&m, s, tok, T_LEN, logits);
    assert_true(loss > 0 && isfinite(loss));
    assert_true(fabs(loss - ref_loss(&m, tok, T_LEN, 0, 0)) < 1e-5 * loss);
    ForwardState fs;
    assert_int_equal(forward_state_init(&fs, &cfg, T_LEN, 0, &e), 0);
    for (size_t t = 1; t <= T_LEN; t++) { /* every position: the engine's logits of the prefix's last token */
        Counters ctr = { 0 };
        assert_int_equal(model_forward(&m, &fs, NULL, tok, 1, t, 0, last, &ctr, &e), 0);
        assert_true(max_rel_diff(logits + (t - 1) * 16, last, 16, 1e-5, "logits") <= 1e-5);
    }
    forward_state_free(&fs);
    backprop_free(s);
    model_free(&m);
}

static void test_forward_is_the_engines(void **state)
{
    (void)state;
    Config cfg = tiny_config();
    forward_is_the_engines(cfg);
    cfg.attn_sink = SINK_LEARNED;
    forward_is_the_engines(cfg);
}

static void check_gradients(Config cfg)
{
    Model m, g;
    test_model(&m, &cfg);
    test_model(&g, &cfg);
    set_sinks(&m);
    memset(g.arena, 0, g.arena_floats * sizeof(float));
    BackpropState *s;
    Err e = { 0 };
    assert_int_equal(backprop_init(&s, &cfg, T_LEN, &e), 0);
    int tok[T_LEN + 1];
    test_tokens(tok, T_LEN + 1, cfg.vocab, 9);
    backprop_forward(&m, s, tok, T_LEN, NULL);
    backprop_backward(&m, s, &g, 1.0f);
    /* Every weight of the model (a few hundred): central differences of the
     * double loss, h = 1e-4. The analytic gradient is computed in float, so
     * the bound is relative 1e-4 of the larger of the two, or 1e-6 absolute
     * for gradients that are zero to float precision. */
    double worst = 0, largest = 0;
    size_t checked = 0;
    /* with sinks (already checked without them): every third weight, and every sink logit (the arena's last) */
    const size_t sinks = cfg.attn_sink ? cfg.n_layers * cfg.n_heads : 0, stride = sinks ? 3 : 1;
    for (size_t i = 0; i < m.arena_floats; i += (i + 1 < m.arena_floats - sinks ? stride : 1)) {
        const double h = 1e-4;
        double num = (ref_loss(&m, tok, T_LEN, i, h) - ref_loss(&m, tok, T_LEN, i, -h)) / (2 * h);
        double ana = g.arena[i], err = fabs(num - ana);
        double rel = err / fmax(fmax(fabs(num), fabs(ana)), 1e-3);
        if (err > 1e-6 && rel > 1e-4)
            fail_msg("weight %zu: analytic %.9g, numeric %.9g", i, ana, num);
        worst = fmax(worst, rel);
        largest = fmax(largest, fabs(num));
        checked++;
    }
    printf("  %s: %zu gradients checked, the largest %.3g; worst relative error %.3g\n",
           cfg.attn_sink ? "learnt sinks" : "no sinks", checked, largest, worst);
    assert_true(largest > 1e-2); /* gradients big enough for the check to mean something */
    for (size_t l = 0; cfg.attn_sink && l < cfg.n_layers; l++) /* the sinks' own, too */
        for (size_t h = 0; h < cfg.n_heads; h++)
            assert_true(fabs(g.layers[l].attn_sink[h]) > 1e-4);
    backprop_free(s);
    model_free(&m);
    model_free(&g);
}

static void test_gradients(void **state)
{
    (void)state;
    Config cfg = tiny_config();
    check_gradients(cfg);
    cfg.attn_sink = SINK_LEARNED; /* the arena's last n_layers * n_heads: the sink logits */
    check_gradients(cfg);
}

/* The FLOPs the trainer reports for one window: each weight matrix's
 * multiply-adds once forward and twice backward (d input and d weight; the
 * first layer's inputs too, as the backward computes them), and the
 * attention's q.k and p.v over the causal pairs, again three times. */
static void test_flop_count(void **state)
{
    (void)state;
    Config cfg = tiny_config();
    Model m, g;
    test_model(&m, &cfg);
    test_model(&g, &cfg);
    BackpropState *s;
    Err e = { 0 };
    assert_int_equal(backprop_init(&s, &cfg, T_LEN, &e), 0);
    int tok[T_LEN + 1];
    test_tokens(tok, T_LEN + 1, cfg.vocab, 3);
    backprop_forward(&m, s, tok, T_LEN, NULL);
    const uint64_t fwd = backprop_flops(s);
    backprop_backward(&m, s, &g, 1.0f);
    const uint64_t d = cfg.d_model, qd = cfg.n_heads * cfg.head_dim, kvd = cfg.n_kv_heads * cfg.head_dim;
    const uint64_t layer_mat = d * qd * 2 + d * kvd * 2 + 3 * d * cfg.ffn_dim;
    const uint64_t mat = cfg.n_layers * layer_mat + d * cfg.vocab, pairs = T_LEN * (T_LEN + 1) / 2;
    const uint64_t att = cfg.n_layers * cfg.n_heads * pairs * cfg.head_dim * 2 * 2;
    assert_int_equal(fwd, 2 * T_LEN * mat + att);
    assert_int_equal(backprop_flops(s), 3 * (2 * T_LEN * mat + att));
    backprop_free(s);
    model_free(&m);
    model_free(&g);
}

/* The loss and every gradient the same bytes on 1, 2 and 3 threads, with
 * every kernel table this CPU runs: a window long enough for two attention
 * blocks and pieces of rows on every step, sizes that are not multiples of
 * the kernels' tiles. */
enum { LONG = 45 };
static void threads_same_bytes(int sink)
{
    Config cfg = test_config(2, 4, 2);
    /* widths that put the norms, SwiGLU and the softmax on the pool too (backprop.c's PAR_MIN_FLOATS) */
    cfg.d_model = 380, cfg.head_dim = 6, cfg.ffn_dim = 373, cfg.vocab = 371, cfg.max_seq_len = LONG;
    cfg.attn_sink = sink ? SINK_LEARNED : SINK_NONE;
    Model m, g;
    test_model(&m, &cfg);
    test_model(&g, &cfg);
    set_sinks(&m);
    BackpropState *s;
    Err e = { 0 };
    assert_int_equal(backprop_init(&s, &cfg, LONG, &e), 0);
    int tok[LONG + 1];
    test_tokens(tok, LONG + 1, cfg.vocab, 5);
    float *first = malloc(g.arena_floats * sizeof(float));
    const Kernels *isa[4];
    const size_t n_isa = kernels_available(isa, 4);
    for (size_t k = 0; k < n_isa; k++) {
        m.kern = isa[k];
        double loss1 = 0;
        for (size_t n = 1; n <= 3; n++) {
            assert_int_equal(pool_set_threads(n, &e), 0);
            memset(g.arena, 0, g.arena_floats * sizeof(float));
            double loss = backprop_forward(&m, s, tok, LONG, NULL);
            backprop_backward(&m, s, &g, 1.0f);
            if (n == 1) {
                memcpy(first, g.arena, g.arena_floats * sizeof(float));
                loss1 = loss;
                continue;
            }
            assert_true(memcmp(&loss, &loss1, sizeof loss) == 0);
            for (size_t i = 0; i < g.arena_floats; i++)
                if (memcmp(&g.arena[i], &first[i], sizeof(float)) != 0)
                    fail_msg("%s, %zu threads: gradient %zu is %.9g, on one thread %.9g", isa[k]->isa, n, i,
                             g.arena[i], first[i]);
        }
    }
    assert_int_equal(pool_set_threads(1, &e), 0);
    free(first);
    backprop_free(s);
    model_free(&m);
    model_free(&g);
}

static void test_threads_same_bytes(void **state)
{
    (void)state;
    threads_same_bytes(0);
    threads_same_bytes(1);
}

/* With add_bos, every window the trainer reads starts with bos_token and
 * continues with the text: its validation loss is the mean of the forward's
 * losses over windows built here that way (and differs from the windows
 * without it). */
static void test_windows_start_with_bos(void **state)
{
    (void)state;
    Config cfg = tiny_config();
    cfg.vocab = 17, cfg.bos_token = 16, cfg.add_bos = 1; /* one past the text's ids */
    Model m;
    test_model(&m, &cfg);
    enum { N = 40, WINDOWS = 3 };
    int text[N];
    test_tokens(text, N, 16, 5);
    TrainOpts o = { .steps = 1, .batch = 1, .seq_len = T_LEN, .eval_windows = WINDOWS, .seed = 1 };
    Trainer *t;
    Err e = { 0 };
    assert_int_equal(trainer_init(&t, &m, &o, text, N, text, N, &e), 0);
    const double got = trainer_valid_loss(t);
    BackpropState *s;
    assert_int_equal(backprop_init(&s, &cfg, T_LEN, &e), 0);
    double want = 0, plain = 0;
    const size_t span = N - T_LEN - 1;
    for (size_t i = 0; i < WINDOWS; i++) {
        const size_t at = i * span / (WINDOWS - 1);
        int win[T_LEN + 1] = { 16 };
        memcpy(win + 1, text + at, T_LEN * sizeof(int));
        want += backprop_forward(&m, s, win, T_LEN, NULL) / WINDOWS;
        plain += backprop_forward(&m, s, text + at, T_LEN, NULL) / WINDOWS;
    }
    assert_true(fabs(got - want) < 1e-12);
    assert_true(fabs(got - plain) > 1e-6);
    backprop_free(s);
    trainer_free(t);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_is_the_engines),
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_flop_count),
        cmocka_unit_test(test_threads_same_bytes),
        cmocka_unit_test(test_windows_start_with_bos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
