/* split_merge_check.c: checks lessons/exercises/split_merge.c (lesson 17).
 *
 * On random heads (head_dim, rows, the query and K/V rows drawn from a
 * fixed seed) the engine attends over a contiguous f32 cache in one pass
 * (attend, flash form, one thread), and again in parts: attend_flash_part
 * leaves each part's (m, l, acc), the state kernels/attend_split.c merges.
 * The learner's partial_merge joins the parts; its state must be the
 * engine's merge (attend_merge) and its acc / l the one-pass output.
 *
 * Cases: two parts cut at a random row; out aliasing a; an empty part on
 * either side; three to six parts folded left to right; and heads whose
 * scores reach the hundreds, where exp(score) alone overflows a float.
 *
 * When the learner's numbers differ, the checker computes the usual
 * mistakes on the same parts and names the one that gives them. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "kernels/attend_rows.h"
#include "kernels/attend_split.h"
#include "split_merge.h"

#define N_HEADS 24
#define MAX_ROWS 700
#define MAX_PARTS 6
#define LARGE 40.0 /* the last heads' q and K: scores of hundreds */
#define TOL 1e-4   /* relative: the learner may multiply in another order */

typedef enum {
    M_NONE,
    M_NO_RESCALE,
    M_L_ONLY,
    M_ACC_ONLY,
    M_INVERSE,
    M_MIN,
    M_COUNT
} Mistake;

static const char *const mistake_text[M_COUNT] = {
    "(none)",
    "l and acc added without rescaling each part by exp(m_i - m): each part's sums are taken against its own "
    "maximum, so they cannot be added as they are",
    "l rescaled by exp(m_i - m), but acc added without that factor: the weighted values must be brought to the "
    "common maximum too",
    "acc rescaled by exp(m_i - m), but l added without that factor: the sum of exponentials must be brought to "
    "the common maximum too",
    "each part scaled by exp(m - m_i), the inverse of the factor: a part whose maximum is below m must shrink",
    "m set to the smaller of the two maxima: the merged state is taken against the larger",
};

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double uniform(void) /* [0, 1): xorshift64*, fixed seed */
{
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* The merge with one mistake committed (M_NONE: the right one). */
static void merge_as(Mistake mk, Partial *out, const Partial *a, const Partial *b, size_t hd)
{
    const float hi = fmaxf(a->m, b->m), lo = fminf(a->m, b->m);
    const float m = mk == M_MIN ? lo : hi;
    float wa = a->l > 0.0f ? expf(a->m - m) : 0.0f, wb = b->l > 0.0f ? expf(b->m - m) : 0.0f;
    if (mk == M_INVERSE)
        wa = a->l > 0.0f ? expf(m - a->m) : 0.0f, wb = b->l > 0.0f ? expf(m - b->m) : 0.0f;
    const float la = mk == M_NO_RESCALE || mk == M_ACC_ONLY ? 1.0f : wa;
    const float lb = mk == M_NO_RESCALE || mk == M_ACC_ONLY ? 1.0f : wb;
    const float va = mk == M_NO_RESCALE || mk == M_L_ONLY ? 1.0f : wa;
    const float vb = mk == M_NO_RESCALE || mk == M_L_ONLY ? 1.0f : wb;
    Partial r = { .m = m, .l = la * a->l + lb * b->l };
    for (size_t d = 0; d < hd; d++)
        r.acc[d] = va * a->acc[d] + vb * b->acc[d];
    *out = r;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]))
            return INFINITY;
        d = fmax(d, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return scale > 0 ? d / scale : d;
}

/* The output a state stands for: acc / l. */
static void finish(float *out, const Partial *p, size_t hd)
{
    for (size_t d = 0; d < hd; d++)
        out[d] = p->l > 0.0f ? p->acc[d] / p->l : 0.0f;
}

/* Does the learner's state agree with `want` (m exactly, l and acc / l within TOL)? */
static int same_state(const Partial *got, const Partial *want, size_t hd)
{
    float og[SPLIT_MAX_HD], ow[SPLIT_MAX_HD];
    finish(og, got, hd);
    finish(ow, want, hd);
    return isfinite(got->l) && got->m == want->m && fabsf(got->l - want->l) <= TOL * fabsf(want->l) &&
           rel_diff(og, ow, hd) <= TOL;
}

/* Which mistake gives the learner's state, merging a and b? */
static const char *diagnose(const Partial *got, const Partial *a, const Partial *b, size_t hd)
{
    int finite = isfinite(got->m) && isfinite(got->l);
    for (size_t d = 0; d < hd; d++)
        finite &= isfinite(got->acc[d]);
    if (!finite)
        return "a result that is not finite (inf or NaN): exp of a score or of a part's maximum overflowed "
               "(a float holds exp(x) only up to x = 88); take exp(m_i - m), which is at most 1";
    for (int mk = M_NONE + 1; mk < M_COUNT; mk++) {
        Partial w;
        merge_as((Mistake)mk, &w, a, b, hd);
        if (same_state(got, &w, hd))
            return mistake_text[mk];
    }
    return NULL;
}

/* One head's K/V rows in a contiguous f32 cache, and its query. */
typedef struct {
    KvCache *cache;
    KvBlock block;
    size_t n, hd;
    float q[SPLIT_MAX_HD];
    float scores[MAX_ROWS];
} Head;

static int head_init(Head *h, size_t n, size_t hd, double big)
{
    Err e = { 0 };
    KvGeometry geo = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = hd, .max_seq_len = n };
    if (!(h->cache = kv_open("contiguous", &geo, &e))) {
        printf("cannot open the engine's cache: %s\n", e.msg);
        return -1;
    }
    h->n = n, h->hd = hd;
    float k[SPLIT_MAX_HD], v[SPLIT_MAX_HD];
    for (size_t d = 0; d < hd; d++)
        h->q[d] = (float)(big * (2 * uniform() - 1));
    for (size_t p = 0; p < n; p++) {
        for (size_t d = 0; d < hd; d++)
            k[d] = (float)(big * (2 * uniform() - 1)), v[d] = (float)(2 * uniform() - 1);
        Counters ctr = { 0 };
        if (kv_append(h->cache, 0, 0, p, 1, k, v, &ctr, &e) < 0) {
            printf("the engine's append failed: %s\n", e.msg);
            return -1;
        }
    }
    kv_block(h->cache, 0, 0, 0, 0, &h->block);
    return 0;
}

static AttnArgs head_args(Head *h, float *out)
{
    return (AttnArgs){ .q = h->q, .q_stride = h->hd, .out = out, .out_stride = h->hd, .n_q = 1, .group = 1,
                       .head_dim = h->hd, .pos0 = h->n - 1, .blocks = &h->block, .n_blocks = 1,
                       .scores = h->scores };
}

/* The engine's partial state of rows first .. first + n - 1. */
static void engine_part(const Kernels *K, Head *h, size_t first, size_t n, Partial *p)
{
    float scratch[SPLIT_MAX_HD];
    AttnArgs a = head_args(h, scratch);
    memset(p, 0, sizeof *p);
    attend_flash_part(K, &a, 0, first, n, &p->m, &p->l, p->acc, NULL);
}

/* The engine's merge of parts, normalized: attend_merge. */
static void engine_merge(float *out, const Partial *parts, size_t n_parts, size_t hd)
{
    float m[MAX_PARTS], l[MAX_PARTS], acc[MAX_PARTS * SPLIT_MAX_HD];
    for (size_t i = 0; i < n_parts; i++) {
        m[i] = parts[i].m, l[i] = parts[i].l;
        memcpy(acc + i * hd, parts[i].acc, hd * sizeof(float));
    }
    attend_merge(out, m, l, acc, n_parts, 1, hd);
}

static void show(const char *what, const Partial *got, const float *want_out, float want_m, float want_l, size_t hd)
{
    float og[SPLIT_MAX_HD];
    finish(og, got, hd);
    printf("  %s\n    expected m %.7g, l %.7g, acc / l [0..2] %.6g %.6g %.6g\n"
           "    actual   m %.7g, l %.7g, acc / l [0..2] %.6g %.6g %.6g\n",
           what, want_m, want_l, want_out[0], want_out[1], want_out[2], got->m, got->l, og[0], og[1], og[2]);
}

/* Compare the learner's merge of a and b with the engine's; name the mistake. */
static void check_pair(Tally *t, const char *what, const Partial *got, const Partial *a, const Partial *b,
                       const float *full, size_t hd, const char **named)
{
    Partial parts[2] = { *a, *b }, want;
    float merged[SPLIT_MAX_HD], og[SPLIT_MAX_HD];
    engine_merge(merged, parts, 2, hd);
    merge_as(M_NONE, &want, a, b, hd);
    finish(og, got, hd);
    const int ok = same_state(got, &want, hd) && rel_diff(og, merged, hd) <= TOL &&
                   (!full || rel_diff(og, full, hd) <= TOL);
    if (tally(t, ok)) {
        show(what, got, merged, want.m, want.l, hd);
        const char *why = diagnose(got, a, b, hd);
        if (why) {
            printf("    the mistake: %s\n", why);
            if (!*named)
                *named = why;
        }
    }
}

int main(void)
{
    Err e = { 0 };
    const Kernels *K = kernels_select("ref", &e);
    if (!K) {
        printf("no reference kernels: %s\n", e.msg);
        return 2;
    }
    static const size_t dims[] = { 4, 8, 16, 32, 64, 128 };
    Tally t = { 0, 0 };
    const char *named = NULL;
    printf("reference: the engine's flash attention in one pass and in parts (attend_flash_part, attend_merge), "
           "on %d random heads\n",
           N_HEADS);
    for (int hi = 0; hi < N_HEADS; hi++) {
        const size_t hd = dims[(size_t)(uniform() * 6)];
        const size_t n = 2 + (size_t)(uniform() * (MAX_ROWS - 2));
        const double big = hi >= N_HEADS - 4 ? LARGE : 1.0;
        Head h;
        if (head_init(&h, n, hd, big) < 0)
            return 2;
        float full[SPLIT_MAX_HD];
        AttnArgs a = head_args(&h, full);
        attend(K, ATTEND_FLASH, &a, NULL);
        char what[160];

        /* two parts cut at a random row */
        const size_t cut = 1 + (size_t)(uniform() * (double)(n - 1));
        Partial pa, pb, got;
        engine_part(K, &h, 0, cut, &pa);
        engine_part(K, &h, cut, n - cut, &pb);
        snprintf(what, sizeof what, "head %d (head_dim %zu, %zu rows%s): parts 0..%zu and %zu..%zu", hi + 1, hd, n,
                 big > 1 ? ", scores in the hundreds" : "", cut - 1, cut, n - 1);
        memset(&got, 0, sizeof got);
        partial_merge(&got, &pa, &pb, hd);
        check_pair(&t, what, &got, &pa, &pb, full, hd, &named);

        /* out the same object as a */
        Partial alias = pa;
        partial_merge(&alias, &alias, &pb, hd);
        snprintf(what, sizeof what, "head %d: the same merge written over a (out == a)", hi + 1);
        check_pair(&t, what, &alias, &pa, &pb, full, hd, &named);

        /* an empty part on either side */
        Partial empty = { .m = -INFINITY, .l = 0.0f };
        Partial whole;
        engine_part(K, &h, 0, n, &whole);
        partial_merge(&got, &whole, &empty, hd);
        snprintf(what, sizeof what, "head %d: all rows merged with an empty part (m = -INFINITY, l = 0)", hi + 1);
        check_pair(&t, what, &got, &whole, &empty, full, hd, &named);
        partial_merge(&got, &empty, &whole, hd);
        snprintf(what, sizeof what, "head %d: an empty part merged with all rows", hi + 1);
        check_pair(&t, what, &got, &empty, &whole, full, hd, &named);

        /* three to six parts, folded left to right */
        if (n >= MAX_PARTS) {
            const size_t np = 3 + (size_t)(uniform() * (MAX_PARTS - 2));
            Partial parts[MAX_PARTS], acc_state;
            size_t first = 0;
            for (size_t i = 0; i < np; i++) {
                const size_t rows = i + 1 == np ? n - first : (n - first) / (np - i);
                engine_part(K, &h, first, rows, &parts[i]);
                first += rows;
            }
            acc_state = parts[0];
            for (size_t i = 1; i < np; i++) {
                Partial before = acc_state;
                partial_merge(&acc_state, &acc_state, &parts[i], hd);
                snprintf(what, sizeof what, "head %d: %zu parts folded, after part %zu", hi + 1, np, i + 1);
                check_pair(&t, what, &acc_state, &before, &parts[i], i + 1 == np ? full : NULL, hd, &named);
                Partial right;
                merge_as(M_NONE, &right, &before, &parts[i], hd);
                acc_state = right; /* go on from the right state: one mistake is shown once */
            }
        }
        kv_free(h.cache);
    }
    if (named)
        printf("the mistake: %s\n", named);
    return verdict(&t, "merged states");
}
