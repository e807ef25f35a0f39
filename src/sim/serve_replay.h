/* serve_replay.h: a serving run (sim/serve.h) recorded step by step for the
 * view to walk through: each step's counters, who holds each page of the
 * pool, and where each request is. The run is deterministic, so it is made
 * once, whole; stepping back and forth reads the record. Nothing here
 * prints. */
#ifndef KVSCOPE_SIM_SERVE_REPLAY_H
#define KVSCOPE_SIM_SERVE_REPLAY_H

#include <stddef.h>

#include "sim/serve.h"

typedef struct {
    char model[64], cache[128];
    ServeOptions o;
    size_t slots, pages_total, page_rows, n_requests;
    ServeResult result;    /* the run: its requests and steps */
    int *owner;            /* [n_steps][pages_total] ServeStep.page_owner of each step */
    unsigned char *state;  /* [n_steps][n_requests] ServeState */
    size_t *held;          /* [n_steps][n_requests] positions held */
    size_t *tree_at;       /* RADIX: [n_steps + 1] where each step's tree starts in tree */
    RadixView *tree;       /* RADIX: every step's tree, depth first, one after another (no token ids) */
} ServeReplay;

/* Serve o with model m over `cache` (paged, its geometry's n_seqs the
 * slots) and record it. ERR_USAGE for what serve_check refuses. Free with
 * serve_replay_free, also after a failure. */
int serve_replay_make(ServeReplay *r, const Model *m, KvCache *cache, const ServeOptions *o, Err *e);
void serve_replay_free(ServeReplay *r);

#endif
