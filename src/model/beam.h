/* beam.h: beam search over an encoder-decoder (the encoder-decoder notes), with a cache or
 * without one.
 *
 * W hypotheses ("beams") advance together. Each step feeds every live
 * beam's last token (BOS first), turns its logits into log-probabilities
 * (log-softmax, in double) and ranks every (beam, token) extension by the
 * beam's summed log-probability plus the token's: the best W that do not end
 * in EOS are the next beams; an EOS extension ranked above the W-th of them
 * becomes a finished hypothesis. Ties go to the lower beam rank, then to the
 * lower token id, so the search is deterministic.
 *
 * Search stops when W hypotheses have finished (early stopping), when no
 * beam is left, or after max_len tokens (the live beams then count as
 * hypotheses too). Hypotheses are ranked by the length-normalised score
 *     score = sum of log-probabilities / len^alpha
 * (len counts the generated tokens, EOS included, BOS not; alpha = 1 gives
 * the mean log-probability per token) and the best W are returned.
 *
 * With a cache, beam i's self-attention rows live in a sequence ("slot") of
 * the self cache and every beam reads the one shared cross cache. After a
 * step, the slots are reordered for the next beams: slots whose beam has no
 * extension are dropped first; the first extension of a beam keeps its
 * slot (nothing moves); every further extension forks the slot into a free
 * one. A contiguous or dynamic cache copies the rows (bytes_copied); a paged
 * cache shares the pages and copies a shared page on its first write
 * (cow_copies). W slots suffice. Without a cache, every step runs each
 * beam's whole target from position 0 (encdec_decode_uncached). Both paths
 * choose the same beams: their logits agree to float rounding. */
#ifndef KVSCOPE_MODEL_BEAM_H
#define KVSCOPE_MODEL_BEAM_H

#include <stddef.h>
#include <stdint.h>

#include "kv/cache.h"
#include "model/model.h"
#include "stats/counters.h"
#include "util/err.h"

typedef struct {
    size_t width;   /* W >= 1 */
    size_t max_len; /* tokens generated at most per hypothesis, 1 .. max_seq_len */
    double alpha;   /* length normalisation exponent, >= 0 (1: mean log-probability) */
} BeamOptions;

typedef struct {
    int *tokens;  /* [len] generated tokens (EOS last when finished); BOS not included */
    size_t len;
    double logp;  /* sum of the tokens' log-probabilities */
    double score; /* logp / len^alpha */
    int finished; /* 1: ended with EOS; 0: reached max_len */
} Hypothesis;

/* What one step did (pointers valid during the callback only). */
typedef struct {
    size_t step;          /* from 0 */
    size_t pos;           /* target position of the tokens fed (= step) */
    size_t n_beams;       /* beams this step ran */
    size_t n_next;        /* beams the next step runs (0 after the last step) */
    size_t n_finished;    /* hypotheses finished so far */
    const int *parent;    /* [n_kept] beam (index into this step's beams) each kept extension extends */
    const int *token;     /* [n_kept] the token it appends */
    const double *logp;   /* [n_kept] its summed log-probability */
    size_t n_kept;        /* extensions kept: the next beams, or the final ones after the last step */
    const size_t *slots;  /* [n_next] cache sequence of each next beam (cached only) */
    size_t forks, drops;  /* cache sequences forked and dropped while reordering */
    Counters ctr;         /* the step's work; bytes_copied includes its forks' copies */
    uint64_t cross_kv_rows; /* memory rows projected to cross K/V by this step (0 when cached) */
    size_t self_bytes_used;     /* self cache after the step's pass, before reordering */
    size_t self_bytes_reserved;
    KvStats kv;           /* the self cache's pages after reordering (zeros when not paged) */
    size_t cow_copies;    /* pages this step copied before writing into them (paged) */
    size_t cross_bytes;   /* the shared cross cache (0 uncached) */
    size_t cross_refs;    /* beams reading it after the step */
} BeamStep;

/* Called after each step; a non-zero return stops the search (an error). */
typedef int (*BeamStepFn)(void *user, const BeamStep *s);

typedef struct {
    Hypothesis *hyps; /* [n] best first */
    size_t n;
    size_t steps;
    Counters encoder; /* the encoder pass and (cached) the cross K/V computation */
    Counters total;   /* everything, the encoder included */
    uint64_t cross_kv_rows; /* memory rows projected to cross K/V, all layers, the whole run */
    size_t forks, drops;
    size_t cross_fills;     /* times the cross cache was computed (1 cached, 0 uncached) */
    size_t cross_peak_refs; /* most beams reading it at once */
    size_t cross_refs_end;  /* readers left at the end: 0 */
    size_t cross_bytes;     /* its bytes (held once) */
    size_t self_bytes_last; /* self cache bytes used after the last pass ... */
    size_t beams_last;      /* ... by this many beams */
    size_t self_bytes_peak; /* the most it held after any pass */
    KvStats kv;             /* the self cache's pages at the end of the last step */
} BeamResult;

/* Beam search from src [src_len] with model m (an encoder-decoder).
 * self: an empty cache of at least W sequences and max_seq_len >= max_len
 * (encdec_self_geometry), or NULL for the uncached path. Every sequence of
 * self is dropped (empty) on return. fn (optional) sees each step.
 * Fills *out (free with beam_result_free). ERR_USAGE on bad options. */
int beam_search(const Model *m, const int *src, KvCache *self, const BeamOptions *o, BeamResult *out,
                BeamStepFn fn, void *user, Err *e);
void beam_result_free(BeamResult *r);

#endif
