/* attend_split.c: split-K decode attention and its log-sum-exp merge
 * (attend_split.h). Each part is the flash form over a run of whole
 * visible rows (attend_flash_part); the parts share nothing but what they
 * read, so they run side by side on the pool, and only the merge, after
 * them, sees all of them. */
#include "kernels/attend_split.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attend_rows.h"
#include "util/pool.h"

void attend_merge(float *out, const float *m, const float *l, const float *acc, size_t parts, size_t G, size_t hd)
{
    for (size_t g = 0; g < G; g++) {
        float M = -INFINITY;
        for (size_t p = 0; p < parts; p++)
            if (l[p * G + g] > 0.0f && m[p * G + g] > M)
                M = m[p * G + g];
        float *o = out + g * hd;
        memset(o, 0, hd * sizeof *o);
        if (M == -INFINITY) /* no part saw a row */
            continue;
        float L = 0.0f;
        for (size_t p = 0; p < parts; p++) {
            if (!(l[p * G + g] > 0.0f))
                continue;
            const float w = expf(m[p * G + g] - M); /* the part's exponentials, brought to the common max */
            const float *ap = acc + (p * G + g) * hd;
            L += w * l[p * G + g];
            for (size_t d = 0; d < hd; d++)
                o[d] += w * ap[d];
        }
        const float inv = 1.0f / L;
        for (size_t d = 0; d < hd; d++)
            o[d] *= inv;
    }
}

/* Rows of every part but the last, for `parts` parts of `seen` rows: even
 * shares, rounded up to whole ATTEND_SPLIT_MIN_ROWS. */
static size_t part_rows(size_t seen, size_t parts)
{
    const size_t share = (seen + parts - 1) / parts;
    return (share + ATTEND_SPLIT_MIN_ROWS - 1) / ATTEND_SPLIT_MIN_ROWS * ATTEND_SPLIT_MIN_ROWS;
}

size_t attend_split_parts(size_t seen, size_t want)
{
    size_t parts = want < ATTEND_SPLIT_MAX_PARTS ? want : ATTEND_SPLIT_MAX_PARTS;
    if (parts > seen / ATTEND_SPLIT_MIN_ROWS)
        parts = seen / ATTEND_SPLIT_MIN_ROWS;
    if (parts <= 1)
        return 1;
    const size_t rows = part_rows(seen, parts);
    return (seen + rows - 1) / rows; /* the rounding up may leave fewer */
}

/* One query's parts, as the pool's iterations see them. */
typedef struct {
    const Kernels *k;
    const AttnArgs *a;
    size_t t, seen, rows, parts; /* rows: of every part but the last */
    float *m, *l, *acc;          /* [parts][G], [parts][G], [parts][G][hd] */
    float *chan_q;               /* [parts][G][hd] */
    int32_t *iv;                 /* [parts][G][hd] */
    Counters ctr[ATTEND_SPLIT_MAX_PARTS];
} Split;

static void run_part(void *ctx, size_t p)
{
    Split *s = ctx;
    const AttnArgs *a = s->a;
    const size_t G = a->group, hd = a->head_dim, first = p * s->rows;
    const size_t n = p + 1 < s->parts ? s->rows : s->seen - first;
    AttnArgs mine = *a; /* its own scratch: the scores after the earlier parts' */
    mine.scores = a->scores + G * p * (s->rows < ATTEND_TILE ? s->rows : ATTEND_TILE);
    if (a->chan_q)
        mine.chan_q = s->chan_q + p * G * hd;
    if (a->iv)
        mine.iv = s->iv + p * G * hd;
    attend_flash_part(s->k, &mine, s->t, first, n, s->m + p * G, s->l + p * G, s->acc + p * G * hd,
                      &s->ctr[p]);
}

void attend_split(const Kernels *k, const AttnArgs *a, size_t want, Counters *ctr)
{
    const size_t G = a->group, hd = a->head_dim;
    Split *s = NULL;
    float *mem = NULL;
    for (size_t t = 0; t < a->n_q; t++) {
        const size_t qpos = a->pos0 + t, seen = attend_visible_count(a, qpos);
        const size_t parts = pool_in_job() ? 1 : attend_split_parts(seen, want); /* nested: it would run alone */
        if (parts > 1 && !s) { /* one allocation for every query: the most parts any may take */
            const size_t most = attend_split_parts(attend_visible_count(a, a->pos0 + a->n_q - 1), want);
            const size_t cap = most > parts ? most : parts;
            s = calloc(1, sizeof *s);
            mem = malloc(cap * G * (3 * hd + 2) * sizeof(float) + cap * G * hd * sizeof(int32_t));
            if (!s || !mem) { /* no scratch: one part, the flash form */
                free(s);
                free(mem);
                attend(k, ATTEND_FLASH, a, ctr);
                return;
            }
            s->m = mem;
            s->l = s->m + cap * G;
            s->acc = s->l + cap * G;
            s->chan_q = s->acc + cap * G * hd;
            s->iv = (int32_t *)(s->chan_q + cap * G * hd);
        }
        AttnArgs one = *a; /* query t alone */
        one.q = a->q + t * a->q_stride;
        one.out = a->out + t * a->out_stride;
        one.pos0 = qpos;
        one.n_q = 1;
        if (parts == 1) {
            attend(k, ATTEND_FLASH, &one, ctr);
            continue;
        }
        attend_round_query(k, &one, one.q); /* once, before the parts read it */
        s->k = k, s->a = &one, s->t = 0, s->seen = seen, s->parts = parts, s->rows = part_rows(seen, parts);
        memset(s->ctr, 0, parts * sizeof s->ctr[0]);
        pool_run(parts, run_part, s);
        attend_merge(one.out, s->m, s->l, s->acc, parts, G, hd);
        if (ctr) {
            for (size_t p = 0; p < parts; p++) /* the parts' own counts: their tiles' rescales */
                ctr->flops_softmax += s->ctr[p].flops_softmax;
            attend_count_read(ctr, &one, qpos);
            attend_count(ctr, G, seen, hd);
            ctr->flops_softmax += 3 * (uint64_t)parts * G * hd; /* the merge: scale, add, normalize */
            ctr->attn_split_queries++;
            ctr->attn_split_parts += parts;
        }
    }
    free(s);
    free(mem);
}
