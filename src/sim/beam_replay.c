/* beam_replay.c: a beam search run once and recorded (beam_replay.h). */
#include "sim/beam_replay.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/beam.h"
#include "model/encdec.h"

typedef struct {
    BeamReplay *r;
    const KvCache *self;
    int failed;
} Recorder;

/* Each kept extension is its parent beam's tokens plus one. */
static int record(void *user, const BeamStep *st)
{
    Recorder *rec = user;
    BeamReplay *r = rec->r;
    BeamFrame *grown = realloc(r->frames, (r->n_frames + 1) * sizeof *grown);
    if (!grown)
        return rec->failed = 1;
    r->frames = grown;
    const BeamFrame *prev = r->n_frames ? &r->frames[r->n_frames - 1] : NULL;
    BeamFrame *fr = &r->frames[r->n_frames];
    /* after the last step the kept extensions are the final hypotheses, in no slot */
    const size_t n = st->n_next ? st->n_next : st->n_kept, len = st->step + 1;
    *fr = (BeamFrame){ .n_beams = n, .len = len, .n_finished = st->n_finished, .forks = st->forks,
                       .drops = st->drops, .cow_copies = st->cow_copies, .kv = st->kv,
                       .self_bytes = st->self_bytes_used, .cross_bytes = st->cross_bytes,
                       .cross_refs = st->cross_refs, .ctr = st->ctr };
    fr->tokens = malloc((n ? n : 1) * len * sizeof(int));
    fr->logp = malloc((n ? n : 1) * sizeof(double));
    fr->slot = malloc((n ? n : 1) * sizeof(size_t));
    fr->pages = malloc((n ? n : 1) * r->max_pages * sizeof(size_t));
    r->n_frames++; /* owned from here, freed with the replay even when incomplete */
    if (!fr->tokens || !fr->logp || !fr->slot || !fr->pages)
        return rec->failed = 1;
    for (size_t j = 0; j < n; j++) {
        const size_t parent = (size_t)st->parent[j];
        if (prev && parent < prev->n_beams)
            memcpy(fr->tokens + j * len, prev->tokens + parent * prev->len, prev->len * sizeof(int));
        fr->tokens[j * len + len - 1] = st->token[j];
        fr->logp[j] = st->logp[j];
        fr->slot[j] = st->n_next == 0 ? SIZE_MAX : st->slots ? st->slots[j] : j;
        size_t *pt = fr->pages + j * r->max_pages;
        size_t got = fr->slot[j] != SIZE_MAX && rec->self->ops->page_table
                         ? rec->self->ops->page_table(rec->self, fr->slot[j], pt, r->max_pages)
                         : 0;
        for (size_t i = got < r->max_pages ? got : r->max_pages; i < r->max_pages; i++)
            pt[i] = SIZE_MAX;
    }
    return 0;
}

int beam_replay_make(BeamReplay *r, const Model *m, const char *spec, const int *src, size_t src_len, size_t width,
                     size_t max_len, Err *e)
{
    memset(r, 0, sizeof *r);
    if (m->cfg.architecture != ARCH_ENCDEC)
        return err_set(e, ERR_USAGE, "model '%s' is not an encoder-decoder", m->cfg.name);
    KvGeometry geo = encdec_self_geometry(m, width);
    KvCache *self = kv_open(spec, &geo, e);
    if (!self)
        return -1;
    snprintf(r->model, sizeof r->model, "%s", m->cfg.name);
    snprintf(r->cache, sizeof r->cache, "%s", spec);
    r->width = width;
    r->src_len = src_len;
    KvStats st = { 0 };
    kv_stats(self, &st);
    r->max_pages = st.page_rows ? (geo.max_seq_len + st.page_rows - 1) / st.page_rows : 1;
    r->src = malloc(src_len * sizeof(int));
    if (!r->src) {
        kv_free(self);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    memcpy(r->src, src, src_len * sizeof(int));
    BeamOptions bo = { .width = width, .max_len = max_len, .alpha = 1.0 };
    BeamResult res = { 0 };
    Recorder rec = { .r = r, .self = self };
    int rc = beam_search(m, src, self, &bo, &res, record, &rec, e);
    if (rc == 0 && rec.failed)
        rc = err_set(e, ERR_RUNTIME, "out of memory recording the search");
    if (rc == 0 && res.n) {
        r->best = malloc(res.hyps[0].len * sizeof(int));
        if (r->best) {
            memcpy(r->best, res.hyps[0].tokens, res.hyps[0].len * sizeof(int));
            r->best_len = res.hyps[0].len;
        }
        r->best_score = res.hyps[0].score;
    }
    if (rc == 0)
        r->encoder = res.encoder;
    beam_result_free(&res);
    kv_free(self);
    if (rc < 0)
        beam_replay_free(r);
    return rc;
}

void beam_replay_free(BeamReplay *r)
{
    for (size_t i = 0; r->frames && i < r->n_frames; i++) {
        free(r->frames[i].tokens);
        free(r->frames[i].logp);
        free(r->frames[i].slot);
        free(r->frames[i].pages);
    }
    free(r->frames);
    free(r->src);
    free(r->best);
    memset(r, 0, sizeof *r);
}
