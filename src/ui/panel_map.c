/* panel_map.c: the cache map, layers x positions; with a tokenizer and a
 * spare row, each position's piece under it, so what a window or an
 * eviction keeps can be read as text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "ui/fmt.h"
#include "ui/panels.h"

#define LABEL_W 5

Glyph panel_cell_glyph(int state, int k_fmt, int v_fmt, int *role)
{
    switch (state) {
    case CELL_EXACT:
        *role = ROLE_EXACT;
        return G_SLOT_EXACT;
    case CELL_LOSSY:
        if ((k_fmt == FMT_F16 || k_fmt == FMT_F32) && (v_fmt == FMT_F16 || v_fmt == FMT_F32)) {
            *role = ROLE_EXACT; /* half precision: lossy, but not quantized */
            return G_SLOT_F16;
        }
        *role = ROLE_LOSSY;
        return G_SLOT_LOSSY;
    case CELL_EVICTED:
        *role = ROLE_EVICTED;
        return G_SLOT_EVICTED;
    case CELL_SHARED:
        *role = ROLE_SHARED;
        return G_SLOT_SHARED;
    default:
        *role = ROLE_DIM;
        return G_SLOT_EMPTY;
    }
}

/* Which state a column standing for several positions shows: held beats
 * evicted beats empty, so a bucket with any row in it reads as held. */
static int rank(int state)
{
    static const int r[] = { [CELL_EMPTY] = 0, [CELL_EVICTED] = 1, [CELL_EXACT] = 2, [CELL_LOSSY] = 3,
                             [CELL_SHARED] = 4 };
    return state >= 0 && state <= CELL_SHARED ? r[state] : 0;
}

/* How positions fit the panel's columns. */
typedef struct {
    size_t P;      /* positions */
    int cols;      /* columns for cells */
    size_t per;    /* positions per column */
    int cw;        /* columns a position takes: 1, or 2-3 (glyphs and a gap) with room to spare */
} MapGeom;

static int is_new_row(const StepRecord *last, size_t j)
{
    return last && j >= last->pos0 && j < last->pos0 + last->n_new;
}

/* The rule: the panel's name, the layers and positions, and how the cache
 * is stored (pages, blocks); shortened when the panel is narrow. */
static void map_title(Frame *f, Rect r, const KvCache *cache, const MapGeom *mg, KvCell *cells, size_t seq,
                      const char *title, int focused)
{
    /* pages, or blocks of storage (a page start past 0) for other layouts */
    KvStats st;
    kv_stats(cache, &st);
    kv_cells(cache, 0, seq, cells, mg->P);
    size_t blocks = 1;
    for (size_t j = 1; j < mg->P; j++)
        blocks += cells[j].page_start;
    char paging[48], full[256], scale[48] = "";
    if (st.page_rows)
        snprintf(paging, sizeof paging, "paged, %zu row%s a page", st.page_rows, fmt_s(st.page_rows));
    else if (blocks > 1)
        snprintf(paging, sizeof paging, "not paged, stored in blocks");
    else
        snprintf(paging, sizeof paging, "not paged");
    if (mg->per > 1)
        snprintf(scale, sizeof scale, ", 1 column = %zu positions", mg->per);
    snprintf(full, sizeof full, "%s: layers \u00d7 positions 0-%zu%s, %s", title, mg->P - 1, scale, paging);
    if (text_width(full) + 3 > r.w) /* too long: the name and how it is stored */
        snprintf(full, sizeof full, "%s (%s)", title, st.page_rows ? "paged" : "not paged");
    frame_rule(f, r, 0, full, focused);
}

/* Layer l's row at y: a column shows the most telling state of its
 * positions; this pass's rows are marked new. */
static void map_layer_row(Frame *f, Rect r, const KvCache *cache, const MapGeom *mg, KvCell *cells, size_t seq,
                          size_t l, int y, int sel, const StepRecord *last)
{
    if (sel)
        frame_put_glyph(f, r, 0, y, G_PLAY, ROLE_FOCUS);
    frame_print(f, r, 1, y, sel ? ROLE_FOCUS : ROLE_DIM, "L%zu", l);
    kv_cells(cache, l, seq, cells, mg->P);
    for (int x = 0; x < mg->cols && (size_t)x * mg->per < mg->P; x++) {
        size_t lo = (size_t)x * mg->per, hi = lo + mg->per < mg->P ? lo + mg->per : mg->P;
        int best = CELL_EMPTY, is_new = 0;
        KvCell shown = { 0 };
        for (size_t j = lo; j < hi; j++) {
            if (rank(cells[j].state) > rank(best)) {
                best = cells[j].state;
                shown = cells[j];
            }
            is_new |= is_new_row(last, j);
        }
        int role;
        Glyph g = panel_cell_glyph(best, shown.k_fmt, shown.v_fmt, &role);
        for (int k = 0; k < (mg->cw > 1 ? mg->cw - 1 : 1); k++)
            frame_put_glyph(f, r, LABEL_W + x * mg->cw + k, y, g, is_new && best != CELL_EMPTY ? ROLE_NEW : role);
    }
}

/* The axis at row ay: this pass's slots, page starts, and where the run ends. */
static void map_axis(Frame *f, Rect r, const KvCache *cache, const MapGeom *mg, KvCell *cells, size_t seq, int ay,
                     const StepRecord *last)
{
    frame_text(f, r, 0, ay, ROLE_DIM, "pos");
    kv_cells(cache, 0, seq, cells, mg->P);
    int used = 0;
    for (int x = 0; x < mg->cols && (size_t)x * mg->per < mg->P; x++, used++) {
        size_t lo = (size_t)x * mg->per, hi = lo + mg->per < mg->P ? lo + mg->per : mg->P;
        int is_new = 0, page = 0;
        for (size_t j = lo; j < hi; j++) {
            is_new |= is_new_row(last, j);
            page |= j > 0 && cells[j].page_start;
        }
        if (is_new)
            frame_put_glyph(f, r, LABEL_W + x * mg->cw, ay, G_NEW, ROLE_NEW);
        else if (page)
            frame_put_glyph(f, r, LABEL_W + x * mg->cw, ay, G_PAGE, ROLE_DIM);
    }
    used *= mg->cw;
    if (last && LABEL_W + used + 2 < r.w) {
        char note[64];
        snprintf(note, sizeof note, "%s %zu", last->n_new > 1 ? "new rows from" : "new row at", last->pos0);
        if (LABEL_W + used + 2 + (int)strlen(note) + 4 <= r.w)
            frame_text(f, r, LABEL_W + used + 2, ay, ROLE_NEW, note);
    }
}

void panel_map(Frame *f, Rect r, const View *v, const Session *s, size_t seq, const char *title, int focused)
{
    const KvCache *cache = session_cache(s);
    const Config *c = &session_model(s)->cfg;
    MapGeom mg = { .P = session_positions(s), .cols = r.w - LABEL_W };
    if (mg.cols < 1 || r.h < 2)
        return;
    mg.per = (mg.P + (size_t)mg.cols - 1) / (size_t)mg.cols;
    mg.cw = mg.per == 1 ? ((size_t)mg.cols >= 3 * mg.P ? 3 : (size_t)mg.cols >= 2 * mg.P ? 2 : 1) : 1;
    KvCell *cells = calloc(mg.P, sizeof *cells);
    if (!cells)
        return;
    map_title(f, r, cache, &mg, cells, seq, title, focused);
    const StepRecord *last = session_steps(s) ? session_record(s, session_steps(s) - 1) : NULL;
    size_t n_tok;
    const int *tok = session_tokens(s, &n_tok);
    const Tokenizer *tk = session_tokenizer(s);
    const int text = tk && mg.per == 1 && r.h - 3 >= (int)c->n_layers;
    const int rows = r.h - 2 - text;
    const size_t L = c->n_layers;
    size_t first = 0, shown = L < (size_t)rows ? L : (size_t)rows;
    if (L > (size_t)rows && rows >= 3) {
        /* cut: keep the selected layer in sight, a row says what is above or below */
        shown = (size_t)rows - 1;
        if (v->layer >= shown) {
            shown = (size_t)rows - 2;
            first = v->layer - shown + 1;
            if (first + shown >= L)
                shown = (size_t)rows - 1, first = L - shown;
        }
    } else if (L > (size_t)rows && v->layer >= (size_t)rows) {
        first = v->layer - (size_t)rows + 1;
    }
    int y = 1;
    if (first && L > (size_t)rows && rows >= 3)
        frame_print(f, r, 1, y++, ROLE_DIM, "+%zu layer%s above (L0-L%zu; [ moves up)", first, fmt_s(first),
                    first - 1);
    for (size_t l = first; l < first + shown; l++)
        map_layer_row(f, r, cache, &mg, cells, seq, l, y++, l == v->layer, last);
    if (first + shown < L && rows >= 3)
        frame_print(f, r, 1, y++, ROLE_DIM, "+%zu more layer%s (L%zu-L%zu; ] moves down)", L - first - shown,
                    fmt_s(L - first - shown), first + shown, L - 1);
    const int ay = y;
    map_axis(f, r, cache, &mg, cells, seq, ay, last);
    if (text && seq == 0)
        panel_token_axis(f, r, ay + 1, "text", LABEL_W, mg.cw, mg.P < n_tok ? mg.P : n_tok, tk, tok);
    else if (text) /* the session keeps sequence 0's tokens only */
        frame_text(f, r, 0, ay + 1, ROLE_DIM, "text (the view keeps sequence 0's only)");
    free(cells);
}
