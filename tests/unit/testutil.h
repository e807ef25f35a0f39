/* testutil.h: shared helpers for the cmocka unit tests. */
#ifndef KVSCOPE_TESTUTIL_H
#define KVSCOPE_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

/* Largest |a[i] - b[i]| / max(1, |b[i]|) over n, printing the first few
 * mismatches beyond tol so a failure says where, not just that. */
static inline double max_rel_diff(const float *a, const float *b, size_t n, double tol, const char *what)
{
    double worst = 0.0;
    int shown = 0;
    for (size_t i = 0; i < n; i++) {
        double scale = fabs((double)b[i]) > 1.0 ? fabs((double)b[i]) : 1.0;
        double d = fabs((double)a[i] - (double)b[i]) / scale;
        if (d > worst)
            worst = d;
        if (d > tol && shown < 5) {
            printf("  %s[%zu]: %.9g vs %.9g (rel diff %.3g)\n", what, i, a[i], b[i], d);
            shown++;
        }
    }
    return worst;
}

/* Point the engine at the repository's data/ when tests run from the root. */
static inline void use_repo_data(void)
{
    setenv("KVSCOPE_DATA", "data", 0);
}

#endif

#include <string.h>

#include "kernels/kernels.h"
#include "model/config.h"
#include "model/generate.h"
#include "model/model.h"

/* A small synthetic config, valid, for tests that build models in code. */
static inline Config test_config(size_t n_layers, size_t n_heads, size_t n_kv_heads)
{
    Config c;
    config_defaults(&c);
    snprintf(c.name, sizeof c.name, "test-%zuL-%zuH-%zuKV", n_layers, n_heads, n_kv_heads);
    c.d_model = 32;
    c.n_layers = n_layers;
    c.n_heads = n_heads;
    c.n_kv_heads = n_kv_heads;
    c.head_dim = 8;
    c.ffn_dim = 48;
    c.vocab = 64;
    c.max_seq_len = 256;
    c.seed = 7;
    return c;
}

/* Build a model with the reference kernels; fails the test on error. */
static inline void test_model(Model *m, const Config *c)
{
    Err e = { 0 };
    const Kernels *k = kernels_select("ref", &e);
    assert_non_null(k);
    if (model_init(m, c, k, &e) < 0)
        fail_msg("model_init: %s", e.msg);
}

/* Deterministic token ids in [0, vocab). */
static inline void test_tokens(int *ids, size_t n, size_t vocab, unsigned salt)
{
    for (size_t i = 0; i < n; i++)
        ids[i] = (int)((i * 37u + salt * 11u + 5u) % vocab);
}

/* The logits of every token chosen, in order: a StepFn for generate(). */
typedef struct {
    float *logits; /* [tokens generated][n_seqs][vocab] */
    size_t per_step, n;
} TestLog;

static inline int log_logits(void *user, const StepReport *r)
{
    TestLog *l = user;
    if (r->sampled)
        memcpy(l->logits + l->n++ * l->per_step, r->logits, l->per_step * sizeof(float));
    return 0;
}
