/* eval_ci.c: intervals of eval's figures by a segment bootstrap (eval_ci.h). */
#include "sim/eval_ci.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats/bootstrap.h"

/* Which sum of a segment a figure divides, and by what. */
typedef enum { FIG_BPB, FIG_KL, FIG_TOP1 } Figure;

static double seg_num(const EvalSegment *g, Figure f)
{
    return f == FIG_BPB ? g->nll / log(2.0) : f == FIG_KL ? g->kl : g->agree;
}

static double seg_den(const EvalSegment *g, Figure f)
{
    return f == FIG_BPB ? g->bytes : (double)g->count;
}

static double point(const EvalResult *r, Figure f)
{
    return f == FIG_BPB ? r->bits_per_byte : f == FIG_KL ? r->kl : r->top1_agree;
}

/* The interval of figure f of a (minus that of b, when b is not NULL) on
 * the resamples of bs; num and den [segments] are scratch. */
static int interval(const Bootstrap *bs, const EvalResult *a, const EvalResult *b, Figure f, double level,
                    double *num, double *den, EvalCi *out, Err *e)
{
    for (size_t j = 0; j < a->n_seg; j++) {
        num[j] = seg_num(&a->seg[j], f) - (b ? seg_num(&b->seg[j], f) : 0);
        den[j] = seg_den(&a->seg[j], f); /* the same segments: the same bytes and counts in b */
    }
    BootInterval bi;
    if (bootstrap_ratio(bs, num, den, level, &bi, e) < 0)
        return -1;
    *out = (EvalCi){ .value = point(a, f) - (b ? point(b, f) : 0), .lo = bi.lo, .hi = bi.hi };
    return 0;
}

int eval_intervals(const EvalResult *r, size_t n, const size_t (*pairs)[2], size_t n_pair, EvalIntervals *out,
                   Err *e)
{
    memset(out, 0, sizeof *out);
    if (n == 0 || !r[0].seg || r[0].n_seg == 0)
        return err_set(e, ERR_USAGE, "eval: no segments to resample (EvalOptions.segments is 0)");
    const size_t S = r[0].n_seg;
    for (size_t i = 0; i < n; i++)
        if (r[i].n_seg != S || !r[i].seg)
            return err_set(e, ERR_USAGE, "eval: cache %zu has %zu segments, cache 0 %zu", i, r[i].n_seg, S);
    for (size_t p = 0; p < n_pair; p++)
        if (pairs[p][0] >= n || pairs[p][1] >= n)
            return err_set(e, ERR_USAGE, "eval: pair %zu,%zu names a cache past the %zu measured", pairs[p][0],
                           pairs[p][1], n);
    *out = (EvalIntervals){ .segments = S, .resamples = EVAL_CI_RESAMPLES, .seed = EVAL_CI_SEED,
                            .level = EVAL_CI_LEVEL, .n = n, .n_pair = n_pair };
    Bootstrap bs = { 0 };
    double *num = malloc(S * sizeof *num), *den = malloc(S * sizeof *den); /* [S] */
    out->cache = calloc(n, sizeof *out->cache);
    out->pair = calloc(n_pair ? n_pair : 1, sizeof *out->pair);
    int rc = -1;
    if (!num || !den || !out->cache || !out->pair) {
        err_set(e, ERR_RUNTIME, "eval: out of memory for the intervals");
        goto done;
    }
    if (bootstrap_init(&bs, S, out->resamples, out->seed, e) < 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        EvalCacheCi *c = &out->cache[i];
        if (interval(&bs, &r[i], NULL, FIG_BPB, out->level, num, den, &c->bpb, e) < 0 ||
            interval(&bs, &r[i], NULL, FIG_KL, out->level, num, den, &c->kl, e) < 0 ||
            interval(&bs, &r[i], NULL, FIG_TOP1, out->level, num, den, &c->top1, e) < 0)
            goto done;
    }
    for (size_t p = 0; p < n_pair; p++) {
        EvalPairCi *d = &out->pair[p];
        const EvalResult *a = &r[pairs[p][0]], *b = &r[pairs[p][1]];
        d->a = pairs[p][0];
        d->b = pairs[p][1];
        if (interval(&bs, a, b, FIG_BPB, out->level, num, den, &d->bpb, e) < 0 ||
            interval(&bs, a, b, FIG_KL, out->level, num, den, &d->kl, e) < 0 ||
            interval(&bs, a, b, FIG_TOP1, out->level, num, den, &d->top1, e) < 0)
            goto done;
    }
    rc = 0;
done:
    bootstrap_free(&bs);
    free(num);
    free(den);
    return rc;
}

void eval_intervals_free(EvalIntervals *iv)
{
    free(iv->cache);
    free(iv->pair);
    memset(iv, 0, sizeof *iv);
}

EvalSide eval_ci_side(const EvalCi *d)
{
    return d->lo > 0 ? EVAL_ABOVE : d->hi < 0 ? EVAL_BELOW : EVAL_SAME;
}
