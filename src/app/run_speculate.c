/* run_speculate.c: `kvscope run --draft NAME --speculate K` (run_speculate.h).
 *
 * The target runs alone first (greedy, the same cache spec), then with the
 * draft; both are timed on this thread, and the tokens must agree. The
 * figures: tokens per target pass, proposals kept by their place in the
 * round's draft, rows written then rolled back, each model's FLOPs, and
 * the measured speed-up. */
#include "app/run_speculate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "sim/setup.h"
#include "sim/speculate.h"
#include "text/tokenizer.h"

const char run_speculate_help[] =
    "  --draft NAME        the draft model (one vocabulary with --model; kjv-tiny drafts for kjv-small)\n"
    "  --speculate K       speculative decoding: the draft proposes K tokens (1 .. 16) from its own\n"
    "                      cache, the target checks them in one pass of K+1 rows, keeps the agreeing\n"
    "                      ones and its own next choice, and both caches roll back the rejected rows.\n"
    "                      Greedy, the tokens are the target's alone (the run checks it against the\n"
    "                      target run alone); with --temperature (and --top-k, --sample-seed) a proposal\n"
    "                      d is kept with probability min(1, p(d)/q(d)), else the token is drawn from\n"
    "                      max(0, p - q): the target's distribution, not its run token for token.\n"
    "                      Prints tokens per target pass, acceptance by position in the draft,\n"
    "                      rows rolled back, both models' FLOPs and the measured speed-up. The cache\n"
    "                      (both models use --cache) must roll back: contiguous, dynamic and paged do,\n"
    "                      quantized or not; ring, shift, h2o, snapkv, mixed, kivi and +sparse refuse\n";

int run_speculate_check(const RunOpts *o, Err *e)
{
    if (!o->draft && !o->speculate)
        return 0;
    if (!o->draft || !o->speculate)
        return err_set(e, ERR_USAGE, "run: --draft and --speculate go together");
    if (o->speculate > SPEC_MAX_K)
        return err_set(e, ERR_USAGE, "--speculate: %zu draft tokens a round (1 .. %d)", o->speculate, SPEC_MAX_K);
    if (o->no_cache || o->compare || o->quality)
        return err_set(e, ERR_USAGE, "run: --speculate runs with a cache; it excludes --no-cache, --compare and "
                       "--quality");
    if (o->po.batch > 1 || o->beams || o->go.chunk)
        return err_set(e, ERR_USAGE, "run: --speculate decodes one sequence, its prompt at once: drop --batch, "
                       "--beams and --chunk");
    if (o->fmt == OUT_JSON)
        return err_set(e, ERR_USAGE, "run: --speculate prints table or tsv, not json");
    return 0;
}

typedef struct {
    Model target, draft;
    int target_ready, draft_ready;
    KvCache *alone, *tc, *dc;
    Tokenizer *tok;
    int *prompt, *want, *got;
    size_t plen;
} Spec;

static void spec_close(Spec *s)
{
    if (s->target_ready)
        model_free(&s->target);
    if (s->draft_ready)
        model_free(&s->draft);
    kv_free(s->alone);
    kv_free(s->tc);
    kv_free(s->dc);
    tokenizer_free(s->tok);
    free(s->prompt);
    free(s->want);
    free(s->got);
}

static KvCache *open_cache(const Model *m, const char *spec, Err *e)
{
    KvGeometry g = model_kv_geometry(m, 1);
    return kv_open(spec, &g, e);
}

static int spec_open(Spec *s, const RunOpts *o, const Config *cfg, Err *e)
{
    PromptOpts po = o->po;
    size_t batch = 1;
    ModelOpts dmo = { .model = o->draft, .isa = o->mo.isa };
    if (setup_tokenizer(cfg, &s->tok, e) < 0 || setup_make_prompt(&po, cfg, &s->prompt, &batch, &s->plen, e) < 0)
        return -1;
    if (setup_load_model(&o->mo, 0, &s->target, e) < 0)
        return -1;
    s->target_ready = 1;
    if (setup_load_model(&dmo, 0, &s->draft, e) < 0)
        return err_wrap(e, "--draft");
    s->draft_ready = 1;
    s->target.attend = s->draft.attend = o->attend;
    if (!(s->alone = open_cache(&s->target, o->cache_spec, e)) || !(s->tc = open_cache(&s->target, o->cache_spec, e)) ||
        !(s->dc = open_cache(&s->draft, o->cache_spec, e)))
        return -1;
    if (kv_can_roll_back(s->tc, e) < 0)
        return err_wrap(e, "--speculate");
    s->want = calloc(o->go.n_generate, sizeof(int));
    s->got = calloc(o->go.n_generate, sizeof(int));
    if (!s->want || !s->got)
        return err_set(e, ERR_RUNTIME, "out of memory for %zu tokens", o->go.n_generate);
    return 0;
}

/* The text of ids, or the ids for a model without a tokenizer. */
static void print_tokens(const Tokenizer *tok, const int *ids, size_t n)
{
    char buf[256];
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const unsigned char *p = tok ? tokenizer_piece(tok, ids[i], &len) : NULL;
        if (p)
            fputs(tokenizer_show(p, len, 0, buf, sizeof buf), stdout);
        else
            printf("%s%d", i ? " " : "", ids[i]);
    }
    printf("\n");
}

static void print_table(const RunOpts *o, const Spec *s, const SpecStats *st, const Counters *alone, double t_alone,
                        int same)
{
    const uint64_t tf = counters_total_flops(&st->target), df = counters_total_flops(&st->draft);
    char how[64] = "greedy";
    if (o->go.temperature > 0)
        snprintf(how, sizeof how, "sampled at temperature %g", o->go.temperature);
    printf("speculative decoding, %s: target %s, draft %s, K = %zu, cache %s\n", how, s->target.cfg.name,
           s->draft.cfg.name, o->speculate, o->cache_spec);
    printf("prompt: %zu tokens; generated: %zu\n", s->plen, st->generated);
    if (st->at_eos)
        printf("stopped at EOS after %zu tokens (the end-of-text token %d; --ignore-eos goes on)\n", st->generated,
               s->target.cfg.eos_token);
    printf("text: ");
    print_tokens(s->tok, s->got, st->generated);
    printf("\ntarget passes:        %zu (the prefill and %zu checks), %.2f tokens a check\n", st->target_passes,
           st->target_passes - 1,
           st->target_passes > 1 ? (double)(st->generated - 1) / (double)(st->target_passes - 1) : 0.0);
    printf("draft passes:         %zu\n", st->draft_passes);
    printf("proposals kept:       %zu of %zu (%.1f%%); of the %zu judged, %.1f%% (a round stops judging at its "
           "first refusal)\n", st->accepted, st->drafted,
           st->drafted ? 100.0 * (double)st->accepted / (double)st->drafted : 0.0, st->accepted + st->refused,
           st->accepted + st->refused ? 100.0 * (double)st->accepted / (double)(st->accepted + st->refused) : 0.0);
    printf("kept by position:    ");
    for (size_t i = 0; i < o->speculate && i < SPEC_MAX_K; i++)
        if (st->proposed_at[i])
            printf(" %zu: %.1f%%", i + 1, 100.0 * (double)st->accepted_at[i] / (double)st->proposed_at[i]);
    printf("  (of the rounds that drafted that far)\n");
    printf("rows rolled back:     target %zu, draft %zu (token rows written, in every layer, then forgotten)\n",
           st->target_rolled, st->draft_rolled);
    printf("FLOPs:                target %.4g, draft %.4g, together %.4g; the target alone %.4g (%.2fx)\n",
           (double)tf, (double)df, (double)(tf + df), (double)counters_total_flops(alone),
           (double)(tf + df) / (double)counters_total_flops(alone));
    printf("weight bytes read:    target %.4g, draft %.4g; the target alone %.4g\n",
           (double)st->target.weight_bytes_read, (double)st->draft.weight_bytes_read,
           (double)alone->weight_bytes_read);
    printf("time (measured):      speculative %.3f ms, the target alone %.3f ms: speed-up %.2fx\n",
           st->seconds * 1e3, t_alone * 1e3, t_alone / st->seconds);
    if (o->go.temperature > 0)
        printf("sampled: the tokens follow the target's distribution; its run alone drew others\n");
    else
        printf("same tokens as the target alone: %s\n", same ? "yes" : "NO");
}

static void print_tsv(const RunOpts *o, const Spec *s, const SpecStats *st, const Counters *alone, double t_alone,
                      int same)
{
    printf("target\tdraft\tk\tcache\tprompt_tokens\tgenerated\ttarget_passes\tdraft_passes\tdrafted\taccepted\t"
           "refused\ttokens_per_check\ttarget_rolled\tdraft_rolled\ttarget_flops\tdraft_flops\talone_flops\tseconds\t"
           "alone_seconds\tspeedup\tsame_tokens");
    for (size_t i = 0; i < o->speculate; i++)
        printf("\tkept_at_%zu", i + 1);
    printf("\n%s\t%s\t%zu\t%s\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%.6g\t%zu\t%zu\t%llu\t%llu\t%llu\t%.6g\t%.6g\t%.4f\t%d",
           s->target.cfg.name, s->draft.cfg.name, o->speculate, o->cache_spec, s->plen, st->generated,
           st->target_passes, st->draft_passes, st->drafted, st->accepted, st->refused,
           st->target_passes > 1 ? (double)(st->generated - 1) / (double)(st->target_passes - 1) : 0.0,
           st->target_rolled, st->draft_rolled, (unsigned long long)counters_total_flops(&st->target),
           (unsigned long long)counters_total_flops(&st->draft), (unsigned long long)counters_total_flops(alone),
           st->seconds, t_alone, t_alone / st->seconds, same);
    for (size_t i = 0; i < o->speculate; i++)
        printf("\t%.6g", st->proposed_at[i] ? (double)st->accepted_at[i] / (double)st->proposed_at[i] : 0.0);
    printf("\n");
}

int run_speculate(const RunOpts *o, const Config *cfg)
{
    Err e = { 0 };
    Spec s = { 0 };
    SpecStats st;
    Counters alone = { 0 };
    int rc = spec_open(&s, o, cfg, &e);
    double t_alone = 0.0;
    if (rc == 0) { /* the target alone, for the tokens and the time */
        const GenOptions go = { .n_generate = o->go.n_generate, .temperature = o->go.temperature,
                                .top_k = o->go.top_k, .sample_seed = o->go.sample_seed,
                                .stop_at_eos = o->go.stop_at_eos };
        rc = speculate_baseline(&s.target, s.alone, s.prompt, s.plen, &go, s.want, &alone, &t_alone, &e);
    }
    const SpecSampling smp = { .temperature = o->go.temperature, .top_k = o->go.top_k,
                               .seed = (unsigned long)o->go.sample_seed, .stop_at_eos = o->go.stop_at_eos };
    if (rc == 0)
        rc = speculate(&s.target, s.tc, &s.draft, s.dc, s.prompt, s.plen, o->go.n_generate, o->speculate, &smp,
                       s.got, &st, &e);
    int same = 0;
    if (rc == 0) {
        same = o->go.temperature > 0 || memcmp(s.want, s.got, o->go.n_generate * sizeof(int)) == 0;
        if (o->fmt == OUT_TSV)
            print_tsv(o, &s, &st, &alone, t_alone, same);
        else
            print_table(o, &s, &st, &alone, t_alone, same);
        if (!same)
            rc = err_set(&e, ERR_RUNTIME, "speculative decoding chose other tokens than the target alone");
    }
    fflush(stdout);
    spec_close(&s);
    return rc == 0 ? EXIT_OK : cli_fail(&e);
}
