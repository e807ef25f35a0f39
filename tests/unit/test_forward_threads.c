/* test_forward_threads.c: a wide pass (a prefill, an uncached pass) cut
 * into pieces of rows on the pool gives the same logits, byte for byte,
 * and the same counters on 1, 2 and 3 threads, with every kernel table
 * this CPU runs. */
#include "testutil.h"

#include <string.h>

#include "kv/cache.h"
#include "model/forward.h"
#include "util/pool.h"

enum { ROWS = 45 };

/* The logits of the pass's last token and its counters: uncached (cache
 * NULL) or a prefill into a fresh contiguous cache, then one decode step. */
static void one_pass(const Model *m, int cached, const int *tok, float *logits, Counters *ctr)
{
    Err e = { 0 };
    ForwardState fs;
    assert_int_equal(forward_state_init(&fs, &m->cfg, ROWS, 0, &e), 0);
    KvGeometry geo = model_kv_geometry(m, 1);
    KvCache *cache = cached ? kv_open("contiguous", &geo, &e) : NULL;
    assert_true(!cached || cache);
    memset(ctr, 0, sizeof *ctr);
    assert_int_equal(model_forward(m, &fs, cache, tok, 1, ROWS - 1, 0, logits, ctr, &e), 0);
    if (cached) /* the decode step reads what the prefill's pieces appended */
        assert_int_equal(model_forward(m, &fs, cache, tok + ROWS - 1, 1, 1, ROWS - 1, logits + m->cfg.vocab, ctr, &e),
                         0);
    kv_free(cache);
    forward_state_free(&fs);
}

static void test_wide_pass_same_bytes(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    c.d_model = 40, c.ffn_dim = 75, c.vocab = 67; /* off every kernel's tile */
    Model m;
    test_model(&m, &c);
    int tok[ROWS];
    test_tokens(tok, ROWS, c.vocab, 2);
    const Kernels *isa[4];
    const size_t n_isa = kernels_available(isa, 4);
    float want[2 * 67], got[2 * 67];
    Err e = { 0 };
    for (size_t k = 0; k < n_isa; k++)
        for (int cached = 0; cached < 2; cached++) {
            m.kern = isa[k];
            Counters c1, cn;
            assert_int_equal(pool_set_threads(1, &e), 0);
            one_pass(&m, cached, tok, want, &c1);
            for (size_t n = 2; n <= 3; n++) {
                assert_int_equal(pool_set_threads(n, &e), 0);
                one_pass(&m, cached, tok, got, &cn);
                if (memcmp(got, want, (cached ? 2 : 1) * c.vocab * sizeof(float)) != 0)
                    fail_msg("%s, %s, %zu threads: logits differ from one thread's (%.9g vs %.9g first)",
                             isa[k]->isa, cached ? "prefill" : "uncached", n, got[0], want[0]);
                cn.seconds = c1.seconds; /* the one field that may differ */
                assert_true(memcmp(&cn, &c1, sizeof c1) == 0);
            }
        }
    assert_int_equal(pool_set_threads(1, &e), 0);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide_pass_same_bytes),
    };
    return cmocka_run_group_tests_name("forward_threads", tests, NULL, NULL);
}
