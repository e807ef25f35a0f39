/* serve_replay.c: a serving run, recorded (serve_replay.h). */
#include "sim/serve_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ServeReplay *r;
    int oom;
} Recorder;

/* Grow the per-step arrays to hold this step, and copy it in. */
static int record(void *user, const ServeStep *st)
{
    Recorder *rec = user;
    ServeReplay *r = rec->r;
    const size_t n = st->step + 1, P = r->pages_total, R = r->n_requests;
    int *owner = realloc(r->owner, n * P * sizeof *owner);
    if (owner)
        r->owner = owner;
    unsigned char *state = owner ? realloc(r->state, n * R) : NULL;
    if (state)
        r->state = state;
    size_t *held = state ? realloc(r->held, n * R * sizeof *held) : NULL;
    if (!held)
        return rec->oom = 1; /* stops the run; serve_replay_make says why */
    r->held = held;
    size_t *at = realloc(r->tree_at, (n + 1) * sizeof *at);
    if (!at)
        return rec->oom = 1;
    r->tree_at = at;
    if (st->step == 0)
        at[0] = 0;
    at[n] = at[st->step] + st->tree_nodes;
    if (st->tree_nodes) {
        RadixView *tree = realloc(r->tree, at[n] * sizeof *tree);
        if (!tree)
            return rec->oom = 1;
        r->tree = tree;
        memcpy(tree + at[st->step], st->tree, st->tree_nodes * sizeof *tree);
    }
    memcpy(r->owner + st->step * P, st->page_owner, P * sizeof *owner);
    memcpy(r->state + st->step * R, st->state, R);
    memcpy(r->held + st->step * R, st->held, R * sizeof *held);
    return 0;
}

int serve_replay_make(ServeReplay *r, const Model *m, KvCache *cache, const ServeOptions *o, Err *e)
{
    memset(r, 0, sizeof *r);
    if (serve_check(&m->cfg, cache, o, e) < 0)
        return -1;
    KvStats st = { 0 };
    kv_stats(cache, &st);
    snprintf(r->model, sizeof r->model, "%s", m->cfg.name);
    snprintf(r->cache, sizeof r->cache, "%s", cache->spec);
    r->o = *o;
    r->slots = cache->geo.n_seqs, r->pages_total = st.pages_total, r->page_rows = st.page_rows;
    r->n_requests = o->n_requests;
    Recorder rec = { .r = r };
    if (serve_run(m, cache, o, record, &rec, &r->result, e) < 0)
        return rec.oom ? err_set(e, ERR_RUNTIME, "out of memory recording the run") : -1;
    return 0;
}

void serve_replay_free(ServeReplay *r)
{
    serve_result_free(&r->result);
    free(r->owner);
    free(r->state);
    free(r->held);
    free(r->tree_at), free(r->tree);
    memset(r, 0, sizeof *r);
}
