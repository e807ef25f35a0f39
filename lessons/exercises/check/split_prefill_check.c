/* split_prefill_check.c: checks lessons/exercises/split_prefill.c (lesson 11).
 *
 * The reference is the engine's Generator running the tiny model's prefill
 * in one pass (GenOptions.chunk = 0). For several chunk sizes, the learner's
 * split_prefill must leave a cache with the same rows in every layer and KV
 * head (within 1e-6 relative: the rows of a token do not depend on its
 * neighbours) and the same logits for the last prompt token (within 1e-5).
 * The passes of the earlier chunks may be given NULL logits: model_forward
 * then skips the output projection, whose result nobody reads. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "kv/cache.h"
#include "model/generate.h"
#include "split_prefill.h"

#define PLEN 13

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return scale > 0 ? d / scale : d;
}

int main(void)
{
    Model m;
    if (harness_model(&m, "tiny") < 0)
        return 2;
    const Config *c = &m.cfg;
    int prompt[PLEN] = { 1, 41, 42, 13, 56, 200, 7, 99, 128, 3, 250, 17, 64 };
    KvGeometry geo = model_kv_geometry(&m, 1);
    Err e = { 0 };

    /* the reference: one prefill pass by the Generator */
    KvCache *ref = kv_open("contiguous", &geo, &e);
    Generator *g = NULL;
    GenOptions go = { .n_generate = 1 };
    StepReport rep;
    if (!ref || gen_init(&g, &m, ref, prompt, 1, PLEN, &go, &e) < 0 || gen_step(g, &rep, &e) != 1) {
        printf("the reference prefill failed: %s\n", e.msg);
        return 2;
    }
    float *ref_logits = malloc(c->vocab * sizeof(float)), *logits = malloc(c->vocab * sizeof(float));
    memcpy(ref_logits, rep.logits, c->vocab * sizeof(float));
    printf("reference: the Generator's one-pass prefill of %d tokens (tiny model, %zu layers, %zu KV heads)\n",
           PLEN, c->n_layers, c->n_kv_heads);

    static const size_t chunks[] = { 1, 4, 5, 12, 13, 20 };
    Tally t = { 0, 0 };
    for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
        const size_t C = chunks[ci];
        KvCache *cache = kv_open("contiguous", &geo, &e);
        ForwardState s;
        if (!cache || forward_state_init(&s, c, C, 0, &e) < 0) {
            printf("setup failed: %s\n", e.msg);
            return 2;
        }
        memset(logits, 0, c->vocab * sizeof(float));
        if (split_prefill(&m, &s, cache, prompt, PLEN, C, logits, &e) < 0) {
            if (tally(&t, 0))
                printf("chunk %zu: split_prefill failed: %s\n", C, e.msg);
            e.msg[0] = '\0';
            forward_state_free(&s);
            kv_free(cache);
            continue;
        }
        for (size_t l = 0; l < c->n_layers; l++) {
            size_t len = kv_length(cache, l, 0);
            if (tally(&t, len == PLEN)) {
                printf("chunk %zu, layer %zu: expected %d rows in the cache, got %zu\n", C, l, PLEN, len);
                continue;
            }
            if (len != PLEN)
                continue;
            for (size_t h = 0; h < c->n_kv_heads; h++) {
                KvBlock a, b;
                kv_block(ref, l, 0, h, 0, &a);
                kv_block(cache, l, 0, h, 0, &b);
                for (size_t r = 0; r < PLEN; r++) {
                    double dk = rel_diff(harness_row(b.k, b.k_stride, r), harness_row(a.k, a.k_stride, r),
                                         c->head_dim);
                    double dv = rel_diff(harness_row(b.v, b.v_stride, r), harness_row(a.v, a.v_stride, r),
                                         c->head_dim);
                    if (tally(&t, dk <= 1e-6 && dv <= 1e-6))
                        printf("chunk %zu, layer %zu, KV head %zu, position %zu: expected the one-pass rows, "
                               "got K off by %.3g and V off by %.3g (relative)%s\n", C, l, h, r, dk, dv,
                               r > 0 && dk > 1e-6 ? ": is the chunk's position right?" : "");
                }
            }
        }
        int written = 0;
        for (size_t i = 0; i < c->vocab; i++)
            written |= logits[i] != 0.0f;
        double dl = rel_diff(logits, ref_logits, c->vocab);
        if (tally(&t, dl <= 1e-5)) {
            if (!written)
                printf("chunk %zu: the logits were never written: the pass of the last chunk (the one that holds "
                       "the prompt's last token) must be given the logits buffer\n", C);
            else
                printf("chunk %zu: expected the one-pass logits of the last prompt token, got a relative "
                       "difference of %.3g\n", C, dl);
        }
        forward_state_free(&s);
        kv_free(cache);
    }
    gen_free(g);
    kv_free(ref);
    free(ref_logits);
    free(logits);
    model_free(&m);
    return verdict(&t, "comparisons");
}
