/* harness.h: what the exercise checkers share. A checker is compiled with
 * the learner's file and libkvscope.a; it compares the learner's functions
 * with the engine's reference behaviour, prints what it compared (expected,
 * then actual, for the first few differences), and exits 0 only when all
 * of it matches. */
#ifndef KVSCOPE_EXERCISE_HARNESS_H
#define KVSCOPE_EXERCISE_HARNESS_H

#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kv/cache.h"
#include "model/config.h"
#include "model/generate.h"
#include "model/model.h"

/* Differences shown in full; the rest are only counted. */
#define HARNESS_SHOW 5

typedef struct {
    int checked, failed;
} Tally;

/* Count one comparison; 1 when its details should be printed. */
static inline int tally(Tally *t, int ok)
{
    t->checked++;
    if (ok)
        return 0;
    t->failed++;
    return t->failed <= HARNESS_SHOW;
}

/* Print the verdict line and return the exit status. */
static inline int verdict(const Tally *t, const char *what)
{
    if (t->failed > HARNESS_SHOW)
        printf("... and %d more differences\n", t->failed - HARNESS_SHOW);
    if (t->failed)
        printf("%d of %d %s differ from the reference\n", t->failed, t->checked, what);
    else
        printf("all %d %s match the reference\n", t->checked, what);
    return t->failed ? 1 : 0;
}

/* Load model `name` from data/models with its weights and the best kernels
 * of this CPU. Returns 0, or prints why and returns -1. */
static inline int harness_model(Model *m, const char *name)
{
    Config c;
    Err e = { 0 };
    const Kernels *k;
    if (config_load(&c, name, &e) < 0 || config_validate(&c, &e) < 0 || !(k = kernels_select(NULL, &e)) ||
        model_init(m, &c, k, &e) < 0) {
        printf("cannot load model %s: %s\n", name, e.msg);
        return -1;
    }
    return 0;
}

/* Row r of a KvBlock's K (or V) as f32: the exercises use exact caches. */
static inline const float *harness_row(const void *base, size_t stride, size_t r)
{
    return (const float *)((const char *)base + r * stride);
}

/* Real rows to check against: m generates n_gen tokens from prompt [plen]
 * through an exact contiguous cache (*cache, the caller frees it); *b is
 * its layer 0, KV head 0 (every position cached). Returns 0, or prints
 * why and returns -1. */
static inline int harness_reference_rows(const Model *m, const int *prompt, size_t plen, size_t n_gen,
                                         KvCache **cache, KvBlock *b)
{
    KvGeometry geo = model_kv_geometry(m, 1);
    Err e = { 0 };
    int *out = malloc(n_gen * sizeof *out);
    GenOptions go = { .n_generate = n_gen };
    *cache = out ? kv_open("contiguous", &geo, &e) : NULL;
    int rc = *cache && generate(m, *cache, prompt, 1, plen, &go, out, NULL, NULL, &e) == 0 ? 0 : -1;
    free(out);
    if (rc < 0) {
        printf("the reference run failed: %s\n", out ? e.msg : "out of memory");
        return -1;
    }
    kv_block(*cache, 0, 0, 0, 0, b);
    return 0;
}

#endif
