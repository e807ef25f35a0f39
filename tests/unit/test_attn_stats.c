/* test_attn_stats.c: where attention goes (sim/attn_stats.h): the top-k sum
 * against a full sort, ties included; the statistics of a small model
 * against the same reduction done here by sorting each row of the weights
 * of passes run here, with and without a fixed first token; the input it
 * refuses. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "sim/attn_stats.h"
#include "stats/top_sum.h"

static int descending(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static double sorted_top(const float *w, size_t n, size_t k)
{
    float *s = malloc(n * sizeof *s);
    memcpy(s, w, n * sizeof *s);
    qsort(s, n, sizeof *s, descending);
    double sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += s[i];
    free(s);
    return sum;
}

static void test_top_sum(void **state)
{
    (void)state;
    float w[300], scratch[300];
    unsigned x = 12345;
    for (int round = 0; round < 200; round++) {
        const size_t n = 1 + (size_t)round % 300;
        const unsigned levels = round % 3 == 0 ? 4 : 1u << 20; /* few levels: many ties */
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            w[i] = (float)((x >> 8) % levels) / (float)levels;
        }
        for (size_t k = 1; k <= n; k += 1 + n / 7) {
            const double got = top_sum(w, n, k, scratch), want = sorted_top(w, n, k);
            if (fabs(got - want) > 1e-9 * (1 + want))
                fail_msg("n %zu, k %zu, %u levels: %.12g, sorting gives %.12g", n, k, levels, got, want);
        }
    }
}

/* The same statistics from passes run here, each row sorted. */
static void expected(Model *m, const int *ids, size_t n, const AttnStatsOpts *o, double *first, double *top)
{
    const Config *c = &m->cfg;
    const size_t H = c->n_heads, skip = c->add_bos ? 1 : 0;
    Err e = { 0 };
    ForwardState fs;
    assert_int_equal(forward_state_init(&fs, c, o->len, 1, &e), 0);
    int win[64];
    memset(first, 0, c->n_layers * H * sizeof *first);
    memset(top, 0, c->n_layers * H * sizeof *top);
    m->attend = ATTEND_NAIVE;
    for (size_t w = 0; w < o->windows; w++) {
        const size_t span = n - skip - (o->len - skip), at = skip + w * span / (o->windows - 1);
        win[0] = c->bos_token;
        memcpy(win + skip, ids + at, (o->len - skip) * sizeof *win);
        Counters ctr = { 0 };
        assert_int_equal(model_forward(m, &fs, NULL, win, 1, o->len, 0, NULL, &ctr, &e), 0);
        for (size_t l = 0; l < c->n_layers; l++)
            for (size_t h = 0; h < H; h++)
                for (size_t t = o->from; t < o->len; t++) {
                    const float *row = fs.probs + ((l * H + h) * fs.max_q + t) * c->max_seq_len;
                    const size_t k = (size_t)ceil(0.05 * (double)(t + 1));
                    first[l * H + h] += row[0];
                    top[l * H + h] += sorted_top(row, t + 1, k ? k : 1);
                }
    }
    const double q = (double)(o->windows * (o->len - o->from));
    for (size_t i = 0; i < c->n_layers * H; i++)
        first[i] /= q, top[i] /= q;
    forward_state_free(&fs);
}

static void check_model(int add_bos)
{
    Config c = test_config(2, 4, 2);
    c.vocab = 65;
    c.add_bos = add_bos, c.bos_token = 64; /* one past the ids the text uses */
    Model m;
    test_model(&m, &c);
    int ids[200];
    test_tokens(ids, 200, 64, 3);
    if (add_bos)
        ids[0] = 64; /* as the tokenizer puts it */
    const AttnStatsOpts o = { .windows = 3, .len = 40, .from = 2 };
    AttnStats s;
    Err e = { 0 };
    assert_int_equal(attn_stats_measure(&m, ids, 200, &o, &s, &e), 0);
    assert_int_equal(s.queries, 3 * 38);
    double first[8], top[8];
    expected(&m, ids, 200, &o, first, top);
    size_t sinks = 0;
    for (size_t i = 0; i < 8; i++) {
        if (fabs(s.first[i] - first[i]) > 1e-9 || fabs(s.top[i] - top[i]) > 1e-9)
            fail_msg("add_bos %d, head %zu: first %.9g top %.9g; expected %.9g and %.9g", add_bos, i, s.first[i],
                     s.top[i], first[i], top[i]);
        assert_true(s.top[i] >= 0.05 && s.top[i] <= 1.0 + 1e-6); /* the heaviest 5% hold at least 5% */
        sinks += first[i] > ATTN_SINK_THRESHOLD;
    }
    assert_int_equal(s.sink_heads, sinks);
    attn_stats_free(&s);
    model_free(&m);
}

static void test_against_sorted_rows(void **state)
{
    (void)state;
    check_model(0);
    check_model(1);
}

/* A learnt sink's weight, from one query (the last of one window) in layer
 * 0, whose scores no sink changes: with logit z it takes p = e^z / (e^z + S),
 * S the keys' sum of exponentials, and the keys keep (1 - p) of the no-sink
 * model's weights; S found from z = 0.5 predicts p at z = -1.5. */
static void test_learned_sink(void **state)
{
    (void)state;
    Config c = test_config(1, 2, 1), cs = c;
    cs.attn_sink = SINK_LEARNED;
    Model plain, sink;
    test_model(&plain, &c);
    test_model(&sink, &cs);
    int ids[100];
    test_tokens(ids, 100, c.vocab, 7);
    const AttnStatsOpts o = { .windows = 1, .len = 30, .from = 29 };
    AttnStats s0, s1, s2;
    Err e = { 0 };
    assert_int_equal(attn_stats_measure(&plain, ids, 100, &o, &s0, &e), 0);
    assert_null(s0.learned);
    sink.layers[0].attn_sink[0] = sink.layers[0].attn_sink[1] = 0.5f;
    assert_int_equal(attn_stats_measure(&sink, ids, 100, &o, &s1, &e), 0);
    sink.layers[0].attn_sink[0] = sink.layers[0].attn_sink[1] = -1.5f;
    assert_int_equal(attn_stats_measure(&sink, ids, 100, &o, &s2, &e), 0);
    for (size_t h = 0; h < 2; h++) {
        const double p1 = s1.learned[h], S = exp(0.5) * (1 - p1) / p1, p2 = exp(-1.5) / (exp(-1.5) + S);
        if (fabs(s1.first[h] - (1 - p1) * s0.first[h]) > 1e-6 || fabs(s2.learned[h] - p2) > 1e-6)
            fail_msg("head %zu: sink %.9g, position 0 %.9g (no sink %.9g); at z = -1.5 %.9g, predicted %.9g", h, p1,
                     s1.first[h], s0.first[h], s2.learned[h], p2);
        assert_true(p1 > 0.01 && p1 < 0.99);
    }
    attn_stats_free(&s0), attn_stats_free(&s1), attn_stats_free(&s2);
    model_free(&plain), model_free(&sink);
}

static void test_refuses(void **state)
{
    (void)state;
    Config c = test_config(1, 2, 1);
    Model m;
    test_model(&m, &c);
    int ids[100];
    test_tokens(ids, 100, c.vocab, 1);
    AttnStats s;
    Err e = { 0 };
    const AttnStatsOpts too_long = { .windows = 2, .len = 300, .from = 1 }, no_query = { .windows = 2, .len = 8 },
                        short_text = { .windows = 2, .len = 200, .from = 1 };
    assert_int_equal(attn_stats_measure(&m, ids, 100, &too_long, &s, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_int_equal(attn_stats_measure(&m, ids, 100, &no_query, &s, &e), -1);
    assert_int_equal(attn_stats_measure(&m, ids, 100, &short_text, &s, &e), -1);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_sum),
        cmocka_unit_test(test_against_sorted_rows),
        cmocka_unit_test(test_learned_sink),
        cmocka_unit_test(test_refuses),
    };
    return cmocka_run_group_tests_name("attn_stats", tests, NULL, NULL);
}
