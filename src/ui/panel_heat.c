/* panel_heat.c: attention weights of one layer and head, every query
 * position so far (rows) over the key positions (columns): the causal
 * lower triangle, growing one row per decode pass. */
#include <stdio.h>

#include "ui/panels.h"

#define LABEL_W 5

Glyph panel_heat_glyph(float w, int *role)
{
    if (w >= 0.5f) {
        *role = ROLE_HEAT4;
        return G_SHADE4;
    }
    if (w >= 0.25f) {
        *role = ROLE_HEAT3;
        return G_SHADE3;
    }
    if (w >= 0.1f) {
        *role = ROLE_HEAT2;
        return G_SHADE2;
    }
    if (w > 0.02f) {
        *role = ROLE_HEAT1;
        return G_SHADE1;
    }
    *role = ROLE_DIM;
    return G_SLOT_EMPTY;
}

void panel_heat(Frame *f, Rect r, const View *v, const Session *s, int focused)
{
    const Config *c = &session_model(s)->cfg;
    size_t layer = v->layer < c->n_layers ? v->layer : c->n_layers - 1;
    size_t head = v->head < c->n_heads ? v->head : c->n_heads - 1;
    char title[96];
    snprintf(title, sizeof title, r.w >= 45 ? "attention L%zu H%zu ([ ] layer, { } head)" : "attention L%zu H%zu",
             layer, head);
    frame_rule(f, r, 0, title, focused);
    if (!session_has_attn(s)) {
        if (session_attend(s) == ATTEND_FLASH)
            frame_text(f, r, 1, 1, ROLE_DIM, "flash attention never holds all weights;");
        else
            frame_text(f, r, 1, 1, ROLE_DIM, "too many weights to keep for this model;");
        frame_text(f, r, 1, 2, ROLE_DIM, "start with --attention naive (and a");
        frame_text(f, r, 1, 3, ROLE_DIM, "smaller model) to see them.");
        return;
    }
    const size_t n = session_steps(s);
    const size_t P = session_positions(s);
    const int cols = r.w - LABEL_W, rows = r.h - 2;
    if (cols < 1 || rows < 1)
        return;
    const size_t per = (P + (size_t)cols - 1) / (size_t)cols;
    const int cw = per == 1 ? ((size_t)cols >= 3 * P ? 3 : (size_t)cols >= 2 * P ? 2 : 1) : 1; /* columns per key */
    if (per > 1)
        frame_print(f, r, 0, 1, ROLE_DIM, "q\\k  keys 0-%zu, %zu per column", P - 1, per);
    else
        frame_print(f, r, 0, 1, ROLE_DIM, "q\\k  keys 0-%zu", P - 1);
    if (n == 0) {
        frame_text(f, r, 1, 2, ROLE_DIM, "nothing has run yet");
        return;
    }
    const StepRecord *last = session_record(s, n - 1);
    size_t q_end = last->context; /* query positions that have run: 0 .. q_end-1 */
    size_t q_first = q_end > (size_t)rows ? q_end - (size_t)rows : 0;
    for (size_t qp = q_first; qp < q_end; qp++) {
        int y = 2 + (int)(qp - q_first);
        const float *w = session_attn_row(s, layer, head, qp);
        int is_new = qp >= last->pos0;
        frame_print(f, r, 0, y, is_new ? ROLE_NEW : ROLE_DIM, "%4zu", qp);
        if (is_new)
            frame_put_glyph(f, r, 4, y, G_NEW, ROLE_NEW);
        for (int x = 0; x < cols && (size_t)x * per <= qp && w; x++) {
            size_t lo = (size_t)x * per, hi = lo + per <= qp + 1 ? lo + per : qp + 1;
            float m = 0;
            for (size_t j = lo; j < hi; j++)
                m = w[j] > m ? w[j] : m;
            int role;
            Glyph g = panel_heat_glyph(m, &role);
            for (int k = 0; k < cw; k++)
                frame_put_glyph(f, r, LABEL_W + x * cw + k, y, g, role);
        }
    }
}
