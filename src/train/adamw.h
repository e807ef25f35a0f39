/* adamw.h: AdamW over a model's arena, with linear warmup then cosine decay
 * of the learning rate and clipping of the global gradient norm. Weight
 * decay applies to the matrices of the layers only: not to the embeddings,
 * the output matrix or the norms' gains. */
#ifndef KVSCOPE_TRAIN_ADAMW_H
#define KVSCOPE_TRAIN_ADAMW_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "util/err.h"

typedef struct {
    double lr;           /* the peak learning rate */
    double lr_min;       /* where the cosine ends */
    size_t warmup;       /* steps of linear warmup from 0 */
    size_t steps;        /* the whole run: the cosine spans steps - warmup */
    double beta1, beta2, eps, weight_decay;
    double clip;         /* the largest global gradient norm; 0 = none */
} AdamwOpts;

typedef struct {
    float *m, *v;           /* [n] first and second moments */
    unsigned char *decay;   /* [n] 1 where weight decay applies */
    size_t n;
    uint64_t step;          /* updates made */
} Adamw;

int adamw_init(Adamw *a, const Model *model, Err *e);
void adamw_free(Adamw *a);

/* The learning rate of update `step` (from 0). */
double adamw_lr(const AdamwOpts *o, uint64_t step);

/* One update of w[n] from the gradient g[n] (clipped to o->clip first);
 * returns the gradient's norm before clipping. */
double adamw_step(Adamw *a, const AdamwOpts *o, float *w, const float *g);

#endif
