/* sim/: the engine put to work for the front ends: a stepped session, a
 * lossy cache against an exact shadow, cached against uncached runs, and
 * models and prompts set up from options. Uses model/, kv/, kernels/,
 * stats/ and util/; prints nothing.
 *
 * session.h: a model, a cache, a prompt and generation options, stepped one
 * forward pass at a time: what the interactive view drives.
 *
 * A Session owns its Model, its KvCache and a Generator over them. Each
 * session_step runs one pass and records a StepRecord: the pass's counters
 * exactly as generate() reports them, its shape, and the work the same pass
 * would cost without a cache (the "uncached equivalent", see UncachedMode).
 * Besides the records it keeps copies of what the views draw (the newest
 * pass's activations, every attention row so far), since a StepReport's
 * pointers die at the next pass.
 *
 * Going back is a deterministic replay: reset the cache, start a fresh
 * generator and re-run N-1 passes; the state reached is bit-identical to the
 * one the forward steps reached. Switching the cache spec or the model
 * rebuilds and replays to the same pass. Nothing here prints or exits. */
#ifndef KVSCOPE_SIM_SESSION_H
#define KVSCOPE_SIM_SESSION_H

#include <stddef.h>

#include "kv/cache.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/structure.h"
#include "stats/counters.h"
#include "text/tokenizer.h"

/* How a session learns what each pass would cost without a cache. */
typedef enum {
    UNCACHED_AUTO = 0, /* measured when the model is small enough, else formula */
    UNCACHED_MEASURED, /* run the uncached pass (model_forward over the whole sequence) beside it */
    UNCACHED_FORMULA,  /* closed form: token rows and projection FLOPs only (labelled so) */
} UncachedMode;

/* What a session is made of. session_init copies everything it keeps. */
typedef struct {
    Config cfg;            /* validated (config_validate) */
    const Kernels *kern;
    AttendAlgo attend;     /* attention weights are kept only by the naive forms */
    const char *cache_spec;
    const int *prompt;     /* [prompt_len] token ids below cfg.vocab (one sequence) */
    size_t prompt_len;
    GenOptions go;         /* keep_probs is decided by the session */
    UncachedMode uncached;
    /* Called after each layer of every pass when set (Model.on_layer): how far
     * a long pass has got; nonzero stops it, session_step then fails and the
     * session goes back to pass 0 (its replay stops at once if asked again). */
    int (*on_layer)(void *ctx, size_t layers_done, size_t n_layers);
    void *on_layer_ctx;
    const Structure *structure; /* optional (NULL or none: off): attention biases, copied and placed on
                                   the prompt by the session (decoder-only, standard attention) */
    size_t batch;          /* sequences run side by side (0 or 1: one, at most SESSION_MAX_BATCH). With more,
                              sequence 0 runs the prompt; 1 .. batch-2 run it with its last token changed
                              (a paged cache shares its full pages by prefix); the last is forked from
                              sequence 0 once the prompt is in (it shares every page, and a page is copied
                              on its first write). The views show sequence 0; counters cover the batch,
                              cached and uncached alike. */
} SessionSpec;

#define SESSION_MAX_BATCH 8

/* One forward pass, as recorded when it ran. */
typedef struct {
    size_t step;        /* pass number, from 0 */
    Phase phase;
    size_t n_new;       /* tokens this pass ran */
    size_t pos0;        /* position of the first of them */
    size_t context;     /* positions the last of them could see (the sequence so far) */
    size_t seen_min, seen_max; /* rows attention read for the last of them, fewest and most over the
                                  layers (fewer than context when the cache evicts); 0 when not counted */
    int token;          /* token this pass chose, or -1 (a prefill chunk that is not the last) */
    float token_logit;  /* the logit it was chosen by */
    Counters ctr;       /* the cached pass, exactly as generate() reports it */
    Counters unc;       /* the uncached equivalent (zero for a chunk that chooses nothing) */
    int unc_formula;    /* 1 when unc comes from the closed form (only rows and projection FLOPs) */
} StepRecord;

/* Copies of the newest pass's activations (sequence 0, the last layer). */
typedef struct {
    size_t n_new, pos0;
    float *x;      /* [n_new][d_model] embeddings of the tokens run */
    float *q;      /* [n_new][q_dim] queries (RoPE applied) */
    float *k, *v;  /* [n_new][kv_dim] the rows appended */
    float *att;    /* [n_new][q_dim] attention output per head, before W_o */
    float *logits; /* [vocab] of the last token */
} Snapshot;

typedef struct Session Session;

/* Build a session at pass 0 (nothing run, the cache empty). Fails with
 * ERR_USAGE on a bad cache spec or a prompt that does not fit, ERR_RUNTIME
 * when memory runs out; *out is NULL then. Free with session_free. */
int session_init(Session **out, const SessionSpec *spec, Err *e);
void session_free(Session *s);

/* Run the next pass. Returns 1 after a pass, 0 when generation is complete
 * (nothing changes), -1 on error (the session is then back at pass 0). */
int session_step(Session *s, Err *e);
/* Rewind one pass by replay. Returns 1, 0 at pass 0, -1 on error. */
int session_back(Session *s, Err *e);
/* Replay to pass n (at most the total); records before n are kept. */
int session_seek(Session *s, size_t n, Err *e);
/* Back to pass 0. */
int session_reset(Session *s, Err *e);

/* Use another cache, replayed to the same pass (records are re-made). On
 * failure the old cache stays and -1 is returned. */
int session_set_cache(Session *s, const char *spec, Err *e);
/* Use another model and prompt (a new spec with cache, attention and
 * generation options kept), replayed to the same pass or the new total,
 * whichever is smaller. On failure the old model stays. */
int session_set_model(Session *s, const Config *cfg, const Kernels *kern, const int *prompt, size_t prompt_len,
                      Err *e);

/* --- what the views read ------------------------------------------------ */

/* The spec the session runs; its pointers point into the session and live
 * as long as it (cache and model switches included). */
void session_spec(const Session *s, SessionSpec *out);
size_t session_steps(const Session *s);          /* passes run */
size_t session_total_steps(const Session *s);    /* passes the whole generation takes */
size_t session_positions(const Session *s);      /* positions the whole generation reaches */
const StepRecord *session_record(const Session *s, size_t i); /* i < session_steps, else NULL */
/* Sums over the passes run: the cached run and its uncached equivalent
 * (gauges: the newest pass's). *formula is set when any pass used it. */
void session_totals(const Session *s, Counters *cached, Counters *uncached, int *formula);
const Model *session_model(const Session *s);
/* The model's tokenizer (to show tokens as text), or NULL for one without. */
const Tokenizer *session_tokenizer(const Session *s);
const KvCache *session_cache(const Session *s);
const char *session_cache_spec(const Session *s);
AttendAlgo session_attend(const Session *s);
int session_uncached_measured(const Session *s); /* 1 measured, 0 formula */
/* Tokens so far: the prompt, then every token chosen. */
const int *session_tokens(const Session *s, size_t *len);
size_t session_prompt_len(const Session *s);
size_t session_batch(const Session *s);          /* sequences run, >= 1; the last is a fork when > 1 */
/* The newest pass's activations; NULL at pass 0. */
const Snapshot *session_snapshot(const Session *s);
/* Logits that chose generated token g (g < tokens generated); NULL if not kept. */
const float *session_logits(const Session *s, size_t g);

/* The attention weights of query position qpos over key positions
 * 0 .. qpos for (layer, head): NULL when not kept (a flash form, or too
 * large) or when qpos has not run yet. Positions a sliding window hides
 * read 0. */
const float *session_attn_row(const Session *s, size_t layer, size_t head, size_t qpos);
/* 1 when the session keeps attention weights at all. */
int session_has_attn(const Session *s);

/* Decode the cached K and V rows of (layer, kv head) at position pos into
 * k and v ([head_dim] each). Returns 0, or -1 when the cache holds no row
 * there. */
int session_cache_row(const Session *s, size_t layer, size_t kv_head, size_t pos, float *k, float *v);

/* The attention scores q . k / sqrt(head_dim) (before softmax) of the
 * newest pass's query t for query head `head` of the last layer, over key
 * positions 0 .. pos0 + t read back from the cache; into out[0 .. cap).
 * Returns how many were written (0 at pass 0 or when t is out of range). */
size_t session_scores(const Session *s, size_t t, size_t head, float *out, size_t cap);

/* The closed-form uncached equivalent of a pass over `context` positions:
 * token rows and projection FLOPs (Q, K, V, O), the source document's
 * formula generalised to GQA widths. Exposed so a test can hold it against
 * the measured pass. */
void session_uncached_formula(const Config *c, size_t context, Counters *out);

#endif
