/* cmd_example.c: `kvscope example`: the teaching notes' worked example, step by step.
 *
 * One layer, one head, d_model = d_k = 4, the document's three prompt
 * embeddings, four generated tokens. Every figure printed here comes from the
 * engine's run (the cached one, checked against an uncached one). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "kv/cache.h"
#include "model/generate.h"

#define EXAMPLE_TOKENS 4

static void help(void)
{
    printf("usage: kvscope example [--model NAME] [--set KEY=VALUE] [--cache SPEC]\n\n"
           "Walk through the source document's worked example (the teaching notes): a one-layer,\n"
           "one-head model with d_model = d_k = 4 generates 4 tokens from a 3-token prompt.\n"
           "Each step shows the new tokens' Q, K and V, the cache after the append, the\n"
           "attention weights, and why; the end shows the document's summary table, with\n"
           "the uncached run beside it (18 vs 6 token rows projected).\n\n"
           "The prompt is tokens 0, 1, 2, whose embeddings are the document's x0, x1, x2;\n"
           "the other weights are ours (data/weights/worked-example.txt).\n"
           "  --cache SPEC   any cache (`kvscope run --help` lists them): contiguous (default),\n"
           "                 dynamic, or a lossy one such as ring:window=2 to see what it drops.\n"
           "                 An exact cache whose tokens differ from the uncached run's is an\n"
           "                 error (exit 1); a lossy one's difference is reported, exit 0.\n");
}

static void print_vec(const char *label, const float *v, size_t n)
{
    printf("    %-10s [", label);
    for (size_t i = 0; i < n; i++)
        printf("%s%7.3f", i ? "," : "", v[i]);
    printf(" ]\n");
}

typedef struct {
    const Model *m;
    const KvCache *cache;
    size_t rows[16];      /* per pass: tokens projected */
    size_t ctx[16], nq[16];
    Phase phase[16];
    uint64_t proj_flops[16];
    size_t n_steps;
    const int *prompt;
    int tokens[EXAMPLE_TOKENS + 3];
} Walk;

static void explain(const StepReport *r)
{
    if (r->phase == PHASE_PREFILL)
        printf("  The whole prompt (%zu tokens) is projected at once; its K and V rows fill the cache,\n"
               "  and causal attention lets each position see only itself and earlier positions.\n",
               r->n_new);
    else
        printf("  Only the newest token (position %zu) is projected; its k and v are appended, and its\n"
               "  query attends over all %zu cached rows: no mask is needed, none of them is in the future.\n",
               r->pos0, r->context);
}

static int on_step(void *user, const StepReport *r)
{
    Walk *w = user;
    const Config *c = &w->m->cfg;
    const size_t d = c->d_model, hd = c->head_dim;
    const ForwardState *s = r->state;
    if (w->n_steps < 16) {
        w->rows[w->n_steps] = r->n_new;
        w->ctx[w->n_steps] = r->context;
        w->nq[w->n_steps] = r->n_new;
        w->phase[w->n_steps] = r->phase;
        w->proj_flops[w->n_steps] = counters_proj_flops(&r->ctr);
    }
    w->n_steps++;

    printf("\nStep %zu: %s, ", r->step, r->phase == PHASE_PREFILL ? "prefill" : "decode");
    if (r->n_new > 1)
        printf("positions %zu..%zu\n", r->pos0, r->pos0 + r->n_new - 1);
    else
        printf("position %zu\n", r->pos0);
    explain(r);
    for (size_t t = 0; t < r->n_new; t++) {
        size_t pos = r->pos0 + t;
        int tok = w->tokens[pos];
        char lbl[32];
        printf("  token %d at position %zu\n", tok, pos);
        snprintf(lbl, sizeof lbl, "x%zu", pos);
        print_vec(lbl, w->m->embed + (size_t)tok * d, d);
        snprintf(lbl, sizeof lbl, "q%zu", pos);
        print_vec(lbl, s->q + t * c->n_heads * hd, hd);
        snprintf(lbl, sizeof lbl, "k%zu", pos);
        print_vec(lbl, s->k + t * c->n_kv_heads * hd, hd);
        snprintf(lbl, sizeof lbl, "v%zu", pos);
        print_vec(lbl, s->v + t * c->n_kv_heads * hd, hd);
    }
    printf("  (q = RoPE(W_q RMSNorm(x)), k = RoPE(W_k RMSNorm(x)), v = W_v RMSNorm(x): V is never rotated)\n");

    printf("  cache after the append: %zu rows of K and of V\n", kv_length(w->cache, 0, 0));
    KvBlock blk;
    kv_block(w->cache, 0, 0, 0, 0, &blk);
    for (size_t j = 0; j < blk.n; j++) {
        const float *k = (const float *)((const char *)blk.k + j * blk.k_stride);
        const float *v = (const float *)((const char *)blk.v + j * blk.v_stride);
        printf("    K[%zu] [", blk.pos + j);
        for (size_t i = 0; i < hd; i++)
            printf("%s%7.3f", i ? "," : "", k[i]);
        printf(" ]   V[%zu] [", blk.pos + j);
        for (size_t i = 0; i < hd; i++)
            printf("%s%7.3f", i ? "," : "", v[i]);
        printf(" ]%s\n", blk.pos + j >= r->pos0 ? "  <- new" : "");
    }

    printf("  attention weights softmax(q . K^T / sqrt(%zu)) (%zu x %zu):\n", hd, r->n_new, r->context);
    for (size_t t = 0; t < r->n_new; t++) {
        const float *p = s->probs + t * c->max_seq_len; /* layer 0, head 0 */
        printf("    q%-3zu", r->pos0 + t);
        for (size_t j = 0; j < r->context; j++) {
            if (j <= r->pos0 + t)
                printf(" %6.3f", p[j]);
            else
                printf(" %6s", "-");
        }
        printf("\n");
    }
    if (r->sampled)
        printf("  next token (greedy, the largest logit %.3f): %d\n", r->logits[r->sampled[0]], r->sampled[0]);
    return 0;
}

static int count_uncached(void *user, const StepReport *r)
{
    size_t *rows = user;
    rows[r->step] = r->ctr.tokens_projected;
    return 0;
}

/* --model, --set, --isa, --cache; 1 after --help, -1 after an error (printed), else 0. */
static int parse_options(int argc, char **argv, ModelOpts *mo, const char **cache_spec)
{
    static const struct option longopts[] = {
        { "model", required_argument, 0, 0 }, { "set", required_argument, 0, 0 },
        { "isa", required_argument, 0, 0 },   { "cache", required_argument, 0, 0 },
        { "help", no_argument, 0, 'h' },      { 0, 0, 0, 0 },
    };
    Err e = { 0 };
    opterr = 0;
    optind = 1;
    int ch, idx;
    while ((ch = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        if (ch == 'h')
            return 1;
        if (ch == '?')
            return cli_usage("example", "unknown or incomplete option '%s'", argv[optind - 1]), -1;
        if (strcmp(longopts[idx].name, "cache") == 0)
            *cache_spec = optarg;
        else if (cli_model_option(mo, longopts[idx].name, optarg, &e) < 0)
            return cli_fail(&e), -1;
    }
    if (optind < argc)
        return cli_usage("example", "unexpected argument '%s'", argv[optind]), -1;
    return 0;
}

/* The cached run, narrated pass by pass into w; the tokens into out. */
static int walk_cached(Walk *w, const Model *m, KvCache *cache, const int *prompt, const char *cache_spec, int *out,
                       Err *e)
{
    const Config *c = &m->cfg;
    GenOptions go = { .n_generate = EXAMPLE_TOKENS, .keep_probs = 1 };
    Generator *gen;
    int rc = gen_init(&gen, m, cache, prompt, 1, 3, &go, e);
    if (rc < 0)
        return -1;
    /* only once the model is known to run: an error stays one line */
    printf("The worked example of the source document (the teaching notes): model %s, d_model %zu, %zu layer(s),\n"
           "%zu head(s), d_k %zu; weights: %s; cache: %s.\n"
           "Prompt: tokens 0 1 2 (embeddings x0, x1, x2). Generating %d tokens takes %d forward passes.\n",
           c->name, c->d_model, c->n_layers, c->n_heads, c->head_dim, m->source, cache_spec, EXAMPLE_TOKENS,
           EXAMPLE_TOKENS);
    StepReport rep;
    size_t len;
    while ((rc = gen_step(gen, &rep, e)) == 1) {
        const int *seq = gen_sequence(gen, 0, &len); /* the walk shows the token just chosen */
        memcpy(w->tokens, seq, len * sizeof(int));
        on_step(w, &rep);
    }
    if (rc == 0)
        memcpy(out, gen_sequence(gen, 0, &len) + 3, EXAMPLE_TOKENS * sizeof(int));
    gen_free(gen);
    return rc;
}

/* The document's table recomputed, the uncached rows beside it, the tokens
 * of both runs, and the document's FLOP formula set right. */
static void print_summary(const Walk *w, const Model *m, const size_t *rows_u, const int *out, const int *out_u)
{
    const Config *c = &m->cfg;
    printf("\nSummary (the document's table, recomputed):\n");
    printf("  %-5s %-8s %-17s %-19s %-16s %-19s %s\n", "step", "phase", "tokens projected", "cache length after",
           "attention shape", "projection FLOPs", "uncached: projected");
    size_t total = 0, total_u = 0;
    uint64_t total_f = 0;
    for (size_t i = 0; i < w->n_steps && i < 16; i++) {
        char shape[24];
        snprintf(shape, sizeof shape, "(%zu x %zu)", w->nq[i], w->ctx[i]);
        printf("  %-5zu %-8s %-17zu %-19zu %-16s %-19" PRIu64 " %zu\n", i,
               w->phase[i] == PHASE_PREFILL ? "prefill" : "decode", w->rows[i], w->ctx[i], shape, w->proj_flops[i],
               rows_u[i]);
        total += w->rows[i];
        total_u += rows_u[i];
        total_f += w->proj_flops[i];
    }
    printf("  %-5s %-8s %-17zu %-19s %-16s %-19" PRIu64 " %zu\n", "total", "", total, "", "", total_f, total_u);
    printf("\nWith the cache %zu token rows are projected; without it %zu (", total, total_u);
    for (size_t i = 0; i < w->n_steps && i < 16; i++)
        printf("%s%zu", i ? " + " : "", rows_u[i]);
    printf("): %.2fx the work.\n", (double)total_u / (double)total);
    printf("Generated tokens: cached");
    for (int i = 0; i < EXAMPLE_TOKENS; i++)
        printf(" %d", out[i]);
    printf("; uncached");
    for (int i = 0; i < EXAMPLE_TOKENS; i++)
        printf(" %d", out_u[i]);
    printf(" (%s).\n", memcmp(out, out_u, EXAMPLE_TOKENS * sizeof(int)) == 0 ? "identical" : "DIFFERENT");
    size_t d = c->d_model, qd = config_q_dim(c), kvd = config_kv_dim(c);
    printf("Projection FLOPs count W_q, W_k, W_v and W_o with a multiply-add as 2 FLOPs: the prefill's\n"
           "%" PRIu64 " = %zu tokens x 2 x (%zu + %zu + %zu + %zu weights). The document writes its prefill cost as\n"
           "tokens x 4 x d_model x d_k = %zu, without the factor 2 that its own code (and kvscope) counts.\n",
           w->proj_flops[0], w->rows[0], qd * d, kvd * d, kvd * d, d * qd, w->rows[0] * 4 * d * c->head_dim);
}

int cmd_example(int argc, char **argv)
{
    ModelOpts mo = { .model = "worked-example" };
    const char *cache_spec = "contiguous";
    int pr = parse_options(argc, argv, &mo, &cache_spec);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return EXIT_USAGE;
    Err e = { 0 };
    Model m;
    if (setup_load_model(&mo, 0, &m, &e) < 0)
        return cli_fail(&e);
    const int prompt[3] = { 0, 1, 2 };
    KvCache *cache = NULL;
    if (m.cfg.vocab < 3)
        err_set(&e, ERR_USAGE, "the example needs a vocabulary of at least 3 tokens");
    else if (m.cfg.architecture != ARCH_DECODER)
        err_set(&e, ERR_USAGE, "example: model '%s' is an encoder-decoder; the walk is a decoder's (lesson 15 walks "
                "its caches)", m.cfg.name);
    else if (m.cfg.attention != ATTN_GQA)
        err_set(&e, ERR_USAGE, "example: model '%s' caches MLA latents, not the K and V rows the walk prints (lesson "
                "14 walks its cache)", m.cfg.name);
    m.attend = ATTEND_NAIVE; /* the walk shows every attention weight */
    KvGeometry geo = model_kv_geometry(&m, 1);
    if (e.kind == ERR_NONE)
        cache = kv_open(cache_spec, &geo, &e);
    Walk w = { .m = &m, .cache = cache, .prompt = prompt };
    int out[EXAMPLE_TOKENS], out_u[EXAMPLE_TOKENS];
    size_t rows_u[16] = { 0 };
    GenOptions gu = { .n_generate = EXAMPLE_TOKENS };
    int rc = !cache || walk_cached(&w, &m, cache, prompt, cache_spec, out, &e) < 0 ||
             generate(&m, NULL, prompt, 1, 3, &gu, out_u, count_uncached, rows_u, &e) < 0
                 ? cli_fail(&e)
                 : 0;
    if (rc == 0) {
        print_summary(&w, &m, rows_u, out, out_u);
        if (memcmp(out, out_u, sizeof out) != 0 && !cache->lossy) {
            err_set(&e, ERR_RUNTIME, "cache '%s' is exact, but its tokens differ from the uncached run's",
                    cache_spec);
            rc = cli_fail(&e);
        } else if (memcmp(out, out_u, sizeof out) != 0) {
            printf("(a lossy cache: the difference is what it gives up, not a fault)\n");
        }
    }
    kv_free(cache);
    model_free(&m);
    return rc;
}
