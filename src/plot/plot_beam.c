/* plot_beam.c: figure 9, beam search over the encoder-decoder (model/beam.h)
 * at growing widths, its self-attention cache contiguous (a fork copies the
 * parent's rows: no copy-on-write) or paged (a fork shares the parent's
 * pages and a shared page is copied on its first write). Every number is
 * measured on real searches: the cache's bytes after each pass, the bytes
 * the forks and the copies on write moved. */
#include "plot/plot.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/beam.h"
#include "model/encdec.h"

#define BEAM_MODEL "encdec"

/* The widths searched (each search encodes the source again: most of the
 * time goes there). --quick keeps the first N_WIDTHS_QUICK. */
static const size_t widths[] = { 1, 2, 4, 8, 16, 32 };
#define N_WIDTHS_ALL (sizeof widths / sizeof widths[0])
#define N_WIDTHS_QUICK 3

/* The self caches compared: the first copies on fork, the others share. */
static const struct {
    const char *spec;
    const char *column; /* column prefix in beam.tsv */
} caches[] = {
    { "contiguous", "contiguous" },
    { "paged:page=16", "paged16" },
    { "paged:page=4", "paged4" },
};
#define N_CACHES (sizeof caches / sizeof caches[0])

/* What one search measured. */
typedef struct {
    BeamResult res;
    size_t reserved_peak;     /* most bytes the self cache reserved after a pass */
    size_t shared_peak;       /* most pages shared at once, after reordering */
} Search;

static int on_step(void *user, const BeamStep *s)
{
    Search *x = user;
    if (s->self_bytes_reserved > x->reserved_peak)
        x->reserved_peak = s->self_bytes_reserved;
    if (s->kv.pages_shared > x->shared_peak)
        x->shared_peak = s->kv.pages_shared;
    return 0;
}

static int search(const Model *m, const int *src, const char *spec, size_t W, Search *x, Err *e)
{
    memset(x, 0, sizeof *x);
    KvGeometry geo = encdec_self_geometry(m, W);
    KvCache *self = kv_open(spec, &geo, e);
    if (!self)
        return -1;
    BeamOptions o = { .width = W, .max_len = m->cfg.max_seq_len, .alpha = 1.0 };
    int rc = beam_search(m, src, self, &o, &x->res, on_step, x, e);
    kv_free(self);
    return rc;
}

/* 1 when a and b found the same hypotheses (tokens and ends). */
static int same_beams(const BeamResult *a, const BeamResult *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->hyps[i].len != b->hyps[i].len || a->hyps[i].finished != b->hyps[i].finished ||
            memcmp(a->hyps[i].tokens, b->hyps[i].tokens, a->hyps[i].len * sizeof(int)) != 0)
            return 0;
    return 1;
}

/* Load the encoder-decoder, its memory checked with room for the searches
 * at width Wmax (*mem), and draw its source ids (*src, the caller frees). */
static int open_beam_model(const PlotCtx *ctx, size_t Wmax, Model *m, EncDecMemory *mem, int **src, Err *e)
{
    ModelOpts mo = { .model = BEAM_MODEL };
    Config cfg;
    if (setup_load_config(&mo, &cfg, e) < 0 || encdec_memory(&cfg, cfg.max_seq_len, Wmax, mem, e) < 0)
        return -1;
    if (setup_load_model(&mo, 2 * N_CACHES * mem->shared_total, m, e) < 0)
        return -1;
    PromptOpts po = { .len = m->cfg.src_len, .seed = ctx->seed, .max_len = m->cfg.src_len };
    size_t batch, len;
    if (setup_make_prompt(&po, &m->cfg, src, &batch, &len, e) < 0) {
        model_free(m);
        return -1;
    }
    return 0;
}

static void write_beam_header(FILE *f)
{
    fputs("width\tsteps\tforks\tself_closed_form_bytes\tcross_bytes", f);
    for (size_t c = 0; c < N_CACHES; c++)
        fprintf(f, "\t%s_peak_bytes\t%s_last_bytes\t%s_reserved_peak_bytes\t%s_copied_bytes\t%s_cow_pages\t"
                   "%s_shared_pages_peak", caches[c].column, caches[c].column, caches[c].column,
                caches[c].column, caches[c].column, caches[c].column);
    fputs("\tsame_beams\n", f);
}

/* Search at width W with every self cache and write beam.tsv's row; each
 * cache's peak and copied bytes into peak[c] and copied[c]. */
static int write_beam_width(FILE *f, const Model *m, const int *src, size_t W, size_t *peak, size_t *copied, Err *e)
{
    Search x[N_CACHES];
    size_t done = 0;
    int rc = 0;
    for (; done < N_CACHES && rc == 0; done++)
        rc = search(m, src, caches[done].spec, W, &x[done], e);
    EncDecMemory mw;
    if (rc == 0)
        rc = encdec_memory(&m->cfg, m->cfg.max_seq_len, W, &mw, e);
    if (rc == 0) {
        const BeamResult *r0 = &x[0].res;
        int same = 1; /* the caches must not change what the search finds */
        for (size_t c = 1; c < N_CACHES; c++)
            same &= same_beams(r0, &x[c].res) && x[c].res.forks == r0->forks;
        fprintf(f, "%zu\t%zu\t%zu\t%zu\t%zu", W, r0->steps, r0->forks, W * mw.self_per_beam, r0->cross_bytes);
        for (size_t c = 0; c < N_CACHES; c++) {
            const BeamResult *r = &x[c].res;
            fprintf(f, "\t%zu\t%zu\t%zu\t%" PRIu64 "\t%zu\t%zu", r->self_bytes_peak, r->self_bytes_last,
                    x[c].reserved_peak, r->total.bytes_copied, r->kv.cow_copies, x[c].shared_peak);
            peak[c] = r->self_bytes_peak;
            copied[c] = r->total.bytes_copied;
        }
        fprintf(f, "\t%d\n", same);
    }
    for (size_t c = 0; c < done; c++)
        beam_result_free(&x[c].res);
    return rc;
}

static int write_beam_labels(const PlotCtx *ctx, const Model *m, const EncDecMemory *mem, Err *e)
{
    const Config *c = &m->cfg;
    char caption[1024];
    snprintf(caption, sizeof caption,
             "model %s (the encoder-decoder notes' encoder-decoder): decoder %zu layers x %zu KV heads x %zu, f32 (%zu B of self "
             "cache per beam at %zu tokens); weights %s\n"
             "source: %zu random ids (seed %" PRIu64 "); beam search up to %zu tokens, score = log p / len; self "
             "cache: contiguous (a fork copies the rows) vs paged:page=16 and paged:page=4 (copy-on-write)\n"
             "the cross cache (%zu B) is computed once and shared by every beam, whatever the width: not drawn; "
             "machine: %s",
             c->name, c->n_layers, c->n_kv_heads, c->head_dim, mem->self_per_beam, c->max_seq_len, m->source,
             c->src_len, ctx->seed, c->max_seq_len, mem->cross_per_beam, ctx->machine);
    FILE *labels = plot_labels_open(ctx, "beam", "Beam search memory vs beam width, with and without copy-on-write",
                                    caption, e);
    if (!labels)
        return -1;
    fprintf(labels, "max_len = %zu\nself_per_beam = %zu\n", c->max_seq_len, mem->self_per_beam);
    return plot_close(labels, "beam", e);
}

int plot_beam(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    const size_t n_widths = ctx->quick ? N_WIDTHS_QUICK : N_WIDTHS_ALL, Wmax = widths[n_widths - 1];
    Model m;
    EncDecMemory mem;
    int *src = NULL;
    if (open_beam_model(ctx, Wmax, &m, &mem, &src, e) < 0)
        return -1;
    FILE *f = plot_open(ctx, "beam.tsv", e);
    int rc = f ? 0 : -1;
    if (rc == 0)
        write_beam_header(f);
    size_t peak_w[N_CACHES] = { 0 }, copied_w[N_CACHES] = { 0 }; /* at the widest search */
    for (size_t w = 0; w < n_widths && rc == 0; w++)
        rc = write_beam_width(f, &m, src, widths[w], peak_w, copied_w, e);
    if (f && plot_close(f, "beam.tsv", rc == 0 ? e : NULL) < 0)
        rc = -1;
    if (rc == 0)
        rc = write_beam_labels(ctx, &m, &mem, e);
    if (rc == 0)
        snprintf(note->note, sizeof note->note,
                 "width %zu: self cache peak %.2f MiB contiguous, %.2f paged:16, %.2f paged:4; copied %.1f, %.1f, "
                 "%.1f MiB", Wmax, peak_w[0] / 1048576.0, peak_w[1] / 1048576.0, peak_w[2] / 1048576.0,
                 copied_w[0] / 1048576.0, copied_w[1] / 1048576.0, copied_w[2] / 1048576.0);
    free(src);
    model_free(&m);
    return rc;
}
