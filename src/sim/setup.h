/* setup.h: a model and a prompt from what a user asked for: the model
 * options every command shares (--model, --set, --shared, --isa) and the
 * prompt options (--prompt, --prompt-len, --batch, --prompt-seed), turned
 * into a validated Config, loaded weights and token ids. The commands parse
 * the words (app/cli.c); the plot makers fill the same structs in code. */
#ifndef KVSCOPE_SIM_SETUP_H
#define KVSCOPE_SIM_SETUP_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "text/tokenizer.h"
#include "util/err.h"

/* The options that choose and shape a model. */
typedef struct {
    const char *model;  /* name in data/models, or an .ini path; default set by the command */
    const char *isa;    /* kernels: ref, auto (NULL = auto) */
    const char *sets[32];
    size_t n_sets;
    int shared;         /* --shared: one set of layer weights for all layers, vocab capped */
    const char *weights; /* --weights: a GGUF or llama2.c checkpoint (NULL = none); its shape replaces
                            --model's, --set still applies (model/checkpoint.h) */
    int int_dot;        /* --int-dot[=ROUND|off]: INT_DOT_EVEN, INT_DOT_REF or INT_DOT_OFF (setup_int_dot) */
    int int_dot_set;    /* --int-dot given; without it, the model's default (setup_int_dot) */
    int allow_nan;      /* --allow-nan: a checkpoint's NaN or infinite weights are run, not refused */
} ModelOpts;

/* The prompt: text (through the model's tokenizer), explicit ids ("1,2,3",
 * or "1,2;3,4" for a batch of two), or a length of seeded random ids (a
 * different prompt per sequence). */
typedef struct {
    const char *text;   /* --prompt */
    const char *ids;    /* --prompt-ids */
    size_t len;         /* --prompt-len (used when ids is NULL) */
    size_t batch;       /* --batch; with ids, a single prompt is repeated */
    uint64_t seed;      /* --prompt-seed */
    size_t max_len;     /* the longest random prompt the command can run: 0 = the model's max_seq_len;
                           a command whose cache runs past the context sets SETUP_MAX_PROMPT */
} PromptOpts;

/* The longest random prompt kvscope draws, for a cache that runs past the
 * model's context (a shift cache): 16 Mi tokens, 64 MiB of ids. */
#define SETUP_MAX_PROMPT ((size_t)1 << 24)

/* Load and validate the config the options name (with --set applied). */
int setup_load_config(const ModelOpts *mo, Config *cfg, Err *e);

/* Fail (ERR_USAGE) when `bytes` of `what` exceed this machine's memory. */
int setup_check_memory(size_t bytes, const char *what, Err *e);

/* Fail (ERR_USAGE) when `batch` sequences could never run on this machine:
 * the weights plus, for each sequence, an f32 cache of max_seq_len
 * positions (what an exact cache holds when it is full). setup_make_prompt
 * checks it before it allocates anything. */
int setup_check_batch(const Config *cfg, size_t batch, Err *e);

/* Apply --int-dot to a loaded model. Not given: a checkpoint's q8_0/q4_0
 * matrices by integer dots (Model.mat_dot, its default), the cache's keys
 * exact. --int-dot[=even|ref]: both by integer dots, the activation rounded
 * so. --int-dot=off: neither, the f32 activation throughout. */
void setup_int_dot(Model *m, const ModelOpts *mo);

/* The weights of a loaded config on kernels isa (NULL = auto), after the
 * memory check (weights + extra_bytes). */
int setup_model(const Config *cfg, const char *isa, size_t extra_bytes, Model *m, Err *e);

/* Config, memory check (weights + extra_bytes) and weights, in one go. */
int setup_load_model(const ModelOpts *mo, size_t extra_bytes, Model *m, Err *e);

/* Whether the prompt was given (text or ids) rather than drawn at random. */
static inline int setup_prompt_given(const PromptOpts *po)
{
    return po->text || po->ids;
}

/* Where setup_make_prompt takes the prompt of cfg from, given po. */
typedef enum { PROMPT_TEXT, PROMPT_IDS, PROMPT_DEFAULT_TEXT, PROMPT_RANDOM_IDS } PromptSource;
PromptSource setup_prompt_source(const PromptOpts *po, const Config *cfg);
/* "given (--prompt)", ..., "random ids, gsl mt19937": for reports. */
const char *setup_prompt_source_name(PromptSource s);

/* The tokenizer cfg names into *out, checked against its vocabulary; *out
 * is NULL, and 0 returned, for a model without one (ids only). */
int setup_tokenizer(const Config *cfg, Tokenizer **out, Err *e);

/* A text file through cfg's tokenizer (files_read_text's rules, at most
 * max_bytes): ids [*n] and, when bytes is not NULL, the bytes each token
 * stands for (*bytes [*n], for bits per byte); *text_len the file's length;
 * the tokenizer's name into tok_name [cap] when it is not NULL. The caller
 * frees *ids and *bytes. ERR_USAGE for a model without a tokenizer. */
int setup_text_ids(const Config *cfg, const char *path, size_t max_bytes, int **ids, size_t **bytes, size_t *n,
                   size_t *text_len, char *tok_name, size_t cap, Err *e);

/* Build the prompts: *out is [*batch][*len] ids below cfg->vocab (caller
 * frees); text is encoded by cfg's tokenizer and repeated for a batch. A
 * random prompt longer than po->max_len (or the model's positions), or
 * beyond this machine's memory, is refused (ERR_USAGE) before it is drawn. */
int setup_make_prompt(const PromptOpts *po, const Config *cfg, int **out, size_t *batch, size_t *len, Err *e);

#endif
