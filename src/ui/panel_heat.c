/* panel_heat.c: attention weights of one layer and head, every query
 * position so far (rows) over the key positions (columns): the causal
 * lower triangle, growing one row per decode pass. With a tokenizer, a row
 * is labelled with its token's piece, the keys' pieces run under the
 * columns when a column is one position, and the last line names the keys
 * the newest query weighs most. */
#include <stdio.h>
#include "ui/panels.h"

#define LABEL_W 5        /* "%4zu" and the new-row marker */
#define LABEL_W_TEXT 12  /* "%4zu " + a piece of up to 6 columns + the marker */
#define TOP_KEYS 3

/* The newest query's heaviest keys, with their pieces. */
static void top_keys(Frame *f, Rect r, int y, const float *w, size_t qp, const Tokenizer *tk, const int *tok)
{
    size_t best[TOP_KEYS];
    size_t n = 0;
    for (size_t j = 0; j <= qp; j++) { /* insertion into a short sorted list */
        size_t at = n < TOP_KEYS ? n++ : TOP_KEYS;
        while (at > 0 && w[j] > w[best[at - 1]]) {
            if (at < TOP_KEYS)
                best[at] = best[at - 1];
            at--;
        }
        if (at < TOP_KEYS)
            best[at] = j;
    }
    char line[256], item[96], label[64];
    int used = snprintf(line, sizeof line, "%zu looks most at:", qp);
    for (size_t i = 0; i < n; i++) { /* as many whole keys as fit (the first always) */
        int len = snprintf(item, sizeof item, " %zu \"%s\" %.2f", best[i],
                           panel_token_label(tk, tok[best[i]], label, sizeof label), (double)w[best[i]]);
        if (i > 0 && text_width(line) + text_width(item) > r.w)
            break;
        if (used + len < (int)sizeof line)
            used += snprintf(line + used, sizeof line - (size_t)used, "%s", item);
    }
    frame_text(f, r, 0, y, ROLE_NORMAL, line);
}

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

/* How the rows and columns fit the panel. */
typedef struct {
    int lw, cols, cw;   /* label columns; cell columns; columns a key takes */
    size_t per;         /* keys per column */
    int text;           /* rows labelled with pieces, and the two lines under them */
} HeatGeom;

/* Query qp's row at y: its position (and piece), the new-row mark, the cells. */
static void heat_row(Frame *f, Rect r, const HeatGeom *g, const float *w, size_t qp, int y, int is_new,
                     const Tokenizer *tk, const int *tok, size_t n_tok)
{
    frame_print(f, r, 0, y, is_new ? ROLE_NEW : ROLE_DIM, "%4zu", qp);
    if (g->text && qp < n_tok) {
        char label[64];
        frame_text(f, r, 5, y, is_new ? ROLE_NEW : ROLE_DIM,
                   panel_clip((char *)panel_token_label(tk, tok[qp], label, sizeof label), g->lw - 6));
    }
    if (is_new)
        frame_put_glyph(f, r, g->lw - 1, y, G_NEW, ROLE_NEW);
    for (int x = 0; x < g->cols && (size_t)x * g->per <= qp && w; x++) {
        size_t lo = (size_t)x * g->per, hi = lo + g->per <= qp + 1 ? lo + g->per : qp + 1;
        float m = 0;
        for (size_t j = lo; j < hi; j++)
            m = w[j] > m ? w[j] : m;
        int role;
        Glyph glyph = panel_heat_glyph(m, &role);
        for (int k = 0; k < g->cw; k++)
            frame_put_glyph(f, r, g->lw + x * g->cw + k, y, glyph, role);
    }
}

/* Why there are no weights to show. */
static void no_weights(Frame *f, Rect r, const Session *s)
{
    if (session_attend(s) == ATTEND_FLASH)
        frame_text(f, r, 1, 1, ROLE_DIM, "flash attention never holds all weights;");
    else
        frame_text(f, r, 1, 1, ROLE_DIM, "too many weights to keep for this model;");
    frame_text(f, r, 1, 2, ROLE_DIM, "start with --attention naive (and a");
    frame_text(f, r, 1, 3, ROLE_DIM, "smaller model) to see them.");
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
        no_weights(f, r, s);
        return;
    }
    const size_t n = session_steps(s), P = session_positions(s);
    size_t n_tok;
    const int *tok = session_tokens(s, &n_tok);
    const Tokenizer *tk = session_tokenizer(s);
    HeatGeom g = { .text = tk && r.w >= 40 && r.h >= 8 };
    g.lw = g.text ? LABEL_W_TEXT : LABEL_W;
    g.cols = r.w - g.lw;
    const int rows = r.h - 2 - (g.text ? 2 : 0);
    if (g.cols < 1 || rows < 1)
        return;
    g.per = (P + (size_t)g.cols - 1) / (size_t)g.cols;
    g.cw = g.per == 1 ? ((size_t)g.cols >= 3 * P ? 3 : (size_t)g.cols >= 2 * P ? 2 : 1) : 1;
    char per[48] = "";
    if (g.per > 1)
        snprintf(per, sizeof per, ", %zu per column", g.per);
    if (n == 0) {
        frame_print(f, r, 0, 1, ROLE_DIM, "q\\k  keys 0-%zu%s", P - 1, per);
        frame_text(f, r, 1, 2, ROLE_DIM, "nothing has run yet");
        return;
    }
    const StepRecord *last = session_record(s, n - 1);
    const size_t q_end = last->context; /* query positions that have run: 0 .. q_end-1 */
    const size_t q_first = q_end > (size_t)rows ? q_end - (size_t)rows : 0;
    /* which query rows are shown: the newest, when they do not all fit */
    char qk[160];
    snprintf(qk, sizeof qk, "q\\k  queries %zu-%zu%s, keys 0-%zu%s", q_first, q_end - 1,
             q_first ? " (the newest)" : "", P - 1, per);
    if (text_width(qk) > r.w) /* narrow: the ranges alone */
        snprintf(qk, sizeof qk, "q %zu-%zu, k 0-%zu%s", q_first, q_end - 1, P - 1, g.per > 1 ? " (binned)" : "");
    frame_text(f, r, 0, 1, ROLE_DIM, qk);
    for (size_t qp = q_first; qp < q_end; qp++)
        heat_row(f, r, &g, session_attn_row(s, layer, head, qp), qp, 2 + (int)(qp - q_first), qp >= last->pos0, tk,
                 tok, n_tok);
    if (!g.text)
        return;
    const int below = 2 + (int)(q_end - q_first);
    if (g.per == 1)
        panel_token_axis(f, r, below, "keys", g.lw, g.cw, q_end < n_tok ? q_end : n_tok, tk, tok);
    const float *w = session_attn_row(s, layer, head, q_end - 1);
    if (w && q_end <= n_tok)
        top_keys(f, r, below + 1, w, q_end - 1, tk, tok);
}
