#include "sim/session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/setup.h"
#include "util/clock.h"

/* Attention weights kept for the heatmaps: [n_layers][n_heads][P][P] floats
 * for P positions, when that fits under this many floats. */
#define ATTN_HISTORY_MAX_FLOATS ((size_t)4 << 20)
/* The generator's per-pass attention weights (ForwardState.probs). */
#define PROBS_MAX_FLOATS ((size_t)16 << 20)
/* Logits of every chosen token, for the compare view. */
#define LOGITS_MAX_FLOATS ((size_t)16 << 20)
/* UNCACHED_AUTO measures when the longest uncached pass costs at most about
 * this many FLOPs (2 per parameter per token, the weights' share). */
#define MEASURED_MAX_FLOPS 2e9

struct Session {
    SessionSpec spec;     /* spec.prompt and spec.cache_spec are not used: see below */
    char cache_spec[128];
    int *prompt;          /* [prompt_len], sequence 0's */
    int *prompts;         /* [batch][prompt_len] every sequence's (see SessionSpec.batch) */
    size_t batch;
    int *useq;            /* [batch][positions] the uncached pass's tokens (measured only) */
    Model *model;         /* heap: the generator holds its address */
    Tokenizer *tok;       /* the model's tokenizer, or NULL: ids only */
    KvCache *cache;
    Generator *gen;
    int keep_probs;
    int measured;
    size_t total_steps, positions;

    StepRecord *rec;      /* [rec_cap >= total_steps]; rec[i] valid for i < steps (and kept beyond while replaying back) */
    size_t rec_cap;
    size_t steps;

    Snapshot snap;        /* valid when steps > 0 */
    ForwardState ufs;     /* the uncached pass's scratch (measured only) */
    float *ulogits;       /* [vocab] */
    float *attn;          /* [n_layers][n_heads][positions][positions] or NULL */
    float *glogits;       /* [n_generate][vocab] or NULL */
    size_t *held;         /* [positions] scratch: the positions a layer's blocks hold */
    size_t *text;         /* [positions] scratch: their text positions (a shifting cache's differ) */
    KvCell *cells;        /* [positions] scratch: a shifting cache's cells, naming those */
    Structure *structure; /* heap (the model points at its bias), or NULL: none */
};

void session_uncached_formula(const Config *c, size_t context, Counters *out)
{
    memset(out, 0, sizeof *out);
    const uint64_t n = context, d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), L = c->n_layers;
    out->tokens_projected = n;
    out->flops_q = L * 2 * n * d * q;
    out->flops_k = L * 2 * n * d * kv;
    out->flops_v = L * 2 * n * d * kv;
    out->flops_o = L * 2 * n * q * d;
}

static size_t chunk_of(const SessionSpec *sp)
{
    size_t c = sp->go.chunk;
    return (c == 0 || c > sp->prompt_len) ? sp->prompt_len : c;
}

/* Passes of a run with cache c: the generator prefills in chunks no longer
 * than the cache's max_pass (a ring's pass, a shift's half context). */
static size_t steps_with(const SessionSpec *sp, const KvCache *c)
{
    size_t chunk = chunk_of(sp), max_pass = kv_max_pass(c);
    if (max_pass && chunk > max_pass)
        chunk = max_pass;
    return (sp->prompt_len + chunk - 1) / chunk + sp->go.n_generate - 1;
}

/* Room in s->rec for the passes of a run with cache c. */
static int rec_reserve(Session *s, size_t steps, Err *e)
{
    if (steps <= s->rec_cap)
        return 0;
    StepRecord *grown = realloc(s->rec, steps * sizeof *grown);
    if (!grown)
        return err_set(e, ERR_RUNTIME, "out of memory for the session's records");
    memset(grown + s->rec_cap, 0, (steps - s->rec_cap) * sizeof *grown);
    s->rec = grown;
    s->rec_cap = steps;
    return 0;
}

static void snapshot_free(Snapshot *sn)
{
    free(sn->x);
    free(sn->q);
    free(sn->k);
    free(sn->v);
    free(sn->att);
    free(sn->logits);
    memset(sn, 0, sizeof *sn);
}

void session_free(Session *s)
{
    if (!s)
        return;
    gen_free(s->gen);
    kv_free(s->cache);
    if (s->model) {
        model_free(s->model);
        free(s->model);
    }
    snapshot_free(&s->snap);
    forward_state_free(&s->ufs);
    free(s->ulogits);
    free(s->attn);
    free(s->glogits);
    free(s->held);
    free(s->text);
    free(s->cells);
    free(s->rec);
    free(s->prompt);
    free(s->prompts);
    free(s->useq);
    free(s->structure);
    tokenizer_free(s->tok);
    free(s);
}

/* A fresh generator over the emptied cache: pass 0. */
static int start(Session *s, Err *e)
{
    gen_free(s->gen);
    s->gen = NULL;
    kv_reset(s->cache);
    s->steps = 0;
    GenOptions go = s->spec.go;
    go.keep_probs = s->keep_probs;
    go.n_forks = s->batch > 1;
    return gen_init(&s->gen, s->model, s->cache, s->prompts, s->batch, s->spec.prompt_len, &go, e);
}

static int alloc_buffers(Session *s, Err *e)
{
    const Config *c = &s->model->cfg;
    const size_t rows = chunk_of(&s->spec), P = s->positions;
    Snapshot *sn = &s->snap;
    sn->x = malloc(rows * c->d_model * sizeof(float));
    sn->q = malloc(rows * config_q_dim(c) * sizeof(float));
    sn->k = malloc(rows * config_kv_dim(c) * sizeof(float));
    sn->v = malloc(rows * config_kv_dim(c) * sizeof(float));
    sn->att = malloc(rows * config_q_dim(c) * sizeof(float));
    sn->logits = malloc(c->vocab * sizeof(float));
    s->held = malloc(P * sizeof *s->held);
    s->text = malloc(P * sizeof *s->text);
    s->cells = malloc(P * sizeof *s->cells);
    if (!s->held || !s->text || !s->cells || !sn->x || !sn->q || !sn->k || !sn->v || !sn->att || !sn->logits)
        return err_set(e, ERR_RUNTIME, "out of memory for the session's records");
    if (rec_reserve(s, s->total_steps, e) < 0)
        return -1;
    if (s->keep_probs && c->n_layers * c->n_heads * P * P <= ATTN_HISTORY_MAX_FLOATS)
        s->attn = calloc(c->n_layers * c->n_heads * P * P, sizeof(float)); /* NULL: heatmaps say so */
    if (s->spec.go.n_generate * c->vocab <= LOGITS_MAX_FLOATS)
        s->glogits = malloc(s->spec.go.n_generate * c->vocab * sizeof(float));
    if (s->measured) {
        s->ulogits = malloc(s->batch * c->vocab * sizeof(float));
        s->useq = malloc(s->batch * P * sizeof(int));
        if (!s->ulogits || !s->useq || forward_state_init(&s->ufs, c, s->batch * P, 0, e) < 0)
            return err_set(e, ERR_RUNTIME, "out of memory for the uncached pass of %zu positions", P);
    }
    return 0;
}

/* A copy of st placed on the session's prompt, its bias handed to the model. */
static int use_structure(Session *s, const Structure *st, Err *e)
{
    const Config *c = &s->model->cfg;
    if (c->architecture != ARCH_DECODER || c->attention == ATTN_MLA)
        return err_set(e, ERR_USAGE, "--structure: model '%s' is %s; attention structure applies to decoder-only "
                       "models with standard attention", c->name,
                       c->attention == ATTN_MLA ? "an MLA model" : "encoder-decoder");
    if (!(s->structure = malloc(sizeof *s->structure)))
        return err_set(e, ERR_RUNTIME, "out of memory");
    *s->structure = *st;
    if (structure_place(s->structure, s->spec.prompt_len, e) < 0)
        return -1;
    s->model->bias = &s->structure->bias;
    return 0;
}

int session_init(Session **out, const SessionSpec *spec, Err *e)
{
    *out = NULL;
    const Config *c = &spec->cfg;
    if (spec->prompt_len == 0 || spec->go.n_generate == 0)
        return err_set(e, ERR_USAGE, "a session needs at least one prompt token and one token to generate");
    size_t need = generate_positions(spec->prompt_len, spec->go.n_generate);
    const int past = need > c->max_seq_len; /* only a shifting cache runs past the context, and no uncached pass */
    if (past && spec->uncached == UNCACHED_MEASURED)
        return err_set(e, ERR_USAGE, "a prompt of %zu plus %zu generated tokens needs %zu positions; model '%s' has "
                       "max_seq_len %zu, past which no uncached pass runs (--uncached formula)", spec->prompt_len,
                       spec->go.n_generate, need, c->name, c->max_seq_len);
    for (size_t i = 0; i < spec->prompt_len; i++)
        if (spec->prompt[i] < 0 || (size_t)spec->prompt[i] >= c->vocab)
            return err_set(e, ERR_USAGE, "prompt token %d is outside model '%s''s vocabulary 0..%zu",
                           spec->prompt[i], c->name, c->vocab - 1);

    Session *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(e, ERR_RUNTIME, "out of memory");
    s->spec = *spec;
    s->spec.prompt = NULL;
    s->spec.cache_spec = NULL;
    snprintf(s->cache_spec, sizeof s->cache_spec, "%s", spec->cache_spec ? spec->cache_spec : "contiguous");
    s->prompt = malloc(spec->prompt_len * sizeof(int));
    s->model = calloc(1, sizeof *s->model);
    if (!s->prompt || !s->model) {
        session_free(s);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    memcpy(s->prompt, spec->prompt, spec->prompt_len * sizeof(int));
    s->batch = spec->batch > 1 ? spec->batch : 1;
    if (s->batch > SESSION_MAX_BATCH) {
        session_free(s);
        return err_set(e, ERR_USAGE, "a session runs at most %d sequences, not %zu", SESSION_MAX_BATCH,
                       spec->batch);
    }
    if (!(s->prompts = malloc(s->batch * spec->prompt_len * sizeof(int)))) {
        session_free(s);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    for (size_t b = 0; b < s->batch; b++) { /* one prompt; the middle ones end in another token */
        int *row = s->prompts + b * spec->prompt_len;
        memcpy(row, spec->prompt, spec->prompt_len * sizeof(int));
        if (b > 0 && b + 1 < s->batch)
            row[spec->prompt_len - 1] = (int)(((size_t)row[spec->prompt_len - 1] + b) % c->vocab);
    }
    if (setup_tokenizer(c, &s->tok, e) < 0) {
        session_free(s);
        return -1;
    }
    if (model_init(s->model, c, spec->kern, e) < 0) {
        free(s->model);
        s->model = NULL;
        session_free(s);
        return -1;
    }
    s->model->attend = spec->attend;
    s->model->on_layer = spec->on_layer;
    s->model->on_layer_ctx = spec->on_layer_ctx;
    s->spec.structure = NULL;
    if (spec->structure && structure_on(spec->structure) && use_structure(s, spec->structure, e) < 0) {
        session_free(s);
        return -1;
    }
    s->positions = need;
    size_t chunk = chunk_of(spec); /* the longest pass: a cache may ask for shorter ones (steps_with) */
    s->keep_probs = spec->attend != ATTEND_FLASH &&
                    c->n_layers * c->n_heads * chunk * c->max_seq_len <= PROBS_MAX_FLOATS;
    double longest = 2.0 * (double)model_param_floats(c) * (double)need * (double)s->batch;
    s->measured = spec->uncached == UNCACHED_MEASURED ||
                  (spec->uncached == UNCACHED_AUTO && longest <= MEASURED_MAX_FLOPS && !past);

    KvGeometry geo = model_kv_geometry(s->model, s->batch);
    s->cache = kv_open(s->cache_spec, &geo, e);
    if (s->cache && past && !kv_shifts(s->cache)) {
        err_set(e, ERR_USAGE, "a prompt of %zu plus %zu generated tokens needs %zu positions; model '%s' has "
                "max_seq_len %zu (a shift cache runs past it)", spec->prompt_len, spec->go.n_generate, need, c->name,
                c->max_seq_len);
        session_free(s);
        return -1;
    }
    if (s->cache)
        s->total_steps = steps_with(&s->spec, s->cache);
    if (!s->cache || alloc_buffers(s, e) < 0 || start(s, e) < 0) {
        session_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

/* The text positions of the first `held` rows of a layer into s->text. A
 * shifting cache's rows sit at its own positions; its held cells, in
 * order, are their text positions (both run in position order). */
static void text_positions(Session *s, size_t layer, size_t held)
{
    if (!kv_shifts(s->cache)) {
        memcpy(s->text, s->held, held * sizeof *s->text);
        return;
    }
    kv_cells(s->cache, layer, 0, s->cells, s->positions);
    size_t k = 0;
    for (size_t p = 0; p < s->positions && k < held; p++)
        if (s->cells[p].state != CELL_EMPTY && s->cells[p].state != CELL_EVICTED)
            s->text[k++] = p;
    for (; k < held; k++) /* not reached: a cell per row */
        s->text[k] = s->positions;
}

/* Keep the attention rows of the pass just run (sequence 0, every layer and
 * head). Weight j of a query belongs to its j-th visible row: the rows the
 * cache's blocks hold, in block order, at positions <= the query's (and
 * inside a sliding window), which is how attention walked them, in the
 * cache's positions; it is kept at the row's text position. A cache that
 * evicted a position leaves its weight 0. */
static void keep_attention(Session *s, const StepReport *r)
{
    const ForwardState *fs = r->state;
    if (!s->attn || !fs->probs)
        return;
    const Config *c = &s->model->cfg;
    const size_t P = s->positions, W = c->sliding_window, shift = kv_pos_shift(s->cache, 0);
    for (size_t l = 0; l < c->n_layers; l++) {
        size_t held = 0, nb = kv_n_blocks(s->cache, l, 0);
        for (size_t i = 0; i < nb; i++) {
            KvBlock b;
            kv_block(s->cache, l, 0, 0, i, &b);
            for (size_t k = 0; k < b.n && held < P; k++)
                s->held[held++] = b.pos + k;
        }
        text_positions(s, l, held);
        for (size_t t = 0; t < r->n_new; t++) {
            const size_t qpos = r->pos0 + t, qat = qpos - shift; /* the query's text and cache positions */
            for (size_t h = 0; h < c->n_heads; h++) {
                const float *src = fs->probs + ((l * c->n_heads + h) * fs->max_q + t) * c->max_seq_len;
                float *dst = s->attn + ((l * c->n_heads + h) * P + qpos) * P;
                memset(dst, 0, P * sizeof(float));
                size_t j = 0;
                for (size_t k = 0; k < held; k++) {
                    size_t p = s->held[k];
                    if (p <= qat && (!W || p + W > qat) && s->text[k] < P)
                        dst[s->text[k]] = src[j++];
                }
            }
        }
    }
}

static void keep_snapshot(Session *s, const StepReport *r)
{
    const Config *c = &s->model->cfg;
    const ForwardState *fs = r->state;
    Snapshot *sn = &s->snap;
    size_t len;
    const int *seq = gen_sequence(s->gen, 0, &len);
    const size_t n = r->n_new, qd = config_q_dim(c), kvd = config_kv_dim(c);
    sn->n_new = n;
    sn->pos0 = r->pos0;
    for (size_t t = 0; t < n; t++)
        memcpy(sn->x + t * c->d_model, s->model->embed + (size_t)seq[r->pos0 + t] * c->d_model,
               c->d_model * sizeof(float));
    memcpy(sn->q, fs->q, n * qd * sizeof(float));
    memcpy(sn->k, fs->k, n * kvd * sizeof(float));
    memcpy(sn->v, fs->v, n * kvd * sizeof(float));
    memcpy(sn->att, fs->att, n * qd * sizeof(float));
    memcpy(sn->logits, r->logits, c->vocab * sizeof(float));
}

/* The uncached pass equivalent to r: the whole sequence up to r's last
 * token, from position 0, no cache (what generate(NULL) runs). */
static int uncached_pass(Session *s, const StepReport *r, Counters *out, Err *e)
{
    memset(out, 0, sizeof *out);
    if (!s->measured) {
        Counters one;
        session_uncached_formula(&s->model->cfg, r->context, &one);
        for (size_t b = 0; b < s->batch; b++) /* every sequence re-runs its whole length */
            counters_add(out, &one);
        return 0;
    }
    size_t len;
    for (size_t b = 0; b < s->batch; b++) /* [batch][context], as model_forward reads a batch */
        memcpy(s->useq + b * r->context, gen_sequence(s->gen, b, &len), r->context * sizeof(int));
    double t0 = clock_seconds();
    if (model_forward(s->model, &s->ufs, NULL, s->useq, s->batch, r->context, 0, s->ulogits, out, e) < 0)
        return err_wrap(e, "uncached pass");
    out->seconds = clock_seconds() - t0;
    return 0;
}

/* Run one pass; record it when `record`. 1 ran, 0 complete, -1 error. */
static int advance(Session *s, int record, Err *e)
{
    StepReport r;
    int rc = gen_step(s->gen, &r, e);
    if (rc <= 0)
        return rc;
    const Config *c = &s->model->cfg;
    keep_attention(s, &r);
    keep_snapshot(s, &r);
    int token = r.sampled ? r.sampled[0] : -1;
    if (r.sampled && s->glogits)
        memcpy(s->glogits + (gen_generated(s->gen) - 1) * c->vocab, r.logits, c->vocab * sizeof(float));
    if (record && s->steps >= s->rec_cap)
        return err_set(e, ERR_RUNTIME, "session: pass %zu beyond the %zu counted", s->steps + 1, s->rec_cap);
    if (record) {
        StepRecord *rec = &s->rec[s->steps];
        *rec = (StepRecord){
            .step = r.step, .phase = r.phase, .n_new = r.n_new, .pos0 = r.pos0, .context = r.context,
            .seen_min = r.state ? r.state->seen_min : 0, .seen_max = r.state ? r.state->seen_max : 0,
            .token = token, .token_logit = token >= 0 ? r.logits[token] : 0.0f, .ctr = r.ctr,
            .unc_formula = !s->measured,
        };
        if (r.sampled && uncached_pass(s, &r, &rec->unc, e) < 0)
            return -1;
    }
    s->steps++;
    return 1;
}

/* Replay from pass 0 to pass n (or the end). */
static int replay(Session *s, size_t n, int record, Err *e)
{
    if (start(s, e) < 0)
        return -1;
    while (s->steps < n) {
        int rc = advance(s, record, e);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
    }
    return 0;
}

int session_step(Session *s, Err *e)
{
    size_t before = s->steps;
    int rc = advance(s, 1, e);
    if (rc < 0) {
        Err ignored = { 0 };
        if (replay(s, before, 0, &ignored) < 0)
            (void)start(s, &ignored);
    }
    return rc;
}

int session_seek(Session *s, size_t n, Err *e)
{
    if (n > s->total_steps)
        n = s->total_steps;
    if (n < s->steps)
        return replay(s, n, 0, e);
    while (s->steps < n)
        if (session_step(s, e) < 0)
            return -1;
    return 0;
}

int session_back(Session *s, Err *e)
{
    if (s->steps == 0)
        return 0;
    return replay(s, s->steps - 1, 0, e) < 0 ? -1 : 1;
}

int session_reset(Session *s, Err *e)
{
    return start(s, e);
}

int session_set_cache(Session *s, const char *spec, Err *e)
{
    KvGeometry geo = model_kv_geometry(s->model, s->batch);
    KvCache *fresh = kv_open(spec, &geo, e);
    if (!fresh)
        return -1;
    KvCache *old = s->cache;
    size_t at = s->steps, old_steps = s->total_steps, steps = steps_with(&s->spec, fresh);
    if (rec_reserve(s, steps, e) < 0) {
        kv_free(fresh);
        return -1;
    }
    s->cache = fresh;
    s->total_steps = steps;
    if (replay(s, at < steps ? at : steps, 1, e) < 0) {
        Err ignored = { 0 };
        s->cache = old;
        s->total_steps = old_steps;
        kv_free(fresh);
        (void)replay(s, at, 1, &ignored);
        return -1;
    }
    kv_free(old);
    snprintf(s->cache_spec, sizeof s->cache_spec, "%s", spec);
    return 0;
}

int session_set_model(Session *s, const Config *cfg, const Kernels *kern, const int *prompt, size_t prompt_len,
                      Err *e)
{
    SessionSpec sp = s->spec;
    sp.cfg = *cfg;
    sp.kern = kern;
    sp.prompt = prompt;
    sp.prompt_len = prompt_len;
    sp.cache_spec = s->cache_spec;
    sp.structure = s->structure; /* placed again on the new prompt */
    Session *n;
    if (session_init(&n, &sp, e) < 0)
        return -1;
    if (session_seek(n, s->steps, e) < 0) {
        session_free(n);
        return -1;
    }
    /* swap contents so the caller's pointer now holds the new session; every
     * pointer inside is to the heap, never into the struct */
    Session tmp = *s;
    *s = *n;
    *n = tmp;
    session_free(n);
    return 0;
}

void session_spec(const Session *s, SessionSpec *out)
{
    *out = s->spec;
    out->cfg = s->model->cfg;
    out->kern = s->model->kern;
    out->attend = s->model->attend;
    out->prompt = s->prompt;
    out->cache_spec = s->cache_spec;
    out->structure = s->structure;
}

size_t session_steps(const Session *s) { return s->steps; }
size_t session_total_steps(const Session *s) { return s->total_steps; }
size_t session_positions(const Session *s) { return s->positions; }
const Model *session_model(const Session *s) { return s->model; }
const Tokenizer *session_tokenizer(const Session *s) { return s->tok; }
const KvCache *session_cache(const Session *s) { return s->cache; }
const char *session_cache_spec(const Session *s) { return s->cache_spec; }
AttendAlgo session_attend(const Session *s) { return s->model->attend; }
int session_uncached_measured(const Session *s) { return s->measured; }
size_t session_prompt_len(const Session *s) { return s->spec.prompt_len; }
size_t session_batch(const Session *s) { return s->batch; }
int session_has_attn(const Session *s) { return s->attn != NULL; }

const StepRecord *session_record(const Session *s, size_t i)
{
    return i < s->steps ? &s->rec[i] : NULL;
}

void session_totals(const Session *s, Counters *cached, Counters *uncached, int *formula)
{
    memset(cached, 0, sizeof *cached);
    memset(uncached, 0, sizeof *uncached);
    *formula = 0;
    for (size_t i = 0; i < s->steps; i++) {
        counters_add(cached, &s->rec[i].ctr);
        if (s->rec[i].token >= 0) {
            counters_add(uncached, &s->rec[i].unc);
            *formula |= s->rec[i].unc_formula;
        }
    }
}

const int *session_tokens(const Session *s, size_t *len)
{
    return gen_sequence(s->gen, 0, len);
}

const Snapshot *session_snapshot(const Session *s)
{
    return s->steps ? &s->snap : NULL;
}

const float *session_logits(const Session *s, size_t g)
{
    if (!s->glogits || g >= gen_generated(s->gen))
        return NULL;
    return s->glogits + g * s->model->cfg.vocab;
}

const float *session_attn_row(const Session *s, size_t layer, size_t head, size_t qpos)
{
    const Config *c = &s->model->cfg;
    if (!s->attn || s->steps == 0 || layer >= c->n_layers || head >= c->n_heads)
        return NULL;
    const StepRecord *last = &s->rec[s->steps - 1];
    if (qpos >= last->context || qpos >= s->positions)
        return NULL;
    return s->attn + ((layer * c->n_heads + head) * s->positions + qpos) * s->positions;
}

int session_cache_row(const Session *s, size_t layer, size_t kv_head, size_t pos, float *k, float *v)
{
    const KvCache *c = s->cache;
    size_t nb = kv_n_blocks(c, layer, 0);
    for (size_t i = 0; i < nb; i++) {
        KvBlock b;
        kv_block(c, layer, 0, kv_head, i, &b);
        if (pos < b.pos || pos >= b.pos + b.n)
            continue;
        block_decode_row(s->model->kern->codec, &b, pos - b.pos, c->geo.head_dim, k, v);
        return 0;
    }
    return -1;
}

size_t session_scores(const Session *s, size_t t, size_t head, float *out, size_t cap)
{
    const Config *c = &s->model->cfg;
    if (s->steps == 0 || t >= s->snap.n_new || head >= c->n_heads)
        return 0;
    const size_t hd = c->head_dim, layer = c->n_layers - 1, kvh = head / (c->n_heads / c->n_kv_heads);
    const size_t qpos = s->snap.pos0 + t;
    const float *q = s->snap.q + t * config_q_dim(c) + head * hd;
    float *k = malloc(2 * hd * sizeof(float));
    if (!k)
        return 0;
    size_t n = 0;
    for (size_t j = 0; j <= qpos && n < cap; j++) {
        if (session_cache_row(s, layer, kvh, j, k, k + hd) < 0)
            continue;
        float dot = 0;
        for (size_t i = 0; i < hd; i++)
            dot += q[i] * k[i];
        out[n++] = dot / sqrtf((float)hd);
    }
    free(k);
    return n;
}
