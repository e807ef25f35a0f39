/* beam_replay.h: a beam search over an encoder-decoder (model/beam.h),
 * recorded step by step for the view to walk through.
 *
 * The search is deterministic, so it is run once, whole, when the replay is
 * made, and each step's beams, their cache slots and page tables, the pool
 * and the counters are copied as they were: stepping back and forth is
 * reading the record, not running again. Nothing here prints. */
#ifndef KVSCOPE_SIM_BEAM_REPLAY_H
#define KVSCOPE_SIM_BEAM_REPLAY_H

#include <stddef.h>

#include "kv/cache.h"
#include "model/model.h"
#include "util/err.h"

/* The state after one step of the search. */
typedef struct {
    size_t n_beams;      /* beams the next step runs (after the last step: the final hypotheses) */
    size_t len;          /* tokens each beam holds (= step + 1) */
    int *tokens;         /* [n_beams][len] each beam's tokens, BOS not included */
    double *logp;        /* [n_beams] summed log-probability */
    size_t *slot;        /* [n_beams] the self cache's sequence holding the beam (SIZE_MAX: none, after
                            the last step) */
    size_t *pages;       /* [n_beams][max_pages] each beam's page table (SIZE_MAX past its end) */
    size_t n_finished;   /* hypotheses finished so far */
    size_t forks, drops, cow_copies;
    KvStats kv;          /* the self cache's pool after the step */
    size_t self_bytes, cross_bytes, cross_refs;
    Counters ctr;        /* the step's work */
} BeamFrame;

typedef struct {
    char model[64], cache[128];
    size_t width, src_len, max_pages;
    int *src;            /* [src_len] */
    BeamFrame *frames;   /* [n_frames] */
    size_t n_frames;
    int *best;           /* the best hypothesis's tokens ([best_len]) */
    size_t best_len;
    double best_score;
    Counters encoder;    /* the encoder pass and the cross K/V, once */
} BeamReplay;

/* Run the search of width W from src with a self cache of `spec` (paged
 * shows the forks' shared pages) and record it. ERR_USAGE for a model that
 * is not an encoder-decoder or a bad spec. Free with beam_replay_free. */
int beam_replay_make(BeamReplay *r, const Model *m, const char *spec, const int *src, size_t src_len, size_t width,
                     size_t max_len, Err *e);
void beam_replay_free(BeamReplay *r);

#endif
