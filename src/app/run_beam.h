/* run_beam.h: `kvscope run` on an encoder-decoder: beam search with the
 * shared cross cache, with a cache, without one, or both (--compare). */
#ifndef KVSCOPE_APP_RUN_BEAM_H
#define KVSCOPE_APP_RUN_BEAM_H

#include <stddef.h>

#include "app/cli.h"
#include "report/out_format.h"
#include "kernels/kernels.h"
#include "model/config.h"

/* What `kvscope run` parsed, as the beam path needs it. */
typedef struct {
    const ModelOpts *mo;
    const PromptOpts *po;   /* --prompt: the source ids; --prompt-seed: random source ids */
    size_t beams;           /* --beams W; 0 = not given (1) */
    size_t src_len;         /* --src-len; 0 = the config's */
    size_t tokens;          /* --tokens: target tokens at most; 0 = not given (max_seq_len) */
    double alpha;           /* --alpha: length normalisation exponent */
    const char *cache_spec; /* the self-attention cache */
    AttendAlgo attend;
    int no_cache, compare;
    OutFormat fmt;
    /* decoder-only options, refused here when given */
    size_t chunk, top_k;
    double temperature;
    unsigned bugs;
} BeamRunArgs;

/* Run it; cfg is the loaded, validated config. Returns the exit code (after
 * printing a one-line error on failure). */
int run_beam(const BeamRunArgs *a, const Config *cfg);

/* Help lines for the beam options. */
extern const char run_beam_help[];

#endif
