/* test_serve.c: the serving loop (sim/serve.h). Every request generates
 * exactly what it generates alone with an exact cache, whether it shared a
 * prefix, waited, or was preempted and recomputed, and so does every sample
 * of a forked request (its prompt's pages shared, copied on write); a pool
 * too small for any request is refused before anything runs; the counters
 * add up. */
#include "testutil.h"

#include "kv/cache.h"
#include "model/forward.h"
#include "model/generate.h"
#include "model/sample.h"
#include "sim/serve.h"

/* Serve o with a paged cache of `spec` and `slots` sequences. */
static void serve(const Model *m, const char *spec, size_t slots, const ServeOptions *o, ServeResult *r)
{
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, slots);
    KvCache *c = kv_open(spec, &geo, &e);
    if (!c)
        fail_msg("kv_open %s: %s", spec, e.msg);
    if (serve_run(m, c, o, NULL, NULL, r, &e) < 0)
        fail_msg("serve_run: %s", e.msg);
    kv_free(c);
}

/* Sample k of forked request i run alone in a contiguous cache: its prompt,
 * then a token at a time, each drawn as serve_sample draws it. */
static void sampled_alone(const Model *m, const ServeRequest *q, uint64_t seed, size_t i, size_t k, int *out)
{
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *c = kv_open("contiguous", &geo, &e);
    assert_non_null(c);
    ForwardState fs;
    assert_int_equal(forward_state_init(&fs, &m->cfg, q->prompt_len, 0, &e), 0);
    float *logits = malloc(m->cfg.vocab * sizeof(float));
    void *scratch = malloc(sample_scratch_bytes(m->cfg.vocab));
    Counters ctr = { 0 };
    assert_int_equal(model_forward(m, &fs, c, q->prompt, 1, q->prompt_len, 0, logits, &ctr, &e), 0);
    for (size_t t = 0; t < q->n_output; t++) {
        out[t] = serve_sample(logits, m->cfg.vocab, seed, i, k, t, scratch);
        if (t + 1 < q->n_output)
            assert_int_equal(model_forward(m, &fs, c, &out[t], 1, 1, q->prompt_len + t, logits, &ctr, &e), 0);
    }
    free(logits), free(scratch);
    forward_state_free(&fs);
    kv_free(c);
}

/* Each request's tokens against its run alone with a contiguous cache:
 * generate() greedy, or each sample of a forked one drawn alone. */
static void expect_alone(const Model *m, const ServeResult *r, uint64_t seed)
{
    Err e = { 0 };
    for (size_t i = 0; i < r->n_requests; i++) {
        const ServeRequest *q = &r->req[i];
        int *want = malloc(q->n_output * sizeof(int));
        for (size_t k = 0; k < q->n_samples; k++) {
            if (q->n_samples > 1) {
                sampled_alone(m, q, seed, i, k, want);
            } else {
                KvGeometry geo = model_kv_geometry(m, 1);
                KvCache *c = kv_open("contiguous", &geo, &e);
                assert_non_null(c);
                GenOptions go = { .n_generate = q->n_output };
                assert_int_equal(generate(m, c, q->prompt, 1, q->prompt_len, &go, want, NULL, NULL, &e), 0);
                kv_free(c);
            }
            if (memcmp(want, q->output + k * q->n_output, q->n_output * sizeof(int)) != 0)
                fail_msg("request %zu sample %zu (prompt %zu, %zu preemptions) generated other tokens than alone",
                         i, k, q->prompt_len, q->preemptions);
        }
        free(want);
    }
}

/* Every token ran once, besides what preemption ran again: a forked
 * request's prompt once for all its samples, each sample's tokens but its
 * last. */
static void expect_tokens_add_up(const ServeResult *r, const ServeOptions *o)
{
    size_t out = 0, decode = 0, prefill = 0;
    for (size_t i = 0; i < r->n_requests; i++) {
        out += r->req[i].n_samples * r->req[i].n_output;
        assert_true(r->req[i].first_token >= r->req[i].arrival);
        assert_true(r->req[i].finished >= r->req[i].first_token);
    }
    for (size_t s = 0; s < r->n_steps; s++) {
        decode += r->steps[s].decode_tokens, prefill += r->steps[s].prefill_tokens;
        assert_true(r->steps[s].decode_tokens + r->steps[s].prefill_tokens <= o->token_budget);
    }
    assert_int_equal(out, r->generated_tokens);
    assert_int_equal(decode + prefill, r->prompt_tokens + r->generated_tokens - r->n_sequences + r->recomputed_tokens);
}

static ServeOptions workload(void)
{
    return (ServeOptions){ .n_requests = 12, .rate = 0.5, .prompt_min = 10, .prompt_max = 20, .output_min = 4,
                           .output_max = 12, .shared_prefix = 8, .token_budget = 24, .seed = 3 };
}

static void test_every_request_as_alone(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    ServeOptions o = workload();
    ServeResult r;
    serve(&m, "paged:page=4,pages=64", 4, &o, &r);
    expect_alone(&m, &r, o.seed);
    expect_tokens_add_up(&r, &o);
    assert_int_equal(r.n_sequences, r.n_requests);
    assert_true(r.steps[r.n_steps - 1].pool.prefix_hits > 0); /* the shared prefix's full pages */
    serve_result_free(&r);
    model_free(&m);
}

/* A pool just big enough for the longest request, four slots, arrivals all
 * at once: sequences must be preempted, and they still match. */
static void test_preempted_requests_recompute_the_same(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    ServeOptions o = workload();
    o.rate = 50, o.shared_prefix = 0, o.output_min = 16, o.output_max = 24;
    ServeResult r;
    serve(&m, "paged:page=4,pages=12", 4, &o, &r);
    assert_true(r.preemptions > 0);
    assert_true(r.recomputed_tokens > 0);
    expect_alone(&m, &r, o.seed);
    serve_result_free(&r);
    model_free(&m);
}

/* The same pressure with swap: nothing is recomputed, the rows go out and
 * come back, and every request still matches its run alone. */
static void test_swapped_requests_come_back_the_same(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    ServeOptions o = workload();
    o.rate = 50, o.shared_prefix = 0, o.output_min = 16, o.output_max = 24, o.swap = 1;
    ServeResult r;
    serve(&m, "paged:page=4,pages=12", 4, &o, &r);
    assert_true(r.preemptions > 0);
    assert_int_equal(r.recomputed_tokens, 0);
    assert_true(r.swapped_out_bytes > 0);
    assert_int_equal(r.swapped_in_bytes, r.swapped_out_bytes); /* every swapped sequence came back */
    expect_alone(&m, &r, o.seed);
    serve_result_free(&r);
    model_free(&m);
}

/* A trace's requests arrive when it says, as long as it says. */
static void test_a_trace_is_followed(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    static const ServeTraceEntry trace[] = { { 0, 12, 5 }, { 0, 20, 3 }, { 4, 9, 8 }, { 30, 16, 2 } };
    ServeOptions o = { .n_requests = 4, .trace = trace, .token_budget = 32, .seed = 5 };
    ServeResult r;
    serve(&m, "paged:page=4,pages=32", 2, &o, &r);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(r.req[i].arrival, trace[i].arrival);
        assert_int_equal(r.req[i].prompt_len, trace[i].prompt_len);
        assert_int_equal(r.req[i].n_output, trace[i].output_len);
    }
    assert_true(r.n_steps > 30); /* the last one arrives at step 30 */
    expect_alone(&m, &r, o.seed);
    serve_result_free(&r);
    model_free(&m);
}

/* Half the requests fork into 3 samples over a roomy pool: each sample
 * equals its run alone, the samples differ, the prompt's pages were shared
 * and the partial last ones copied on write. */
static void test_forked_samples_as_alone(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    ServeOptions o = workload();
    o.fork_share = 0.5, o.n_samples = 3, o.prompt_min = 9, o.prompt_max = 19; /* most end mid-page */
    ServeResult r;
    serve(&m, "paged:page=4,pages=64", 6, &o, &r);
    assert_true(r.forked_requests > 0 && r.forked_requests < r.n_requests);
    assert_int_equal(r.n_sequences, r.n_requests + 2 * r.forked_requests);
    expect_alone(&m, &r, o.seed);
    expect_tokens_add_up(&r, &o);
    size_t differ = 0;
    for (size_t i = 0; i < r.n_requests; i++)
        if (r.req[i].n_samples > 1)
            differ += memcmp(r.req[i].output, r.req[i].output + r.req[i].n_output,
                             r.req[i].n_output * sizeof(int)) != 0;
    assert_true(differ > 0);
    ServeSummary sum;
    assert_int_equal(serve_summarize(&r, &sum), 0);
    assert_true(r.fork_shared_pages > 0);
    assert_true(sum.cow_copies > 0);
    assert_true(sum.cow_copies <= r.fork_shared_pages);
    serve_result_free(&r);
    model_free(&m);
}

/* Every request forks, the pool is just big enough for one, arrivals all at
 * once: samples are preempted, by recompute and by swap, and each still
 * draws what it draws alone. */
static void test_preempted_samples_draw_the_same(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    for (int swap = 0; swap < 2; swap++) {
        ServeOptions o = workload();
        o.rate = 50, o.shared_prefix = 0, o.output_min = 16, o.output_max = 24, o.swap = swap;
        o.fork_share = 1, o.n_samples = 2;
        ServeResult r;
        serve(&m, "paged:page=4,pages=12", 4, &o, &r);
        assert_int_equal(r.forked_requests, r.n_requests);
        assert_true(r.preemptions > 0);
        assert_true(swap ? r.swapped_out_bytes > 0 : r.recomputed_tokens > 0);
        expect_alone(&m, &r, o.seed);
        expect_tokens_add_up(&r, &o);
        serve_result_free(&r);
    }
    model_free(&m);
}

static void test_bad_workloads_are_refused(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    Err e = { 0 };
    KvGeometry geo = model_kv_geometry(&m, 2);
    KvCache *small = kv_open("paged:page=4,pages=3", &geo, &e), *flat = kv_open("contiguous", &geo, &e);
    assert_non_null(small);
    assert_non_null(flat);
    ServeOptions o = workload();
    assert_int_equal(serve_check(&m.cfg, small, &o, &e), -1);
    assert_non_null(strstr(e.msg, "the pool holds 3"));
    assert_int_equal(serve_check(&m.cfg, flat, &o, &e), -1);
    assert_non_null(strstr(e.msg, "must be paged"));
    ServeOptions zero = o;
    zero.rate = 0;
    assert_int_equal(serve_check(&m.cfg, small, &zero, &e), -1);
    ServeOptions prefix = o;
    prefix.shared_prefix = 11;
    assert_int_equal(serve_check(&m.cfg, small, &prefix, &e), -1);
    ServeOptions fork = o;
    fork.fork_share = 0.5, fork.n_samples = 1;
    assert_int_equal(serve_check(&m.cfg, small, &fork, &e), -1);
    assert_non_null(strstr(e.msg, "needs at least 2 samples"));
    fork.n_samples = 3; /* two slots */
    assert_int_equal(serve_check(&m.cfg, small, &fork, &e), -1);
    assert_non_null(strstr(e.msg, "there are 2 slots"));
    fork.n_samples = 2, fork.fork_share = 1.5;
    assert_int_equal(serve_check(&m.cfg, small, &fork, &e), -1);
    kv_free(small);
    kv_free(flat);
    model_free(&m);
}

/* The prefix caches (block hash that skips its pages, radix tree) on the
 * chat and few-shot workloads: every request still generates what it does
 * alone, whether its prefix came from the cache, was evicted under a tight
 * pool, or it was preempted; with room to spare, every token ran once
 * except those found cached. */
static void test_prefix_caches_as_alone(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    static const char *const pools[] = { "paged:page=4,pages=200", "paged:page=4,pages=24" };
    for (int prefix = SERVE_PREFIX_BLOCK; prefix <= SERVE_PREFIX_RADIX; prefix++)
        for (int w = SERVE_WORKLOAD_CHAT; w <= SERVE_WORKLOAD_FEWSHOT; w++)
            for (size_t p = 0; p < 2; p++) {
                ServeOptions o = workload();
                o.prefix = (ServePrefix)prefix, o.workload = (ServeWorkload)w, o.turns = 3, o.rate = 1;
                o.prompt_min = 3, o.prompt_max = 9, o.output_min = 3, o.output_max = 9, o.shared_prefix = 6;
                ServeResult r;
                serve(&m, pools[p], 4, &o, &r);
                expect_alone(&m, &r, o.seed);
                if (p == 0) {
                    assert_int_equal(r.preemptions, 0);
                    assert_true(r.prefix_hit_tokens > 0);
                    size_t prefill = 0, decode = 0; /* a prompt token is prefill in whichever pass runs it */
                    for (size_t s = 0; s < r.n_steps; s++)
                        decode += r.steps[s].decode_tokens, prefill += r.steps[s].prefill_tokens;
                    assert_int_equal(prefill, r.prompt_tokens - r.prefix_hit_tokens);
                    assert_int_equal(decode, r.generated_tokens - r.n_sequences);
                } else {
                    assert_true(r.steps[r.n_steps - 1].prefix_evicted > 0); /* the tight pool evicts */
                }
                serve_result_free(&r);
            }
    /* forked requests' samples share the adopted pages, and draw as alone */
    for (int prefix = SERVE_PREFIX_BLOCK; prefix <= SERVE_PREFIX_RADIX; prefix++) {
        ServeOptions o = workload();
        o.prefix = (ServePrefix)prefix, o.workload = SERVE_WORKLOAD_FEWSHOT, o.rate = 1, o.shared_prefix = 6;
        o.prompt_min = 3, o.prompt_max = 9, o.fork_share = 0.5, o.n_samples = 2;
        ServeResult r;
        serve(&m, pools[1], 4, &o, &r);
        assert_true(r.forked_requests > 0);
        expect_alone(&m, &r, o.seed);
        serve_result_free(&r);
    }
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_request_as_alone),
        cmocka_unit_test(test_preempted_requests_recompute_the_same),
        cmocka_unit_test(test_swapped_requests_come_back_the_same),
        cmocka_unit_test(test_a_trace_is_followed),
        cmocka_unit_test(test_forked_samples_as_alone),
        cmocka_unit_test(test_preempted_samples_draw_the_same),
        cmocka_unit_test(test_bad_workloads_are_refused),
        cmocka_unit_test(test_prefix_caches_as_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
