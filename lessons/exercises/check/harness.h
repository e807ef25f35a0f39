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
#include "model/config.h"
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

#endif
