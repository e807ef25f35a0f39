/* adamw.c: AdamW, its schedule and clipping (adamw.h). */
#include "train/adamw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Mark [p, p + n) of the arena for weight decay. */
static void mark(Adamw *a, const Model *m, const float *p, size_t n)
{
    memset(a->decay + (p - m->arena), 1, n);
}

int adamw_init(Adamw *a, const Model *model, Err *e)
{
    memset(a, 0, sizeof *a);
    a->n = model->arena_floats;
    a->m = calloc(a->n, sizeof *a->m);
    a->v = calloc(a->n, sizeof *a->v);
    a->decay = calloc(a->n, 1);
    if (!a->m || !a->v || !a->decay) {
        adamw_free(a);
        return err_set(e, ERR_RUNTIME, "out of memory for the optimizer's %zu moments", 2 * a->n);
    }
    const Config *c = &model->cfg;
    const size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim;
    for (size_t l = 0; l < c->n_layers; l++) {
        const LayerWeights *w = model_layer(model, l);
        mark(a, model, w->wq, q * d), mark(a, model, w->wk, kv * d), mark(a, model, w->wv, kv * d);
        mark(a, model, w->wo, d * q), mark(a, model, w->w_gate, f * d), mark(a, model, w->w_up, f * d);
        mark(a, model, w->w_down, d * f);
    }
    return 0;
}

void adamw_free(Adamw *a)
{
    free(a->m);
    free(a->v);
    free(a->decay);
    memset(a, 0, sizeof *a);
}

double adamw_lr(const AdamwOpts *o, uint64_t step)
{
    if (step < o->warmup)
        return o->lr * (double)(step + 1) / (double)o->warmup;
    const double span = o->steps > o->warmup ? (double)(o->steps - o->warmup) : 1.0;
    const double t = fmin(1.0, (double)(step - o->warmup) / span);
    return o->lr_min + 0.5 * (o->lr - o->lr_min) * (1.0 + cos(M_PI * t));
}

double adamw_step(Adamw *a, const AdamwOpts *o, float *w, const float *g)
{
    double ss = 0;
    for (size_t i = 0; i < a->n; i++)
        ss += (double)g[i] * g[i];
    const double norm = sqrt(ss);
    const float gs = o->clip > 0 && norm > o->clip ? (float)(o->clip / norm) : 1.0f;
    const double lr = adamw_lr(o, a->step);
    a->step++;
    const double bc1 = 1.0 - pow(o->beta1, (double)a->step), bc2 = 1.0 - pow(o->beta2, (double)a->step);
    const float b1 = (float)o->beta1, b2 = (float)o->beta2;
    const float step_size = (float)(lr / bc1), eps = (float)o->eps, inv_bc2 = (float)(1.0 / bc2);
    const float decay = (float)(lr * o->weight_decay);
    for (size_t i = 0; i < a->n; i++) {
        const float gi = g[i] * gs;
        a->m[i] = b1 * a->m[i] + (1 - b1) * gi;
        a->v[i] = b2 * a->v[i] + (1 - b2) * gi * gi;
        if (a->decay[i])
            w[i] -= decay * w[i];
        w[i] -= step_size * a->m[i] / (sqrtf(a->v[i] * inv_bc2) + eps);
    }
    return norm;
}
