/* serve.c: the serving loop (serve.h): arrivals, a scheduler stepping the
 * real model over a page pool, preemption by recompute or swap, forked
 * requests' samples sharing their prompt's pages. */
#include "sim/serve.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/sample.h"
#include "sim/serve_loop.h"
#include "sim/serve_workload.h"
#include "sim/setup.h"
#include "util/checked.h"
#include "util/clock.h"
#include "util/human.h"
#include "util/sysmem.h"


/* The latest arrival a trace may give: the steps before it are run. */
#define SERVE_MAX_ARRIVAL 1000000




/* Bytes of the forward pass's activations for one row (a token of a step). */
static size_t activation_row_bytes(const Config *c)
{
    return (2 * c->d_model + 2 * config_q_dim(c) + 2 * config_kv_dim(c) + 2 * c->ffn_dim) * sizeof(float);
}

int serve_check(const Config *cfg, const KvCache *cache, const ServeOptions *o, Err *e)
{
    KvStats st = { 0 };
    kv_stats(cache, &st);
    if (!st.page_rows)
        return err_set(e, ERR_USAGE, "serve: the cache must be paged (paged:page=P,pages=N), not '%s'", cache->spec);
    if (cfg->architecture != ARCH_DECODER || cfg->attention != ATTN_GQA)
        return err_set(e, ERR_USAGE, "serve: model '%s' is not a decoder with standard attention", cfg->name);
    size_t shortest, longest; /* positions held */
    serve_workload_lengths(o, &shortest, &longest);
    if (o->trace && o->workload != SERVE_WORKLOAD_RANDOM)
        return err_set(e, ERR_USAGE, "serve: a trace brings its own requests; a chat or few-shot workload is drawn");
    if (o->workload == SERVE_WORKLOAD_CHAT && !o->turns)
        return err_set(e, ERR_USAGE, "serve: a chat has at least 1 turn");
    if (o->workload == SERVE_WORKLOAD_FEWSHOT && !o->shared_prefix)
        return err_set(e, ERR_USAGE, "serve: a few-shot workload needs a preamble (--shared-prefix S, S > 0)");
    if (o->prefix != SERVE_PREFIX_PAGES &&
        (!cache->ops->share ? err_set(e, ERR_USAGE, "a prefix cache shares pages; '%s' cannot", cache->spec)
                            : cache->ops->share->usable(cache, e)) < 0)
        return err_wrap(e, "serve");
    if (o->trace) {
        shortest = SIZE_MAX, longest = 0;
        for (size_t i = 0; i < o->n_requests; i++) {
            const ServeTraceEntry *t = &o->trace[i];
            if (!t->prompt_len || !t->output_len || (i && t->arrival < o->trace[i - 1].arrival))
                return err_set(e, ERR_USAGE, "serve: trace request %zu: lengths above 0, arrivals in order", i + 1);
            if (t->arrival > SERVE_MAX_ARRIVAL) /* every step before it would run, idle */
                return err_set(e, ERR_USAGE, "serve: trace request %zu arrives at step %zu; at most %d", i + 1,
                               t->arrival, SERVE_MAX_ARRIVAL);
            shortest = t->prompt_len < shortest ? t->prompt_len : shortest;
            if (t->prompt_len + t->output_len - 1 > longest)
                longest = t->prompt_len + t->output_len - 1;
        }
    } else {
        if (!(o->rate > 0) || !o->prompt_min || !o->output_min)
            return err_set(e, ERR_USAGE, "serve: rate, prompt and output lengths must be above 0");
        if (o->prompt_min > o->prompt_max || o->output_min > o->output_max)
            return err_set(e, ERR_USAGE, "serve: a length range runs from its least to its most (MIN..MAX)");
    }
    if (!o->n_requests || !o->token_budget)
        return err_set(e, ERR_USAGE, "serve: requests and the token budget must be above 0");
    if (o->workload == SERVE_WORKLOAD_RANDOM && o->shared_prefix > shortest)
        return err_set(e, ERR_USAGE, "serve: a shared prefix of %zu is longer than the shortest prompt (%zu)",
                       o->shared_prefix, shortest);
    if (longest > cfg->max_seq_len)
        return err_set(e, ERR_USAGE, "serve: the longest request needs %zu positions; model '%s' has %zu", longest,
                       cfg->name, cfg->max_seq_len);
    if (!(o->fork_share >= 0 && o->fork_share <= 1))
        return err_set(e, ERR_USAGE, "serve: a fork share of %g; it is a share of the requests, from 0 to 1",
                       o->fork_share);
    if (o->fork_share > 0 && o->n_samples < 2)
        return err_set(e, ERR_USAGE, "serve: a fork share above 0 needs at least 2 samples a forked request, not %zu",
                       o->n_samples);
    if (o->fork_share > 0 && o->n_samples > cache->geo.n_seqs)
        return err_set(e, ERR_USAGE, "serve: a forked request runs its %zu samples at once; there are %zu slots",
                       o->n_samples, cache->geo.n_seqs);
    if (o->swap && (cache->k_fmt != FMT_F32 || cache->v_fmt != FMT_F32))
        return err_set(e, ERR_USAGE, "serve: swap copies rows back by value; it needs an f32 cache, not '%s'",
                       cache->spec);
    /* each request's record: its prompt and output tokens, and the loop's
     * bookkeeping (a few words); refused before any of it is drawn */
    size_t per_request =
        size_add_sat(sizeof(ServeRequest) + 8 * sizeof(size_t), size_mul_sat(longest, 2 * sizeof(int)));
    char what[96];
    snprintf(what, sizeof what, "serve: %zu requests", o->n_requests);
    if (setup_check_memory(size_mul_sat(o->n_requests, per_request), what, e) < 0)
        return -1;
    /* the run steps through the idle time before each arrival, as it would
     * through a trace's: the expected last arrival is bounded alike */
    const double span = o->trace ? 0 : (double)o->n_requests / o->rate;
    if (!(span <= SERVE_MAX_ARRIVAL))
        return err_set(e, ERR_USAGE, "serve: %zu requests at a rate of %g a step arrive over about %.3g steps; a "
                       "run waits at most %d (raise --rate or lower --requests)", o->n_requests, o->rate, span,
                       SERVE_MAX_ARRIVAL);
    /* a step's activations: a row for every token its budget lets it run */
    size_t act = size_mul_sat(o->token_budget, activation_row_bytes(cfg)), have = sysmem_physical_bytes();
    if (have && act > have) {
        char need_s[32], have_s[32];
        return err_set(e, ERR_USAGE, "serve: a token budget of %zu needs %s of activations (a row for each token "
                       "a step runs); this machine has %s", o->token_budget,
                       human_bytes(need_s, sizeof need_s, (double)act), human_bytes(have_s, sizeof have_s, (double)have));
    }
    size_t need = serve_pages_for(st.page_rows, 0, longest);
    if (need > st.pages_total)
        return err_set(e, ERR_USAGE, "serve: the longest request needs %zu pages of %zu rows; the pool holds %zu "
                       "(raise pages=)", need, st.page_rows, st.pages_total);
    return 0;
}

/* Arrivals (Poisson in steps), lengths, prompts and which requests fork,
 * all from one seed. The fork draws come after the rest, so forks change
 * nothing else of the workload. */
static int draw_requests(Loop *L, Err *e)
{
    const ServeOptions *o = L->o;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng)
        return err_set(e, ERR_RUNTIME, "out of memory");
    gsl_rng_set(rng, (unsigned long)o->seed);
    int *prefix = malloc((o->shared_prefix + 1) * sizeof(int));
    for (size_t i = 0; prefix && i < o->shared_prefix; i++)
        prefix[i] = (int)gsl_rng_uniform_int(rng, L->m->cfg.vocab);
    double t = 0;
    size_t late = 0; /* the request drawn past SERVE_MAX_ARRIVAL, from 1 */
    int rc = prefix ? 0 : -1;
    if (rc == 0 && o->workload != SERVE_WORKLOAD_RANDOM) {
        L->last_arrival = serve_workload_draw(o, L->m->cfg.vocab, rng, L->out->req, L->pause);
        rc = L->last_arrival == SIZE_MAX ? -1 : 0;
        if (rc == 0 && L->last_arrival > SERVE_MAX_ARRIVAL)
            late = o->n_requests, t = (double)L->last_arrival, rc = -1;
        for (size_t r = 0; rc == 0 && r < o->n_requests; r++)
            L->out->prompt_tokens += L->out->req[r].prompt_len;
    }
    for (size_t r = 0; rc == 0 && o->workload == SERVE_WORKLOAD_RANDOM && r < o->n_requests; r++) {
        ServeRequest *q = &L->out->req[r];
        if (o->trace) {
            q->arrival = o->trace[r].arrival;
            q->prompt_len = o->trace[r].prompt_len;
            q->n_output = o->trace[r].output_len;
            L->last_arrival = q->arrival;
        } else {
            t += gsl_ran_exponential(rng, 1.0 / o->rate);
            if (!(t <= SERVE_MAX_ARRIVAL)) { /* a long draw near serve_check's bound */
                late = r + 1, rc = -1;
                break;
            }
            q->arrival = L->last_arrival = (size_t)t;
            q->prompt_len = o->prompt_min + gsl_rng_uniform_int(rng, o->prompt_max - o->prompt_min + 1);
            q->n_output = o->output_min + gsl_rng_uniform_int(rng, o->output_max - o->output_min + 1);
        }
        q->prompt = malloc(q->prompt_len * sizeof(int));
        if (!q->prompt) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < q->prompt_len; i++)
            q->prompt[i] = i < o->shared_prefix ? prefix[i] : (int)gsl_rng_uniform_int(rng, L->m->cfg.vocab);
        L->out->prompt_tokens += q->prompt_len;
    }
    for (size_t r = 0; rc == 0 && r < o->n_requests; r++) {
        ServeRequest *q = &L->out->req[r];
        q->n_samples = o->fork_share > 0 && gsl_rng_uniform(rng) < o->fork_share ? o->n_samples : 1;
        L->out->forked_requests += q->n_samples > 1;
        L->n_seqs += q->n_samples;
    }
    free(prefix);
    gsl_rng_free(rng);
    L->seq = rc == 0 ? calloc(L->n_seqs, sizeof *L->seq) : NULL;
    rc = L->seq ? 0 : -1;
    Seq *s = L->seq;
    for (size_t r = 0; rc == 0 && r < o->n_requests; r++) {
        ServeRequest *q = &L->out->req[r];
        q->output = malloc(q->n_samples * q->n_output * sizeof(int));
        rc = q->output ? 0 : -1;
        L->left[r] = q->n_samples;
        L->first_seq[r] = (size_t)(s - L->seq);
        for (size_t k = 0; rc == 0 && k < q->n_samples; k++, s++) {
            *s = (Seq){ .req = r, .sample = k, .unforked = k ? 0 : q->n_samples - 1,
                        .n_tokens = q->prompt_len, .target = q->prompt_len + q->n_output };
            s->tokens = malloc(s->target * sizeof(int));
            if (!s->tokens)
                rc = -1;
            else
                memcpy(s->tokens, q->prompt, q->prompt_len * sizeof(int));
        }
    }
    L->out->n_sequences = L->n_seqs;
    if (late)
        return err_set(e, ERR_USAGE, "serve: request %zu drawn to arrive at step %.0f; a run waits at most %d "
                       "(raise --rate)", late, t, SERVE_MAX_ARRIVAL);
    return rc < 0 ? err_set(e, ERR_RUNTIME, "out of memory for %zu requests", o->n_requests) : 0;
}

/* The f32 K and V of r's rows, layer by layer, into s->swapped. */
static int swap_out(Loop *L, Seq *s, Err *e)
{
    const Config *c = &L->m->cfg;
    const size_t kv_dim = config_kv_dim(c), hd = c->head_dim, n = s->filled;
    s->swapped = malloc(c->n_layers * 2 * n * kv_dim * sizeof(float));
    if (!s->swapped)
        return err_set(e, ERR_RUNTIME, "out of memory for a swapped sequence");
    for (size_t l = 0; l < c->n_layers; l++) {
        float *k = s->swapped + l * 2 * n * kv_dim, *v = k + n * kv_dim;
        for (size_t h = 0; h < c->n_kv_heads; h++)
            for (size_t b = 0; b < kv_n_blocks(L->cache, l, s->slot); b++) {
                KvBlock blk;
                kv_block(L->cache, l, s->slot, h, b, &blk);
                for (size_t i = 0; i < blk.n; i++)
                    block_decode_row(L->m->kern->codec, &blk, i, hd, k + (blk.pos + i) * kv_dim + h * hd,
                                     v + (blk.pos + i) * kv_dim + h * hd);
            }
    }
    s->n_swapped = n;
    L->out->swapped_out_bytes += (uint64_t)c->n_layers * n * kv_row_pair_bytes(&L->cache->geo, FMT_F32, FMT_F32);
    return 0;
}

/* Put the swapped rows back into r's (new) slot: appended as they were. */
static int swap_in(Loop *L, Seq *s, Err *e)
{
    const Config *c = &L->m->cfg;
    const size_t kv_dim = config_kv_dim(c), n = s->n_swapped;
    if (kv_reserve(L->cache, s->slot, 0, s->tokens, n, NULL, e) < 0)
        return -1;
    for (size_t l = 0; l < c->n_layers; l++) {
        const float *k = s->swapped + l * 2 * n * kv_dim;
        if (kv_append(L->cache, l, s->slot, 0, n, k, k + n * kv_dim, NULL, e) < 0)
            return -1;
    }
    L->out->swapped_in_bytes += (uint64_t)c->n_layers * n * kv_row_pair_bytes(&L->cache->geo, FMT_F32, FMT_F32);
    s->filled = n;
    free(s->swapped);
    s->swapped = NULL;
    s->n_swapped = 0;
    return 0;
}

/* Give back sequence i's pages and send it to wait again: everything it
 * holds will be run anew (recompute), or copied back (swap). */
static int preempt(Loop *L, size_t i, Err *e)
{
    Seq *s = &L->seq[i];
    if (L->o->swap && swap_out(L, s, e) < 0)
        return -1;
    kv_drop(L->cache, s->slot);
    L->free_slots[L->n_free++] = s->slot;
    serve_prefix_release(L, s);
    if (!L->o->swap)
        L->out->recomputed_tokens += s->filled;
    s->filled = 0;
    s->state = SERVE_WAITING;
    L->out->req[s->req].preemptions++;
    L->out->preemptions++;
    L->cur.preempted++;
    return 0;
}

/* The newest running sequence other than `not` (SIZE_MAX: none). */
static size_t newest_running(const Loop *L, size_t not)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < L->n_seqs; i++)
        if (i != not && L->seq[i].state == SERVE_RUNNING &&
            (best == SIZE_MAX || L->seq[i].admitted > L->seq[best].admitted))
            best = i;
    return best;
}

/* Slots the running, not yet forked sequences will fork their samples
 * into: admission leaves them free, so a fork always finds its slots. */
static size_t slots_promised(const Loop *L)
{
    size_t n = 0;
    for (size_t i = 0; i < L->n_seqs; i++)
        n += L->seq[i].state == SERVE_RUNNING ? L->seq[i].unforked : 0;
    return n;
}

/* Append token `next` to sequence i; the sequence that reaches its target
 * is done (the last token is never fed back), and its request with its
 * last sample. */
static int push(Loop *L, size_t i, int next, Err *e)
{
    Seq *s = &L->seq[i];
    ServeRequest *q = &L->out->req[s->req];
    s->tokens[s->n_tokens++] = next;
    L->out->generated_tokens++;
    const int eos = L->o->stop_at_eos && L->o->workload != SERVE_WORKLOAD_CHAT ? L->m->cfg.eos_token : -1;
    if (eos >= 0 && next == eos) { /* the end-of-text token: the sequence ends here */
        s->target = s->n_tokens;
        q->eos_samples++;
    }
    if (s->n_tokens < s->target)
        return 0;
    const size_t made = s->n_tokens - q->prompt_len;
    int *row = q->output + s->sample * q->n_output;
    memcpy(row, s->tokens + q->prompt_len, made * sizeof(int));
    memset(row + made, 0, (q->n_output - made) * sizeof(int));
    q->n_made = made > q->n_made ? made : q->n_made;
    if (s->state == SERVE_RUNNING) { /* a sample done at its fork never took a slot */
        if (serve_prefix_keep(L, s, e) < 0)
            return -1;
        kv_drop(L->cache, s->slot);
        L->free_slots[L->n_free++] = s->slot;
    }
    s->state = SERVE_DONE;
    if (--L->left[s->req] == 0) {
        q->finished = L->cur.step;
        L->out->eos_requests += q->eos_samples == q->n_samples;
        const size_t next_turn = serve_chat_next(L->o, L->out->req, L->pause, s->req, L->cur.step);
        if (next_turn != SIZE_MAX) { /* its samples' tokens start from its prompt, now whole */
            const ServeRequest *nq = &L->out->req[next_turn];
            for (size_t k = 0; k < nq->n_samples; k++)
                memcpy(L->seq[L->first_seq[next_turn] + k].tokens, nq->prompt, nq->prompt_len * sizeof(int));
        }
    }
    return 0;
}

/* The next token of sequence i from L->logits: greedy, or a forked
 * request's sample's own draw. */
static int choose(const Loop *L, const Seq *s)
{
    const ServeRequest *q = &L->out->req[s->req];
    if (q->n_samples == 1)
        return sample_greedy(L->logits, L->m->cfg.vocab);
    return serve_sample(L->logits, L->m->cfg.vocab, L->o->seed, s->req, s->sample, s->n_tokens - q->prompt_len,
                        L->scratch);
}

/* Sequence i (sample 0) has its prompt in: make the other samples from it,
 * sharing its pages, each drawing its first token from the same logits. */
static int fork_samples(Loop *L, size_t i, Err *e)
{
    Seq *p = &L->seq[i];
    for (size_t j = i + 1; j <= i + p->unforked; j++) {
        Seq *s = &L->seq[j];
        if (s->n_tokens + 1 < s->target) { /* it decodes on: a slot of its own (promised) */
            s->slot = L->free_slots[--L->n_free];
            if (kv_fork(L->cache, p->slot, s->slot, NULL, e) < 0)
                return -1;
            s->filled = p->filled;
            s->admitted = L->n_admitted++;
            s->state = SERVE_RUNNING;
            L->out->fork_shared_pages += serve_pages_for(L->page, 0, p->filled);
        }
        if (push(L, j, choose(L, s), e) < 0)
            return -1;
    }
    p->unforked = 0;
    return 0;
}


/* Run n of sequence i's pending tokens; when they reach its last known
 * token, the logits choose the next one. */
static int run_chunk(Loop *L, size_t i, size_t n, Err *e)
{
    Seq *s = &L->seq[i];
    ServeRequest *q = &L->out->req[s->req];
    Counters ctr = { 0 };
    if (model_forward_slots(L->m, &L->fs, L->cache, &s->slot, s->tokens + s->filled, 1, n, s->filled, L->logits,
                            &ctr, e) < 0)
        return -1;
    s->filled += n;
    s->cow = 0;
    if (s->filled < s->n_tokens)
        return 0; /* a prompt chunk that is not the last */
    if (s->n_tokens == q->prompt_len && s->sample == 0)
        q->first_token = L->cur.step;
    if (L->tree && s->n_tokens == q->prompt_len && s->sample == 0 && serve_share_prompt(L, s, e) < 0)
        return -1;
    if (s->unforked && fork_samples(L, i, e) < 0)
        return -1;
    return push(L, i, choose(L, s), e);
}

/* A running sequence whose only pending token is the one it generated last. */
static int due_decode(const Seq *s)
{
    return s->state == SERVE_RUNNING && s->filled > 0 && s->filled + 1 == s->n_tokens;
}

/* Pages sequence i's next decode takes: a new page at a page boundary, or
 * the copy of its partial last page while another sample of its request
 * still maps that page (copy on write). */
static size_t decode_pages(Loop *L, size_t i)
{
    const Seq *s = &L->seq[i];
    if (s->filled % L->page == 0 || s->cow)
        return 1;
    const size_t total = L->pages_total, lp = s->filled / L->page;
    if (L->out->req[s->req].n_samples == 1 || !L->cache->ops->page_table ||
        L->cache->ops->page_table(L->cache, s->slot, L->table, total) <= lp)
        return 0;
    const size_t mine = L->table[lp], first = i - s->sample;
    for (size_t j = first; j < first + L->out->req[s->req].n_samples; j++)
        if (j != i && L->seq[j].state == SERVE_RUNNING &&
            L->cache->ops->page_table(L->cache, L->seq[j].slot, L->table, total) > lp && L->table[lp] == mine)
            return 1;
    return 0;
}

/* Decodes: one token for each running sequence with only its newest token
 * pending, oldest admitted first; a page short preempts the newest. */
static int decode_all(Loop *L, size_t *budget, Err *e)
{
    size_t order_n = 0;
    size_t *order = malloc(L->n_seqs * sizeof *order);
    if (!order)
        return err_set(e, ERR_RUNTIME, "out of memory");
    for (size_t i = 0; i < L->n_seqs; i++)
        if (due_decode(&L->seq[i]))
            order[order_n++] = i;
    for (size_t a = 1; a < order_n; a++) /* admission order, oldest first (few sequences: insertion sort) */
        for (size_t b = a; b > 0 && L->seq[order[b]].admitted < L->seq[order[b - 1]].admitted; b--) {
            size_t t = order[b];
            order[b] = order[b - 1], order[b - 1] = t;
        }
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < order_n && *budget > 0; k++) {
        size_t i = order[k];
        Seq *s = &L->seq[i];
        if (s->state != SERVE_RUNNING) /* preempted by an older one in this step */
            continue;
        while (decode_pages(L, i) > serve_pages_room(L, decode_pages(L, i))) {
            size_t victim = newest_running(L, i);
            if (victim == SIZE_MAX || L->seq[victim].admitted < s->admitted)
                victim = i; /* it is the newest itself */
            if (preempt(L, victim, e) < 0) {
                free(order);
                return -1;
            }
            if (victim == i)
                break;
        }
        if (s->state != SERVE_RUNNING)
            continue;
        /* a prompt's last token, left to this step when the prefix cache
         * found all the rest and the step that admitted it had no room:
         * a prompt token, so the prefill column counts it */
        const int prompt_token = s->filled < L->out->req[s->req].prompt_len;
        rc = run_chunk(L, i, 1, e);
        if (prompt_token)
            L->cur.prefill_tokens++;
        else
            L->cur.decode_tokens++;
        (*budget)--;
    }
    free(order);
    return rc;
}

/* Admit waiting sequence i when a slot (one for each sample still to
 * fork) and the pages it needs are free: 1 admitted, 0 not now, -1 error.
 * A prefix cache maps what it holds of the sequence's tokens first (at its
 * first admission, or after a preemption by recompute), all but the last
 * token, and the sequence starts past it. */
static int admit_one(Loop *L, size_t i, Err *e)
{
    Seq *s = &L->seq[i];
    const int fresh = !s->swapped && s->filled == 0;
    ServePrefixHit hit;
    if (L->n_free < 1 + s->unforked + slots_promised(L))
        return 0;
    if (serve_prefix_look(L, s, fresh, &hit, e) < 0)
        return -1;
    if (hit.need > serve_pages_room(L, hit.need)) {
        serve_prefix_forget(L, &hit);
        return 0;
    }
    s->slot = L->free_slots[--L->n_free];
    s->admitted = L->n_admitted++;
    s->state = SERVE_RUNNING;
    if (s->swapped)
        return swap_in(L, s, e) < 0 ? -1 : 1;
    return serve_prefix_map(L, s, fresh, &hit, e) < 0 ? -1 : 1;
}

/* Prompt chunks: sequences being prefilled first, then waiting ones in
 * arrival order, while the budget, a slot (one for each sample of a
 * request still to fork) and the pool's pages last. */
static int prefill_some(Loop *L, size_t *budget, Err *e)
{
    for (int admit = 0; admit < 2; admit++)
        for (size_t i = 0; i < L->n_seqs && *budget > 0; i++) {
            Seq *s = &L->seq[i];
            int prefilling = s->state == SERVE_RUNNING && !due_decode(s) && s->filled < s->n_tokens;
            if (admit ? s->state != SERVE_WAITING : !prefilling)
                continue;
            size_t pending = s->n_tokens - s->filled;
            if (admit) {
                const int swapped = s->swapped != NULL;
                int rc = admit_one(L, i, e);
                if (rc < 0)
                    return -1;
                if (rc == 0)
                    break; /* first come, first served: later ones wait too */
                pending = s->n_tokens - s->filled;
                if (pending == 1 && s->filled > 0 && swapped)
                    continue; /* back where it was: it decodes from the next step */
            }
            size_t n = pending < *budget ? pending : *budget;
            const size_t cow = (size_t)s->cow; /* the tree's partly filled page, copied before the write */
            size_t room = serve_pages_room(L, serve_pages_for(L->page, s->filled, s->filled + n) + cow);
            while (n > 0 && serve_pages_for(L->page, s->filled, s->filled + n) + cow > room)
                n--;
            if (n == 0)
                continue;
            if (run_chunk(L, i, n, e) < 0)
                return -1;
            L->cur.prefill_tokens += n;
            *budget -= n;
        }
    return 0;
}

/* What the step callback may look at: who holds each page, each request's
 * state (running while a sample runs, else waiting while one waits) and the
 * rows its samples hold. */
static int describe(Loop *L, Err *e)
{
    const size_t total = L->pages_total;
    for (size_t p = 0; p < total; p++)
        L->page_owner[p] = SERVE_PAGE_FREE;
    for (size_t r = 0; r < L->o->n_requests; r++)
        L->state[r] = L->left[r] ? SERVE_FUTURE : SERVE_DONE, L->held[r] = 0;
    for (size_t i = 0; i < L->n_seqs; i++) {
        const Seq *s = &L->seq[i];
        const int r = (int)s->req;
        if (s->state == SERVE_RUNNING || (s->state == SERVE_WAITING && L->state[r] != SERVE_RUNNING))
            L->state[r] = (unsigned char)s->state;
        if (s->state != SERVE_RUNNING)
            continue;
        L->held[r] += s->filled;
        if (!L->cache->ops->page_table)
            continue;
        size_t n = L->cache->ops->page_table(L->cache, s->slot, L->table, total);
        for (size_t k = 0; k < n && k < total; k++) {
            const size_t p = L->table[k];
            if (p < total) /* the samples of one request share pages, and stay its own */
                L->page_owner[p] = L->page_owner[p] == SERVE_PAGE_FREE || L->page_owner[p] == r ? r
                                                                                                 : SERVE_PAGE_SHARED;
        }
    }
    L->cur.page_owner = L->page_owner, L->cur.state = L->state, L->cur.held = L->held;
    return serve_prefix_describe(L, e);
}

static void count_states(Loop *L)
{
    L->cur.running = L->cur.waiting = L->cur.done = 0;
    for (size_t i = 0; i < L->n_seqs; i++) {
        L->cur.running += L->seq[i].state == SERVE_RUNNING;
        L->cur.waiting += L->seq[i].state == SERVE_WAITING;
    }
    for (size_t r = 0; r < L->o->n_requests; r++)
        L->cur.done += L->left[r] == 0;
}

int serve_run(const Model *m, KvCache *cache, const ServeOptions *o, ServeStepFn fn, void *user, ServeResult *out,
              Err *e)
{
    memset(out, 0, sizeof *out);
    if (serve_check(&m->cfg, cache, o, e) < 0)
        return -1;
    Loop L = { .m = m, .cache = cache, .o = o, .out = out };
    KvStats st = { 0 };
    kv_stats(cache, &st);
    L.page = st.page_rows, L.pages_total = st.pages_total;
    out->n_requests = o->n_requests;
    out->req = calloc(o->n_requests, sizeof *out->req);
    L.left = malloc(o->n_requests * sizeof *L.left);
    L.scratch = malloc(sample_scratch_bytes(m->cfg.vocab));
    L.free_slots = malloc(cache->geo.n_seqs * sizeof *L.free_slots);
    L.logits = malloc(m->cfg.vocab * sizeof(float));
    L.page_owner = malloc(st.pages_total * sizeof *L.page_owner);
    L.table = malloc(st.pages_total * sizeof *L.table);
    L.state = malloc(o->n_requests);
    L.held = malloc(o->n_requests * sizeof *L.held);
    L.first_seq = malloc(o->n_requests * sizeof *L.first_seq);
    L.pause = calloc(o->n_requests, sizeof *L.pause);
    int rc = -1;
    if (!out->req || !L.left || !L.scratch || !L.free_slots || !L.logits || !L.page_owner || !L.table || !L.state ||
        !L.held || !L.first_seq || !L.pause) {
        err_set(e, ERR_RUNTIME, "out of memory");
        goto done;
    }
    if (cache->ops->share) /* the block hash serves PAGES and BLOCK; the tree alone keeps pages for RADIX */
        cache->ops->share->hash(cache, o->prefix != SERVE_PREFIX_RADIX);
    if (o->prefix == SERVE_PREFIX_RADIX && !(L.tree = radix_new(cache, e)))
        goto done;
    for (size_t i = 0; i < cache->geo.n_seqs; i++)
        L.free_slots[L.n_free++] = cache->geo.n_seqs - 1 - i; /* slot 0 on top */
    if (draw_requests(&L, e) < 0 || forward_state_init(&L.fs, &m->cfg, o->token_budget, 0, e) < 0)
        goto done;
    size_t bound = L.last_arrival + 16, done_n = 0;
    for (size_t i = 0; i < L.n_seqs; i++)
        bound += 2 * L.seq[i].target;
    double t0 = clock_seconds();
    for (size_t step = 0; done_n < o->n_requests; step++) {
        if (step == bound) {
            err_set(e, ERR_RUNTIME, "serve: %zu of %zu requests unfinished after %zu steps (a scheduling fault)",
                    o->n_requests - done_n, o->n_requests, bound);
            goto done;
        }
        double ts = clock_seconds();
        L.cur = (ServeStep){ .step = step };
        for (size_t i = 0; i < L.n_seqs; i++) /* a forked request's other samples come at its fork */
            if (L.seq[i].state == SERVE_FUTURE && L.seq[i].sample == 0 && out->req[L.seq[i].req].arrival <= step)
                L.seq[i].state = SERVE_WAITING;
        size_t budget = o->token_budget;
        if (decode_all(&L, &budget, e) < 0 || prefill_some(&L, &budget, e) < 0)
            goto done;
        count_states(&L);
        done_n = L.cur.done;
        kv_stats(cache, &L.cur.pool);
        L.cur.prefix_pages = L.cur.pool.pages_hashed, L.cur.prefix_evicted = L.cur.pool.evictions;
        if (L.tree) {
            RadixStats rs;
            radix_stats(L.tree, &rs);
            L.cur.prefix_pages = rs.pages_held, L.cur.prefix_evicted = rs.evicted_pages;
            L.cur.tree_nodes = rs.nodes;
        }
        L.cur.seconds = clock_seconds() - ts;
        ServeStep *grown = realloc(out->steps, (out->n_steps + 1) * sizeof *grown);
        if (!grown) {
            err_set(e, ERR_RUNTIME, "out of memory");
            goto done;
        }
        out->steps = grown;
        out->steps[out->n_steps++] = L.cur; /* without the callback's pointers */
        if (describe(&L, e) < 0)
            goto done;
        if (fn && fn(user, &L.cur)) {
            err_set(e, ERR_RUNTIME, "serve: stopped at step %zu", step);
            goto done;
        }
    }
    out->seconds = clock_seconds() - t0;
    rc = 0;
done:
    for (size_t i = 0; L.seq && i < L.n_seqs; i++) {
        free(L.seq[i].tokens);
        free(L.seq[i].swapped);
    }
    free(L.seq), free(L.left), free(L.scratch);
    free(L.free_slots);
    free(L.logits);
    free(L.page_owner), free(L.table), free(L.state), free(L.held);
    free(L.first_seq), free(L.pause), free(L.view);
    radix_free(L.tree); /* its pages back to the pool */
    forward_state_free(&L.fs);
    return rc;
}

void serve_result_free(ServeResult *r)
{
    for (size_t i = 0; r->req && i < r->n_requests; i++) {
        free(r->req[i].prompt);
        free(r->req[i].output);
    }
    free(r->req);
    free(r->steps);
    memset(r, 0, sizeof *r);
}

/* splitmix64's finalizer: every bit of z stirs every bit out. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int serve_sample(const float *logits, size_t n, uint64_t seed, size_t request, size_t sample, size_t i,
                 void *scratch)
{
    uint64_t h = mix64(mix64(mix64(mix64(seed) ^ request) ^ sample) ^ i);
    return sample_topk_at(logits, n, SERVE_SAMPLE_TEMPERATURE, 0, (double)(h >> 11) * 0x1.0p-53, scratch);
}
