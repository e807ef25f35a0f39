/* test_serve_eos.c: serve's requests end at the model's end-of-text token
 * (ServeOptions.stop_at_eos). The token is one a first run generated at a
 * later step of some request, so that request must end there: its output
 * the first run's up to and with it, zeros after; every other request's is
 * the first run's, cut after its own first end-of-text token, if any. */
#include "testutil.h"

#include <string.h>

#include "kv/cache.h"
#include "sim/serve.h"

static void serve(const Model *m, const ServeOptions *o, ServeResult *r)
{
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 4);
    KvCache *c = kv_open("paged:page=4,pages=64", &geo, &e);
    if (!c)
        fail_msg("kv_open: %s", e.msg);
    if (serve_run(m, c, o, NULL, NULL, r, &e) < 0)
        fail_msg("serve_run: %s", e.msg);
    kv_free(c);
}

/* The first step t >= 3 of request q's output whose token no earlier step
 * chose, or -1. */
static int new_token_at(const ServeRequest *q, size_t *t_out)
{
    for (size_t t = 3; t < q->n_output; t++) {
        int seen = 0;
        for (size_t u = 0; u < t; u++)
            seen |= q->output[u] == q->output[t];
        if (!seen) {
            *t_out = t;
            return q->output[t];
        }
    }
    return -1;
}

static void test_requests_end_at_eos(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    ServeOptions o = { .n_requests = 10, .rate = 0.5, .prompt_min = 6, .prompt_max = 14, .output_min = 8,
                       .output_max = 14, .token_budget = 24, .n_samples = 1, .seed = 5 };
    ServeResult first, cut;
    serve(&m, &o, &first);
    size_t at = 0, who = 0;
    int eos = -1;
    for (size_t i = 0; i < first.n_requests && eos < 0; i++)
        if ((eos = new_token_at(&first.req[i], &at)) >= 0)
            who = i;
    assert_true(eos >= 0);
    m.cfg.eos_token = eos;
    o.stop_at_eos = 1;
    serve(&m, &o, &cut);
    assert_int_equal(cut.n_requests, first.n_requests);
    size_t ended = 0, tokens = 0;
    for (size_t i = 0; i < cut.n_requests; i++) {
        const ServeRequest *a = &first.req[i], *b = &cut.req[i];
        size_t n = a->n_output; /* tokens up to and with the first end-of-text token */
        for (size_t t = 0; t < a->n_output; t++)
            if (a->output[t] == eos) {
                n = t + 1;
                break;
            }
        if (i == who)
            assert_int_equal(n, at + 1);
        assert_int_equal(b->n_made, n);
        assert_int_equal(b->eos_samples, n < a->n_output || a->output[a->n_output - 1] == eos);
        assert_memory_equal(b->output, a->output, n * sizeof(int));
        for (size_t t = n; t < b->n_output; t++)
            assert_int_equal(b->output[t], 0);
        ended += b->eos_samples;
        tokens += n;
    }
    assert_int_equal(cut.eos_requests, ended);
    assert_int_equal(cut.generated_tokens, tokens);
    assert_true(cut.generated_tokens < first.generated_tokens);
    printf("  end-of-text id %d (request %zu, step %zu): %zu of %zu requests ended there, %zu tokens of %zu\n", eos,
           who, at, ended, cut.n_requests, cut.generated_tokens, first.generated_tokens);
    serve_result_free(&first);
    serve_result_free(&cut);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_end_at_eos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
