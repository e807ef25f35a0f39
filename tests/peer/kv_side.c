/* kv_side.c: kvscope's side of `make peer`'s logits (peer.c): a greedy run
 * through its library, the calls `kvscope run` makes (setup_load_model,
 * model_forward on a contiguous f32 cache). */
#include <stdio.h>
#include <stdlib.h>

#include "kv/cache.h"
#include "model/forward.h"
#include "sim/setup.h"

int peer_kvscope_greedy(const char *gguf, int int_dot, const int *prompt, int np, int T, int *gen, float **logits,
                        char *why, size_t cap);

/* kvscope's greedy run: T tokens into gen, the logits that chose each into
 * logits [T][vocab] (malloc'd); returns the vocabulary */
int peer_kvscope_greedy(const char *gguf, int int_dot, const int *prompt, int np, int T, int *gen, float **logits,
                        char *why, size_t cap)
{
    Err e = { 0 };
    ModelOpts mo = { .weights = gguf, .int_dot = int_dot == 2 ? INT_DOT_REF : int_dot ? INT_DOT_EVEN : INT_DOT_OFF, .int_dot_set = 1 };
    Model m;
    if (setup_load_model(&mo, 0, &m, &e) < 0)
        return snprintf(why, cap, "cannot load %s: %s", gguf, e.msg), -1;
    const size_t V = m.cfg.vocab;
    ForwardState fs;
    KvGeometry geo = model_kv_geometry(&m, 1);
    KvCache *cache = NULL;
    if (forward_state_init(&fs, &m.cfg, (size_t)np, 0, &e) < 0 || !(cache = kv_open("contiguous", &geo, &e)))
        return snprintf(why, cap, "%s", e.msg), -1;
    *logits = malloc((size_t)T * V * sizeof **logits);
    Counters ctr = { 0 };
    int tok = 0;
    for (int s = 0; s < T; s++) {
        float *l = *logits + (size_t)s * V;
        int rc = s == 0 ? model_forward(&m, &fs, cache, prompt, 1, (size_t)np, 0, l, &ctr, &e)
                        : model_forward(&m, &fs, cache, &tok, 1, 1, (size_t)(np + s - 1), l, &ctr, &e);
        if (rc < 0)
            return snprintf(why, cap, "%s", e.msg), -1;
        size_t best = 0;
        for (size_t j = 1; j < V; j++)
            if (l[j] > l[best])
                best = j;
        gen[s] = tok = (int)best;
    }
    kv_free(cache);
    forward_state_free(&fs);
    model_free(&m);
    return (int)V;
}

