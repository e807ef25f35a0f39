/* scr_sim.c: the simulation screen: any model and cache, stepped.
 *
 *   what the newest pass did
 *   cache map (layers x positions)                      [full width]
 *   counters             | attention heatmap (or the roofline, focused)
 *                        | FLOPs per pass (sparkline)
 *   tokens                                              [full width]
 * The roofline is the last Tab stop: focused, it takes the heatmap's place;
 * where the column is tall enough, the two share it. */
#include <stdio.h>

#include "ui/panels.h"
#include "ui/screens.h"

enum { P_MAP, P_COUNTERS, P_HEAT, P_SPARK, P_TOKENS, P_ROOF, P_COUNT };
static const char *const panel_names[P_COUNT] = { "cache map", "counters", "attention", "cost per pass",
                                                  "tokens", "roofline" };

/* Rows the counters panel needs to show all but its optional rows; its
 * roof rows take what the map leaves (panel_counters drops what does not fit). */
#define COUNTERS_H 14
/* Body rows from which the sparkline and tokens get rows of their own. */
#define TALL_H 34
#define MAP_TALL_H 28
/* Rows of a roofline that shares the column with the heatmap. */
#define ROOF_SHARED_H 14
#define SPARK_H 3

static void draw(Frame *f, Rect b, const View *v)
{
    if (v->beam) { /* an encoder-decoder: its beam search instead */
        panel_beams(f, b, v);
        return;
    }
    if (v->serving) { /* many requests over one pool */
        panel_serving(f, b, v);
        return;
    }
    if (v->spec) { /* a draft and a target, round by round */
        panel_speculate(f, b, v);
        return;
    }
    const Session *s = v->sim;
    const Config *c = &session_model(s)->cfg;
    const int focus = v->focus[SCR_SIM];
    const int tok_h = b.h >= TALL_H ? 3 : 2;
    const int spark_wide = b.h >= TALL_H; /* tall: the sparkline gets the full width */
    /* the map is sized as if the sparkline and tokens took rows of their own
     * from MAP_TALL_H body rows on: the counters' roof rows get what it leaves */
    int map_max = b.h - 1 - COUNTERS_H - (b.h >= MAP_TALL_H ? 3 + SPARK_H : 2);
    if (map_max < 3)
        map_max = 3;
    const int map_want = 2 + (int)c->n_layers + (session_tokenizer(s) ? 1 : 0); /* + a row of text */
    int map_h = map_want < map_max ? map_want : map_max;
    int mid_h = b.h - 1 - map_h - tok_h - (spark_wide ? SPARK_H : 0);
    int cw = b.w * 55 / 100;
    if (cw < 54)
        cw = 54;
    if (cw > 66)
        cw = 66;

    panel_what(f, rect_sub(b, 0, 0, b.w, 1), s);
    /* the model and anything that bends its attention, then the cache */
    char title[256], shape[128] = "";
    SessionSpec sp;
    session_spec(s, &sp);
    if (sp.structure && structure_on(sp.structure)) {
        char desc[96];
        snprintf(shape, sizeof shape, ", structure %s", structure_describe(sp.structure, desc, sizeof desc));
    }
    const size_t shown = v->seq < session_batch(s) ? v->seq : 0;
    char seq[48] = ""; /* a batch: the sequence the map shows (s: the next) */
    if (session_batch(s) > 1)
        snprintf(seq, sizeof seq, ", sequence %zu of %zu", shown, session_batch(s));
    snprintf(title, sizeof title, "model %s%s, cache %s%s", c->name, shape, session_cache_spec(s), seq);
    if (shape[0] && text_width(title) + 4 > b.w) /* narrow: the model, the cache and the sequence first */
        snprintf(title, sizeof title, "model %s, cache %s%s", c->name, session_cache_spec(s), seq);
    panel_map(f, rect_sub(b, 0, 1, b.w, map_h), v, s, shown, title, focus == P_MAP);
    Rect mid = rect_sub(b, 0, 1 + map_h, b.w, mid_h);
    panel_counters(f, rect_sub(mid, 0, 0, cw, mid.h), v, s, focus == P_COUNTERS);
    Rect right = rect_sub(mid, cw + 1, 0, mid.w - cw - 1, mid.h);
    /* a paged cache's page table sits under the heatmap (focus: with the map) */
    const int pages_h = panel_pages_height(s), spark_h = spark_wide ? 0 : SPARK_H;
    const int heat_h = right.h - spark_h - pages_h;
    if (heat_h >= 2 * ROOF_SHARED_H) {
        panel_heat(f, rect_sub(right, 0, 0, right.w, heat_h - ROOF_SHARED_H), v, s, focus == P_HEAT);
        panel_roofline(f, rect_sub(right, 0, heat_h - ROOF_SHARED_H, right.w, ROOF_SHARED_H), v, s, focus == P_ROOF);
    } else if (focus == P_ROOF) {
        panel_roofline(f, rect_sub(right, 0, 0, right.w, heat_h), v, s, 1);
    } else {
        panel_heat(f, rect_sub(right, 0, 0, right.w, heat_h), v, s, focus == P_HEAT);
    }
    if (pages_h)
        panel_pages(f, rect_sub(right, 0, right.h - spark_h - pages_h, right.w, pages_h), s, focus == P_MAP);
    if (spark_wide)
        panel_spark(f, rect_sub(b, 0, b.h - tok_h - SPARK_H, b.w, SPARK_H), v, s, focus == P_SPARK);
    else
        panel_spark(f, rect_sub(right, 0, right.h - SPARK_H, right.w, SPARK_H), v, s, focus == P_SPARK);
    panel_tokens(f, rect_sub(b, 0, b.h - tok_h, b.w, tok_h), v, s, focus == P_TOKENS);
}

static unsigned key(View *v, int k)
{
    (void)v;
    (void)k;
    return KR_NONE;
}

const Screen screen_sim = { "simulation", P_COUNT, panel_names, draw, key };
