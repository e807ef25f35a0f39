/* panel_beams.c: an encoder-decoder's beam search on the simulation screen
 * (the encoder-decoder notes), read from its record (sim/beam_replay.h):
 *
 *   what the step did
 *   the source the encoder read, once; the cross cache every beam reads
 *   the beams: slot, summed log-probability, tokens (the newest marked)
 *   each beam's block table (a page another beam maps: shared glyph)
 *   the pool and this step's counters */
#include <stdint.h>
#include <stdio.h>

#include "ui/fmt.h"
#include "ui/panels.h"

/* Whether physical page pg is in the table of a beam other than b. */
static int shared_page(const BeamFrame *fr, size_t cap, size_t b, size_t pg)
{
    for (size_t o = 0; o < fr->n_beams; o++)
        for (size_t i = 0; o != b && i < cap && fr->pages[o * cap + i] != SIZE_MAX; i++)
            if (fr->pages[o * cap + i] == pg)
                return 1;
    return 0;
}

static void draw_what(Frame *f, Rect r, const BeamReplay *br, size_t step)
{
    if (step == 0) {
        frame_print(f, r, 0, 0, ROLE_NORMAL, "Step 0: the encoder has read the %zu source tokens; their cross K/V "
                    "are computed once, for every beam. Space runs the first decoder step.", br->src_len);
        return;
    }
    const BeamFrame *fr = &br->frames[step - 1];
    if (step == br->n_frames && fr->n_beams && fr->slot[0] == SIZE_MAX) {
        frame_print(f, r, 0, 0, ROLE_NORMAL, "Step %zu: the search ends at its length limit; the %zu beam%s "
                    "become hypotheses, ranked by log p / length", step, fr->n_beams, fmt_s(fr->n_beams));
        return;
    }
    frame_print(f, r, 0, 0, ROLE_NORMAL,
                "Step %zu: %zu beam%s kept, %zu finished; forked %zu slot%s, dropped %zu, copy-on-write %zu "
                "page%s", step, fr->n_beams, fmt_s(fr->n_beams), fr->n_finished, fr->forks, fmt_s(fr->forks),
                fr->drops, fr->cow_copies, fmt_s(fr->cow_copies));
}

static void draw_beams(Frame *f, Rect r, const BeamFrame *fr)
{
    frame_text(f, r, 0, 0, ROLE_DIM, "beam  slot     log p  tokens (newest last)");
    for (size_t j = 0; j < fr->n_beams && (int)j + 1 < r.h; j++) {
        int y = 1 + (int)j;
        int x = fr->slot[j] == SIZE_MAX
                    ? frame_print(f, r, 0, y, ROLE_NORMAL, "%4zu     -  %8.3f ", j, fr->logp[j]) + 1
                    : frame_print(f, r, 0, y, ROLE_NORMAL, "%4zu  %4zu  %8.3f ", j, fr->slot[j], fr->logp[j]) + 1;
        for (size_t t = 0; t < fr->len; t++) {
            char tok[16];
            snprintf(tok, sizeof tok, "%d", fr->tokens[j * fr->len + t]);
            x = frame_text(f, r, x, y, t + 1 == fr->len ? ROLE_NEW : ROLE_NORMAL, tok) + 1;
        }
    }
}

static void draw_tables(Frame *f, Rect r, const BeamReplay *br, const BeamFrame *fr)
{
    const size_t cap = br->max_pages;
    for (size_t j = 0; j < fr->n_beams && (int)j < r.h; j++) {
        int y = (int)j;
        if (fr->slot[j] == SIZE_MAX) {
            frame_print(f, r, 0, y, ROLE_DIM, "beam %zu: a finished hypothesis now", j);
            continue;
        }
        int x = frame_print(f, r, 0, y, ROLE_DIM, "beam %zu (slot %zu)", j, fr->slot[j]) + 2;
        if (x < 20)
            x = 20;
        for (size_t i = 0; i < cap && fr->pages[j * cap + i] != SIZE_MAX; i++) {
            const size_t pg = fr->pages[j * cap + i];
            const int shared = shared_page(fr, cap, j, pg);
            char item[64];
            snprintf(item, sizeof item, "%zu\u2192%zu", i, pg);
            x = frame_text(f, r, x, y, shared ? ROLE_SHARED : ROLE_NORMAL, item);
            if (shared)
                frame_put_glyph(f, r, x++, y, G_SLOT_SHARED, ROLE_SHARED);
            x++;
        }
    }
}

void panel_beams(Frame *f, Rect b, const View *v)
{
    const BeamReplay *br = v->beam;
    const size_t step = v->replay_step;
    draw_what(f, rect_sub(b, 0, 0, b.w, 1), br, step);
    char title[256], size[32];
    snprintf(title, sizeof title, "model %s: beam search of width %zu, self cache %s", br->model, br->width,
             br->cache);
    frame_rule(f, rect_sub(b, 0, 1, b.w, 1), 0, title, 0);
    int x = frame_text(f, b, 0, 2, ROLE_DIM, "source") + 1;
    for (size_t i = 0; i < br->src_len; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "%d", br->src[i]);
        x = frame_text(f, b, x, 2, ROLE_NORMAL, tok) + 1;
    }
    if (step == 0) {
        frame_text(f, b, 0, 4, ROLE_DIM, "no beam yet: one beam starts from BOS at the first step");
        return;
    }
    const BeamFrame *fr = &br->frames[step - 1];
    frame_print(f, b, 0, 3, ROLE_NORMAL, "cross cache: %s, one copy read by %zu beam%s (shared, "
                "never copied, as the encoder-decoder notes ask)", fmt_bytes(size, sizeof size, (double)fr->cross_bytes), fr->cross_refs,
                fmt_s(fr->cross_refs));
    const int beams_h = 1 + (int)fr->n_beams;
    Rect beams = rect_sub(b, 0, 5, b.w, beams_h);
    frame_rule(f, rect_sub(b, 0, 4, b.w, 1), 0, "beams, best first", 0);
    draw_beams(f, beams, fr);
    int y = 5 + beams_h;
    if (fr->kv.page_rows) {
        char rule[96];
        snprintf(rule, sizeof rule, "block tables: %zu row%s a page, pool of %zu", fr->kv.page_rows,
                 fmt_s(fr->kv.page_rows), fr->kv.pages_total);
        frame_rule(f, rect_sub(b, 0, y, b.w, 1), 0, rule, 0);
        draw_tables(f, rect_sub(b, 0, y + 1, b.w, (int)fr->n_beams), br, fr);
        y += 1 + (int)fr->n_beams;
        frame_print(f, b, 0, y++, ROLE_NORMAL, "used %zu  shared %zu  free %zu  prefix hits %zu  "
                    "copy-on-write so far %zu", fr->kv.pages_used, fr->kv.pages_shared, fr->kv.pages_free,
                    fr->kv.prefix_hits, fr->kv.cow_copies);
    }
    char flops[32], rd[32];
    frame_print(f, b, 0, y + 1, ROLE_NORMAL, "this step: %llu token row%s projected, %s FLOPs, K/V read %s, "
                "self cache holds %s", (unsigned long long)fr->ctr.tokens_projected, fmt_s(fr->ctr.tokens_projected),
                fmt_count(flops, sizeof flops, counters_total_flops(&fr->ctr), 8),
                fmt_bytes(rd, sizeof rd, (double)fr->ctr.kv_bytes_read),
                fmt_bytes(size, sizeof size, (double)fr->self_bytes));
    if (step == br->n_frames && br->best_len) {
        int bx = frame_print(f, b, 0, y + 3, ROLE_GOOD, "best hypothesis (score %.3f):", br->best_score) + 1;
        for (size_t t = 0; t < br->best_len; t++) {
            char tok[16];
            snprintf(tok, sizeof tok, "%d", br->best[t]);
            bx = frame_text(f, b, bx, y + 3, ROLE_GOOD, tok) + 1;
        }
    }
}
