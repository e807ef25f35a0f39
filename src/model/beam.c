/* beam.c: beam search with and without a cache (see beam.h). */
#include "model/beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/encdec.h"
#include "util/clock.h"

/* One extension of a beam by a token. */
typedef struct {
    double logp; /* the beam's summed log-probability plus the token's */
    int beam;    /* rank of the beam it extends, in this step's order */
    int token;
} Cand;

/* The search's state. Beam b of the current step: tokens seq[b][0 .. pos]
 * (BOS first), summed log-probability logp[b], cache sequence slot[b]. */
typedef struct {
    const Model *m;
    KvCache *self;
    size_t W, V, T;
    int eos;
    double alpha;
    size_t n;                 /* beams of the current step */
    int *seq, *seq_next;      /* [W][T + 1] */
    double *logp, *logp_next; /* [W] */
    size_t *slot, *slot_next; /* [W] */
    int *feed;                /* [W][T] tokens of one pass */
    float *logits;            /* [W][V] */
    double *lp;               /* [V] log-probabilities of one beam */
    Cand *top;                /* [2W] best extensions, best first */
    int *parent, *token;      /* [W] the extensions kept */
    double *kept_logp;        /* [W] */
    size_t *children;         /* [W] extensions kept per beam */
    unsigned char *held;      /* [W] slots holding a beam */
    Hypothesis *pool;         /* [3W]: finished, then the live ones at max_len */
    size_t n_pool;
} Search;

static void search_free(Search *s)
{
    free(s->seq), free(s->seq_next), free(s->logp), free(s->logp_next), free(s->slot), free(s->slot_next);
    free(s->feed), free(s->logits), free(s->lp), free(s->top), free(s->parent), free(s->token);
    free(s->kept_logp), free(s->children), free(s->held);
    for (size_t i = 0; s->pool && i < s->n_pool; i++)
        free(s->pool[i].tokens);
    free(s->pool);
}

static int search_alloc(Search *s, Err *e)
{
    const size_t W = s->W, T = s->T;
    s->seq = malloc(W * (T + 1) * sizeof *s->seq);
    s->seq_next = malloc(W * (T + 1) * sizeof *s->seq_next);
    s->logp = calloc(W, sizeof *s->logp);
    s->logp_next = calloc(W, sizeof *s->logp_next);
    s->slot = calloc(W, sizeof *s->slot);
    s->slot_next = calloc(W, sizeof *s->slot_next);
    s->feed = malloc(W * T * sizeof *s->feed);
    s->logits = malloc(W * s->V * sizeof *s->logits);
    s->lp = malloc(s->V * sizeof *s->lp);
    s->top = malloc(2 * W * sizeof *s->top);
    s->parent = malloc(W * sizeof *s->parent);
    s->token = malloc(W * sizeof *s->token);
    s->kept_logp = malloc(W * sizeof *s->kept_logp);
    s->children = calloc(W, sizeof *s->children);
    s->held = calloc(W, 1);
    s->pool = calloc(3 * W, sizeof *s->pool);
    if (!s->seq || !s->seq_next || !s->logp || !s->logp_next || !s->slot || !s->slot_next || !s->feed ||
        !s->logits || !s->lp || !s->top || !s->parent || !s->token || !s->kept_logp || !s->children || !s->held ||
        !s->pool)
        return err_set(e, ERR_RUNTIME, "out of memory for a beam search of width %zu", W);
    return 0;
}

/* lp[v] = log softmax(logits)[v], in double. */
static void log_softmax(const float *logits, size_t V, double *lp)
{
    double mx = -INFINITY, sum = 0;
    for (size_t v = 0; v < V; v++)
        mx = logits[v] > mx ? logits[v] : mx;
    for (size_t v = 0; v < V; v++)
        sum += exp((double)logits[v] - mx);
    double lse = mx + log(sum);
    for (size_t v = 0; v < V; v++)
        lp[v] = (double)logits[v] - lse;
}

/* a ranks before b: higher log-probability, then lower beam, then lower token. */
static int cand_before(const Cand *a, const Cand *b)
{
    if (a->logp != b->logp)
        return a->logp > b->logp;
    if (a->beam != b->beam)
        return a->beam < b->beam;
    return a->token < b->token;
}

/* The best k extensions of the current beams into s->top; returns how many. */
static size_t select_top(Search *s, size_t k)
{
    size_t n_top = 0;
    for (size_t b = 0; b < s->n; b++) {
        log_softmax(s->logits + b * s->V, s->V, s->lp);
        for (size_t v = 0; v < s->V; v++) {
            Cand c = { s->logp[b] + s->lp[v], (int)b, (int)v };
            if (n_top == k && !cand_before(&c, &s->top[k - 1]))
                continue;
            size_t i = n_top < k ? n_top++ : k - 1; /* the last is dropped when full */
            while (i > 0 && cand_before(&c, &s->top[i - 1])) {
                s->top[i] = s->top[i - 1];
                i--;
            }
            s->top[i] = c;
        }
    }
    return n_top;
}

/* Add a hypothesis to the pool: the target row (BOS, then n_prev tokens)
 * extended by `token`, or as it is when token < 0. */
static int pool_add(Search *s, const int *row, size_t n_prev, int token, double logp, int finished, Err *e)
{
    Hypothesis *h = &s->pool[s->n_pool];
    size_t len = n_prev + (token >= 0);
    h->tokens = malloc((len ? len : 1) * sizeof *h->tokens);
    if (!h->tokens)
        return err_set(e, ERR_RUNTIME, "out of memory for a hypothesis");
    memcpy(h->tokens, row + 1, n_prev * sizeof *h->tokens);
    if (token >= 0)
        h->tokens[n_prev] = token;
    h->len = len;
    h->logp = logp;
    h->score = len ? logp / pow((double)len, s->alpha) : logp;
    h->finished = finished;
    s->n_pool++;
    return 0;
}

/* Give the next beams their cache slots: drop the slots of beams with no
 * extension, keep a beam's slot for its first extension, fork it for the
 * others. Fills s->slot_next; counts into *forks, *drops, ctr. */
static int reorder(Search *s, CrossCache *cross, size_t n_kept, size_t *forks, size_t *drops, Counters *ctr,
                   Err *e)
{
    memset(s->children, 0, s->W * sizeof *s->children);
    for (size_t j = 0; j < n_kept; j++)
        s->children[s->parent[j]]++;
    for (size_t b = 0; b < s->n; b++)
        if (s->children[b] == 0) {
            kv_drop(s->self, s->slot[b]);
            cross_cache_release(cross);
            s->held[s->slot[b]] = 0;
            (*drops)++;
        }
    for (size_t b = 0; b < s->n; b++)
        s->children[b] = 0; /* now: extensions given a slot so far */
    for (size_t j = 0; j < n_kept; j++) {
        size_t p = (size_t)s->parent[j];
        if (s->children[p]++ == 0) {
            s->slot_next[j] = s->slot[p];
            continue;
        }
        size_t f = 0;
        while (f < s->W && s->held[f])
            f++;
        if (f == s->W) /* cannot happen: W slots, at most W beams */
            return err_set(e, ERR_RUNTIME, "beam search: no free cache sequence");
        if (kv_fork(s->self, s->slot[p], f, ctr, e) < 0)
            return err_wrap(e, "beam search: fork");
        s->held[f] = 1;
        cross_cache_acquire(cross);
        s->slot_next[j] = f;
        (*forks)++;
    }
    return 0;
}

/* Rank the pool by score (stable: on a tie the earlier added first) and
 * hand the best W to out. */
static int finish(Search *s, BeamResult *out, Err *e)
{
    for (size_t i = 1; i < s->n_pool; i++) {
        Hypothesis h = s->pool[i];
        size_t j = i;
        while (j > 0 && s->pool[j - 1].score < h.score) {
            s->pool[j] = s->pool[j - 1];
            j--;
        }
        s->pool[j] = h;
    }
    size_t n = s->n_pool < s->W ? s->n_pool : s->W;
    out->hyps = calloc(n ? n : 1, sizeof *out->hyps);
    if (!out->hyps)
        return err_set(e, ERR_RUNTIME, "out of memory");
    memcpy(out->hyps, s->pool, n * sizeof *out->hyps);
    for (size_t i = n; i < s->n_pool; i++)
        free(s->pool[i].tokens);
    s->n_pool = 0; /* owned by out now */
    out->n = n;
    return 0;
}

static int check_options(const Model *m, const KvCache *self, const BeamOptions *o, Err *e)
{
    const Config *c = &m->cfg;
    if (o->width == 0)
        return err_set(e, ERR_USAGE, "beam search: the width must be at least 1");
    if (o->max_len == 0 || o->max_len > c->max_seq_len)
        return err_set(e, ERR_USAGE, "beam search: %zu target tokens; model '%s' has max_seq_len %zu (1 .. %zu)",
                       o->max_len, c->name, c->max_seq_len, c->max_seq_len);
    if (!(o->alpha >= 0 && o->alpha <= 10))
        return err_set(e, ERR_USAGE, "beam search: length normalisation alpha must be in [0, 10]");
    if (o->width > 4096)
        return err_set(e, ERR_USAGE, "beam search: width %zu is beyond kvscope's limit of 4096", o->width);
    if (self && (self->geo.n_seqs < o->width || self->geo.max_seq_len < o->max_len))
        return err_set(e, ERR_RUNTIME, "beam search: the cache holds %zu sequences of %zu; width %zu of %zu "
                       "needs more", self->geo.n_seqs, self->geo.max_seq_len, o->width, o->max_len);
    return 0;
}

/* The logits of every beam's next token at position pos into s->logits:
 * with a cache, one new row per beam; without, each beam's whole target. */
static int decode_step(Search *s, EncDec *ed, CrossCache *cross, size_t pos, BeamStep *st, Err *e)
{
    if (s->self) {
        for (size_t b = 0; b < s->n; b++)
            s->feed[b] = s->seq[b * (s->T + 1) + pos];
        if (encdec_decode(ed, s->self, cross, s->slot, s->feed, s->n, pos, s->logits, &st->ctr, e) < 0)
            return -1;
        st->self_bytes_used = kv_bytes_used(s->self);
        st->self_bytes_reserved = kv_bytes_reserved(s->self);
        return 0;
    }
    for (size_t b = 0; b < s->n; b++)
        memcpy(s->feed + b * (pos + 1), s->seq + b * (s->T + 1), (pos + 1) * sizeof *s->feed);
    return encdec_decode_uncached(ed, s->feed, s->n, pos + 1, s->logits, &st->ctr, e);
}

/* The best k_top extensions: EOS ones finish (into the pool), the first W
 * others go on (parent, token, kept_logp). Returns how many go on, or -1. */
static long choose(Search *s, size_t k_top, size_t pos, Err *e)
{
    size_t n_top = select_top(s, k_top < s->n * s->V ? k_top : s->n * s->V), n_kept = 0;
    for (size_t i = 0; i < n_top && n_kept < s->W; i++) {
        const Cand *cd = &s->top[i];
        if (cd->token == s->eos) {
            if (pool_add(s, s->seq + (size_t)cd->beam * (s->T + 1), pos, cd->token, cd->logp, 1, e) < 0)
                return -1;
            continue;
        }
        s->parent[n_kept] = cd->beam, s->token[n_kept] = cd->token, s->kept_logp[n_kept] = cd->logp;
        n_kept++;
    }
    return (long)n_kept;
}

/* The kept extensions' token rows and log-probabilities, for the next step. */
static void extend(Search *s, size_t n_kept, size_t pos)
{
    for (size_t j = 0; j < n_kept; j++) {
        int *dst = s->seq_next + j * (s->T + 1);
        memcpy(dst, s->seq + (size_t)s->parent[j] * (s->T + 1), (pos + 1) * sizeof *dst);
        dst[pos + 1] = s->token[j];
        s->logp_next[j] = s->kept_logp[j];
    }
}

/* The next step's beams are the kept extensions. */
static void advance(Search *s, size_t n_kept)
{
    int *ti = s->seq;
    s->seq = s->seq_next, s->seq_next = ti;
    double *td = s->logp;
    s->logp = s->logp_next, s->logp_next = td;
    size_t *tz = s->slot;
    s->slot = s->slot_next, s->slot_next = tz;
    s->n = n_kept;
}

/* What step st reports beyond its counters, and the run's totals. */
static void record_step(const Search *s, const CrossCache *cross, BeamStep *st, BeamResult *out)
{
    st->ctr.cache_bytes_used = st->self_bytes_used;
    st->ctr.cache_bytes_reserved = st->self_bytes_reserved;
    st->parent = s->parent, st->token = s->token, st->logp = s->kept_logp;
    if (s->self) {
        kv_stats(s->self, &st->kv);
        st->cow_copies = st->kv.cow_copies - out->kv.cow_copies;
        st->cross_bytes = out->cross_bytes;
        st->cross_refs = cross->refs; /* one per beam holding a cache sequence */
    }
    counters_add(&out->total, &st->ctr);
    out->steps++;
    out->forks += st->forks, out->drops += st->drops;
    out->self_bytes_last = st->self_bytes_used, out->beams_last = s->n;
    if (st->self_bytes_used > out->self_bytes_peak)
        out->self_bytes_peak = st->self_bytes_used;
    out->kv = st->kv;
}

/* The encoder once; with a cache, the cross K/V once; then the first beam
 * (BOS) in cache sequence 0. */
static int start(Search *s, EncDec *ed, CrossCache *cross, const int *src, BeamResult *out, Err *e)
{
    double t0 = clock_seconds();
    if (encdec_encode(ed, src, &out->encoder, e) < 0 || (s->self && cross_cache_build(cross, ed, &out->encoder, e) < 0))
        return -1;
    out->encoder.seconds = clock_seconds() - t0;
    out->total = out->encoder;
    out->cross_fills = cross->fills;
    out->cross_bytes = s->self ? kv_bytes_used(cross->kv) : 0;
    s->n = 1;
    s->seq[0] = s->m->cfg.bos_token;
    s->logp[0] = 0;
    if (s->self) {
        s->slot[0] = 0;
        s->held[0] = 1;
        cross_cache_acquire(cross);
        kv_stats(s->self, &out->kv); /* the steps report copies on write from here on */
    }
    return 0;
}

/* Every beam gives its cache sequence and its cross reference back. */
static void release_beams(Search *s, CrossCache *cross, BeamResult *out)
{
    for (size_t i = 0; i < s->W && s->held; i++)
        if (s->held[i]) {
            kv_drop(s->self, i);
            cross_cache_release(cross);
            s->held[i] = 0;
        }
    out->cross_peak_refs = cross->peak_refs;
    out->cross_refs_end = cross->refs;
}

int beam_search(const Model *m, const int *src, KvCache *self, const BeamOptions *o, BeamResult *out,
                BeamStepFn fn, void *user, Err *e)
{
    memset(out, 0, sizeof *out);
    if (check_options(m, self, o, e) < 0)
        return -1;
    Search s = { .m = m, .self = self, .W = o->width, .V = m->cfg.vocab, .T = o->max_len, .eos = m->cfg.eos_token,
                 .alpha = o->alpha };
    EncDec ed;
    CrossCache cross = { 0 };
    int rc = -1;
    if (encdec_init(&ed, m, self ? s.W : s.W * s.T, e) < 0)
        return -1;
    if (search_alloc(&s, e) < 0 || start(&s, &ed, &cross, src, out, e) < 0)
        goto done;
    const size_t k_top = s.eos >= 0 ? 2 * s.W : s.W; /* at most one EOS per beam ranks above the kept */
    for (size_t pos = 0; pos < s.T; pos++) {
        BeamStep st = { .step = pos, .pos = pos, .n_beams = s.n };
        uint64_t rows0 = ed.cross_kv_rows;
        double t0 = clock_seconds();
        if (decode_step(&s, &ed, &cross, pos, &st, e) < 0)
            goto done;
        long kept = choose(&s, k_top, pos, e);
        if (kept < 0)
            goto done;
        size_t n_kept = (size_t)kept, n_finished = 0;
        for (size_t i = 0; i < s.n_pool; i++)
            n_finished += s.pool[i].finished;
        const int last = pos + 1 == s.T, stop = last || n_finished >= s.W || n_kept == 0;
        if (!stop && self && reorder(&s, &cross, n_kept, &st.forks, &st.drops, &st.ctr, e) < 0)
            goto done;
        extend(&s, n_kept, pos);
        st.ctr.seconds = clock_seconds() - t0;
        st.n_finished = n_finished;
        st.n_next = stop ? 0 : n_kept;
        st.n_kept = n_kept;
        st.slots = self && !stop ? s.slot_next : NULL;
        st.cross_kv_rows = ed.cross_kv_rows - rows0;
        record_step(&s, &cross, &st, out);
        if (fn && fn(user, &st)) {
            err_set(e, ERR_RUNTIME, "stopped");
            goto done;
        }
        if (stop) {
            if (last) /* the beams alive at max_len are hypotheses too */
                for (size_t j = 0; j < n_kept; j++)
                    if (pool_add(&s, s.seq_next + j * (s.T + 1), pos + 1, -1, s.logp_next[j], 0, e) < 0)
                        goto done;
            break;
        }
        advance(&s, n_kept);
    }
    rc = finish(&s, out, e);
done:
    if (self)
        release_beams(&s, &cross, out);
    out->cross_kv_rows = ed.cross_kv_rows;
    cross_cache_free(&cross);
    encdec_free(&ed);
    search_free(&s);
    if (rc < 0)
        beam_result_free(out);
    return rc;
}

void beam_result_free(BeamResult *r)
{
    for (size_t i = 0; r->hyps && i < r->n; i++)
        free(r->hyps[i].tokens);
    free(r->hyps);
    r->hyps = NULL;
    r->n = 0;
}
