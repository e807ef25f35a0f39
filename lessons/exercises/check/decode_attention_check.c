/* decode_attention_check.c: checks lessons/exercises/decode_attention.c
 * (lesson 8).
 *
 * On random model shapes (query heads, KV heads, head_dim, RoPE base, drawn
 * from a fixed seed), random Q, K and V rows are fed to the learner's
 * decode_step token after token, from position 0. Beside it the engine does
 * the same step: RoPE (rope_ref) on q and k, kv_append into a contiguous
 * KvCache, attend() over its blocks. After every step the learner's cache
 * length, its new K and V rows and its output must match the engine's.
 *
 * The last shape scales q and K up so that scores reach the hundreds: a
 * softmax that does not subtract the largest score overflows there.
 *
 * When they do not, the checker names the mistake: it runs the engine again
 * with each of the usual mistakes committed (RoPE at the wrong position, V
 * rotated, the wrong KV head, a mask, the cache ignored, no 1/sqrt(d)), and
 * says which one gives the learner's numbers. */
#include <math.h>
#include <string.h>

#include "decode_attention.h"
#include "harness.h"
#include "kv/cache.h"

#define N_CONFIGS 7
#define LARGE 30.0 /* the last shape's q and K: scores of hundreds, where exp(score) overflows a float */
#define MAX_STEPS 16
#define TOL 1e-4 /* relative: the learner may add in another order */

typedef enum {
    M_NONE,
    M_ROPE_ZERO,
    M_ROPE_NEXT,
    M_ROPE_PREV,
    M_ROPE_ON_V,
    M_HEAD_MOD,
    M_MASK,
    M_NO_CACHE,
    M_NO_SCALE,
    M_COUNT
} Mistake;

static const char *const mistake_text[M_COUNT] = {
    "(none)",
    "RoPE at position 0 (or no RoPE) instead of the token's absolute position pos",
    "RoPE at position pos + 1 (the length after the append?) instead of pos",
    "RoPE at position pos - 1 instead of pos",
    "V rotated by RoPE too: V carries no position, only q and K do",
    "query head h reading KV head h % n_kv_heads: a group is h / (n_heads / n_kv_heads), neighbours",
    "a causal mask in the decode step, as if the query stood at position 0: it saw only row 0",
    "attention over the new row only: the rows already cached were not read",
    "scores not divided by sqrt(head_dim)",
};

/* One engine run with one mistake committed, step by step. */
typedef struct {
    KvCache *cache;
    float out[64 * 64];
    float krow[8 * 64], vrow[8 * 64]; /* the rows appended at the last step */
} Engine;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void) /* [0, 1): xorshift64*, fixed seed */
{
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]))
            return INFINITY; /* never written, or a division by zero */
        d = fmax(d, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return scale > 0 ? d / scale : d;
}

/* The engine's step at position pos, with mistake mk. */
static void engine_step(const Kernels *K, Engine *en, Mistake mk, const DecodeCache *shape, size_t pos,
                        const float *q, const float *k, const float *v)
{
    const size_t H = shape->n_heads, Hkv = shape->n_kv_heads, D = shape->head_dim, group = H / Hkv;
    const double theta = shape->rope_theta;
    size_t rp = mk == M_ROPE_ZERO ? 0 : mk == M_ROPE_NEXT ? pos + 1 : mk == M_ROPE_PREV && pos ? pos - 1 : pos;
    float qr[64 * 64];
    memcpy(qr, q, H * D * sizeof(float));
    memcpy(en->krow, k, Hkv * D * sizeof(float));
    memcpy(en->vrow, v, Hkv * D * sizeof(float));
    rope_ref(qr, H, D, rp, theta, NULL);
    rope_ref(en->krow, Hkv, D, rp, theta, NULL);
    if (mk == M_ROPE_ON_V)
        rope_ref(en->vrow, Hkv, D, pos, theta, NULL);
    if (mk == M_NO_SCALE)
        for (size_t i = 0; i < H * D; i++)
            qr[i] *= sqrtf((float)D);
    Err e = { 0 };
    Counters ctr = { 0 };
    if (kv_append(en->cache, 0, 0, pos, 1, en->krow, en->vrow, &ctr, &e) < 0) {
        printf("the engine's append failed: %s\n", e.msg);
        exit(2);
    }
    float scores[MAX_STEPS + 1];
    for (size_t h = 0; h < H; h++) {
        size_t j = mk == M_HEAD_MOD ? h % Hkv : h / group;
        KvBlock blocks[4];
        size_t nb = kv_n_blocks(en->cache, 0, 0);
        for (size_t i = 0; i < nb && i < 4; i++)
            kv_block(en->cache, 0, 0, j, i, &blocks[i]);
        if (mk == M_NO_CACHE) { /* the last row alone */
            KvBlock *b = &blocks[nb - 1];
            b->k = (const char *)b->k + (b->n - 1) * b->k_stride;
            b->v = (const char *)b->v + (b->n - 1) * b->v_stride;
            b->pos += b->n - 1;
            b->n = 1;
            blocks[0] = *b;
            nb = 1;
        }
        AttnArgs a = { .q = qr + h * D, .q_stride = H * D, .out = en->out + h * D, .out_stride = H * D, .n_q = 1,
                       .group = 1, .head_dim = D, .pos0 = mk == M_MASK ? 0 : pos, .blocks = blocks,
                       .n_blocks = nb, .scores = scores };
        attend(K, ATTEND_NAIVE, &a, &ctr);
    }
}

/* Which mistake gives the learner's output (and rows)? */
static Mistake diagnose(Engine *en, const float *out, const DecodeCache *c, size_t pos)
{
    const size_t D = c->head_dim;
    for (int mk = M_NONE + 1; mk < M_COUNT; mk++) {
        if (rel_diff(out, en[mk].out, c->n_heads * D) > TOL)
            continue;
        int rows_ok = 1;
        for (size_t j = 0; j < c->n_kv_heads; j++)
            rows_ok &= rel_diff(c->k + (j * c->max_seq + pos) * D, en[mk].krow + j * D, D) <= TOL &&
                       rel_diff(c->v + (j * c->max_seq + pos) * D, en[mk].vrow + j * D, D) <= TOL;
        if (rows_ok || mk == M_HEAD_MOD || mk == M_MASK || mk == M_NO_CACHE || mk == M_NO_SCALE)
            return (Mistake)mk;
    }
    return M_NONE;
}

int main(void)
{
    Err e = { 0 };
    const Kernels *K = kernels_select("ref", &e);
    if (!K) {
        printf("no reference kernels: %s\n", e.msg);
        return 2;
    }
    static const size_t kv_heads[] = { 1, 2, 4 }, groups[] = { 1, 2, 3, 4 }, dims[] = { 4, 8, 16, 32 };
    Tally t = { 0, 0 };
    printf("reference: the engine's decode step (rope_ref, a contiguous KvCache, attend) on %d random shapes\n",
           N_CONFIGS);
    for (int ci = 0; ci < N_CONFIGS; ci++) {
        rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(ci + 1); /* each shape its own stream */
        /* the first four shapes have several KV heads and groups of several query heads, where a wrong head
         * mapping shows; the last two may be MHA (groups of 1) or MQA (one KV head) */
        const size_t Hkv = ci < 4 ? kv_heads[1 + (size_t)(uniform() * 2)] : kv_heads[(size_t)(uniform() * 3)];
        const size_t group = ci < 4 ? groups[1 + (size_t)(uniform() * 3)] : groups[(size_t)(uniform() * 4)];
        const size_t D = dims[(size_t)(uniform() * 4)], H = Hkv * group;
        const size_t steps = 9 + (size_t)(uniform() * (MAX_STEPS - 8));
        const double theta = uniform() < 0.5 ? 10000.0 : 500.0 + floor(uniform() * 5000.0);
        DecodeCache c;
        if (decode_cache_init(&c, H, Hkv, D, steps, theta) < 0) {
            printf("decode_cache_init failed\n");
            return 1;
        }
        KvGeometry geo = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = Hkv, .head_dim = D, .max_seq_len = steps };
        Engine *en = calloc(M_COUNT, sizeof *en);
        for (int mk = 0; mk < M_COUNT; mk++)
            if (!(en[mk].cache = kv_open("contiguous", &geo, &e))) {
                printf("cannot open the engine's cache: %s\n", e.msg);
                return 2;
            }
        printf("shape %d: %zu query heads, %zu KV heads (groups of %zu), head_dim %zu, theta %g, %zu tokens\n",
               ci + 1, H, Hkv, group, D, theta, steps);
        const double big = ci == N_CONFIGS - 1 ? LARGE : 1.0;
        if (big > 1.0)
            printf("  (q and K scaled by %g: scores reach the hundreds, as logits of a trained model can)\n", big);
        float q[64 * 64], ql[64 * 64], k[8 * 64], v[8 * 64], out[64 * 64];
        for (size_t pos = 0; pos < steps; pos++) {
            for (size_t i = 0; i < H * D; i++)
                q[i] = (float)(big * (2 * uniform() - 1));
            for (size_t i = 0; i < Hkv * D; i++)
                k[i] = (float)(big * (2 * uniform() - 1)), v[i] = (float)(2 * uniform() - 1);
            for (int mk = 0; mk < M_COUNT; mk++)
                engine_step(K, &en[mk], (Mistake)mk, &c, pos, q, k, v);
            memcpy(ql, q, sizeof q);
            for (size_t i = 0; i < H * D; i++)
                out[i] = NAN;
            float kk[8 * 64], vv[8 * 64];
            memcpy(kk, k, sizeof kk);
            memcpy(vv, v, sizeof vv);
            decode_step(&c, pos, ql, kk, vv, out);
            int bad = 0, ok = c.len == pos + 1;
            if (tally(&t, ok))
                printf("  position %zu: expected the cache to hold %zu positions after the step, got %zu (set "
                       "c->len when you append)\n", pos, pos + 1, c.len);
            if (!ok)
                break; /* the next shape */
            for (size_t j = 0; j < Hkv && !bad; j++) {
                double dk = rel_diff(c.k + (j * c.max_seq + pos) * D, en[M_NONE].krow + j * D, D);
                double dv = rel_diff(c.v + (j * c.max_seq + pos) * D, en[M_NONE].vrow + j * D, D);
                bad = !(dk <= TOL && dv <= TOL);
                if (tally(&t, !bad)) {
                    printf("  position %zu, KV head %zu: the cached rows differ from the engine's (K off by %.3g, "
                           "V off by %.3g, relative)\n", pos, j, dk, dv);
                    int empty = 1;
                    for (size_t i = 0; i < D; i++)
                        empty &= c.k[(j * c.max_seq + pos) * D + i] == 0.0f;
                    if (empty)
                        printf("  nothing was written at position %zu: the new rows go to row pos of each KV head, "
                               "c->k + (j * max_seq + pos) * head_dim\n", pos);
                }
            }
            double d = rel_diff(out, en[M_NONE].out, H * D);
            if (!bad) {
                bad = !(d <= TOL);
                if (tally(&t, !bad))
                    printf("  position %zu: the output differs from the engine's by %.3g (relative); expected head "
                           "0 [%.5f, %.5f, ...], got [%.5f, %.5f, ...]\n", pos, d, en[M_NONE].out[0],
                           en[M_NONE].out[1], out[0], out[1]);
            }
            if (bad) {
                int finite = 1;
                for (size_t i = 0; i < H * D; i++)
                    finite &= isfinite(out[i]) != 0;
                Mistake mk = diagnose(en, out, &c, pos);
                if (!finite && big > 1.0)
                    printf("  your output holds inf or NaN where the engine's is finite: exp(score) overflows a "
                           "float past a score of about 88; subtract each head's largest score before exp (the "
                           "softmax is unchanged)\n");
                else if (mk != M_NONE)
                    printf("  your numbers are the engine's with this mistake: %s\n", mistake_text[mk]);
                else
                    printf("  (they match none of the usual mistakes: RoPE position, V rotated, head mapping, "
                           "mask, cache ignored, scale)\n");
                break; /* the next shape */
            }
        }
        for (int mk = 0; mk < M_COUNT; mk++)
            kv_free(en[mk].cache);
        free(en);
        decode_cache_free(&c);
    }
    return verdict(&t, "comparisons");
}
