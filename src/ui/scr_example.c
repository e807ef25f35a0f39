/* scr_example.c: the source document's worked example (the teaching notes), pass by
 * pass: the cache rows appearing as they are appended, the new tokens' x
 * and q, the attention output and the token chosen, the attention weights
 * (the causal lower triangle in the prefill, then one row per decode pass),
 * and the document's summary table filling in until 6 rows against 18.
 *
 *   what happened / why                                   (2 rows)
 *   KV cache: K[j] V[j] per position                      (P rows)
 *   this pass: x, q per new token; o and the next token   (prompt + 1 rows)
 *   [scores of this pass, when the terminal is tall enough]
 *   attention weights          | summary table            (P + 1 rows)
 *   [counters               | FLOPs per pass, when there is still room] */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ui/fmt.h"
#include "ui/panels.h"
#include "ui/screens.h"

enum { P_CACHE, P_PASS, P_ATTN, P_SUMMARY, P_COUNT };
static const char *const panel_names[P_COUNT] = { "cache", "this pass", "attention", "summary" };

#define VEC_MAX 4 /* values shown per vector; longer ones end in an ellipsis */
#define HEAT_W 41
/* The counters panel: the simulation's, shown when this many rows are left
 * under the table (its rule, header, the rows that are not optional and a
 * note on the times). */
#define COUNTERS_MIN_H 13
#define COUNTERS_W 66
#define SPARK_H 3

/* "  1.000 -0.213 ..." : VEC_MAX values of 7 columns. */
static int vec(Frame *f, Rect r, int x, int y, int role, const float *v, size_t n)
{
    for (size_t i = 0; i < n && i < VEC_MAX; i++)
        x = frame_print(f, r, x, y, role, "%7.3f", v[i]);
    if (n > VEC_MAX)
        x = frame_ellipsis(f, r, x, y, ROLE_DIM);
    return x;
}

static void what_why(Frame *f, Rect r, const Session *s)
{
    const size_t n = session_steps(s);
    if (n == 0) {
        frame_print(f, r, 0, 0, ROLE_NORMAL, "Nothing has run yet: the cache is empty. Space runs the prefill.");
        frame_print(f, r, 0, 1, ROLE_DIM, "Prompt: tokens 0, 1, 2, whose embeddings are the document's x0, x1, x2.");
        return;
    }
    const StepRecord *rec = session_record(s, n - 1);
    if (rec->phase == PHASE_PREFILL) {
        frame_print(f, r, 0, 0, ROLE_NORMAL, "Step %zu, prefill: positions %zu-%zu are projected at once; K, V "
                    "rows %zu-%zu appended.", rec->step, rec->pos0, rec->pos0 + rec->n_new - 1,
                    rec->pos0, rec->pos0 + rec->n_new - 1);
        frame_print(f, r, 0, 1, ROLE_DIM,
                    "Causal attention: each query sees itself and earlier rows (the lower triangle).");
    } else {
        frame_print(f, r, 0, 0, ROLE_NORMAL, "Step %zu, decode: only the new token (position %zu) is projected; "
                    "k%zu, v%zu appended.", rec->step, rec->pos0, rec->pos0, rec->pos0);
        frame_print(f, r, 0, 1, ROLE_DIM,
                    "q%zu attends over all %zu cached rows; no mask needed, none is in the future.",
                    rec->pos0, rec->context);
    }
}

static void cache_rows(Frame *f, Rect r, const View *v, const Session *s)
{
    const KvCache *c = session_cache(s);
    const size_t P = session_positions(s), hd = c->geo.head_dim;
    const size_t n = session_steps(s);
    const StepRecord *last = n ? session_record(s, n - 1) : NULL;
    char title[160], fmts[64];
    if (c->ops->formats) /* formats vary by row (mixed, kivi) */
        kv_formats(c, fmts, sizeof fmts);
    else
        snprintf(fmts, sizeof fmts, "K %s, V %s", format_name(c->k_fmt), format_name(c->v_fmt));
    snprintf(title, sizeof title, "KV cache, layer 0 head 0: %zu of %zu rows (%s; %s)", kv_length(c, 0, 0),
             c->geo.max_seq_len, session_cache_spec(s), fmts);
    frame_rule(f, r, 0, title, v->focus[SCR_EXAMPLE] == P_CACHE);
    float k[64], vv[64];
    for (size_t j = 0; j < P && (int)j + 1 < r.h; j++) {
        int y = 1 + (int)j;
        int is_new = last && j >= last->pos0 && j < last->pos0 + last->n_new;
        int role = is_new ? ROLE_NEW : ROLE_NORMAL;
        if (hd > 64 || session_cache_row(s, 0, 0, j, k, vv) < 0) {
            frame_print(f, r, 1, y, ROLE_DIM, "K[%zu]", j);
            frame_put_glyph(f, r, 8, y, G_SLOT_EMPTY, ROLE_DIM);
            frame_print(f, r, 10, y, ROLE_DIM, "empty");
            continue;
        }
        frame_print(f, r, 1, y, role, "K[%zu]", j);
        int x = vec(f, r, 5, y, role, k, hd);
        frame_print(f, r, x + 3, y, role, "V[%zu]", j);
        x = vec(f, r, x + 7, y, role, vv, hd);
        if (is_new) {
            frame_put_glyph(f, r, x + 2, y, G_NEW, ROLE_NEW);
            frame_text(f, r, x + 4, y, ROLE_NEW, "new");
        }
    }
}

static void this_pass(Frame *f, Rect r, const View *v, const Session *s)
{
    const Model *m = session_model(s);
    const Config *c = &m->cfg;
    const Snapshot *sn = session_snapshot(s);
    frame_rule(f, r, 0, "this pass: x embedding, q query (never cached), o attention output",
               v->focus[SCR_EXAMPLE] == P_PASS);
    size_t len;
    const int *tok = session_tokens(s, &len);
    if (!sn) {
        for (size_t t = 0; t < session_prompt_len(s) && (int)t + 1 < r.h; t++) {
            frame_print(f, r, 1, 1 + (int)t, ROLE_NORMAL, "x%zu", t);
            int x = vec(f, r, 4, 1 + (int)t, ROLE_NORMAL, m->embed + (size_t)tok[t] * c->d_model, c->d_model);
            frame_print(f, r, x + 3, 1 + (int)t, ROLE_DIM, "token %d, prompt position %zu", tok[t], t);
        }
        return;
    }
    int y = 1;
    for (size_t t = 0; t < sn->n_new && y < r.h - 1; t++, y++) {
        size_t pos = sn->pos0 + t;
        frame_print(f, r, 1, y, ROLE_NORMAL, "x%zu", pos);
        int x = vec(f, r, 4, y, ROLE_NORMAL, sn->x + t * c->d_model, c->d_model);
        frame_print(f, r, x + 2, y, ROLE_NORMAL, "q%zu", pos);
        x = vec(f, r, x + 5, y, ROLE_NORMAL, sn->q + t * config_q_dim(c), c->head_dim);
        frame_print(f, r, x + 3, y, ROLE_DIM, "token %d", tok[pos]);
    }
    size_t last = sn->pos0 + sn->n_new - 1;
    frame_print(f, r, 1, y, ROLE_NORMAL, "o%zu", last);
    int x = vec(f, r, 4, y, ROLE_NORMAL, sn->att + (sn->n_new - 1) * config_q_dim(c), c->head_dim);
    const StepRecord *rec = session_record(s, session_steps(s) - 1);
    if (rec->token >= 0) {
        frame_put_glyph(f, r, x + 2, y, G_ARROW, ROLE_NORMAL);
        frame_print(f, r, x + 4, y, ROLE_NEW, "next token %d (largest logit %.3f)", rec->token,
                    (double)rec->token_logit);
    }
}

/* The scores of this pass, before softmax (only when there is room). */
static void scores(Frame *f, Rect r, const Session *s)
{
    const Snapshot *sn = session_snapshot(s);
    const size_t hd = session_model(s)->cfg.head_dim;
    char title[96];
    snprintf(title, sizeof title, "scores of this pass: q%sK%s / %s%zu, before softmax", "\u00b7", "\u1d40",
             "\u221a", hd);
    frame_rule(f, r, 0, title, 0);
    if (!sn) {
        frame_text(f, r, 1, 1, ROLE_DIM, "(none yet)");
        return;
    }
    for (size_t t = 0; t < sn->n_new && (int)t + 1 < r.h; t++) {
        float sc[64];
        size_t n = session_scores(s, t, 0, sc, 64);
        int y = 1 + (int)t;
        frame_print(f, r, 1, y, ROLE_NORMAL, "q%zu", sn->pos0 + t);
        for (size_t j = 0; j < n; j++)
            frame_print(f, r, 4 + 7 * (int)j, y, ROLE_NORMAL, "%7.3f", sc[j]);
    }
}

/* Every query so far (rows) over every position (columns). */
static void weights(Frame *f, Rect r, const View *v, const Session *s)
{
    const size_t P = session_positions(s), hd = session_model(s)->cfg.head_dim;
    char title[96];
    snprintf(title, sizeof title, "attention weights softmax(q%sK%s / %s%zu)", "\u00b7", "\u1d40", "\u221a", hd);
    frame_rule(f, r, 0, title, v->focus[SCR_EXAMPLE] == P_ATTN);
    const int cw = 6;
    frame_text(f, r, 1, 1, ROLE_DIM, "q\\k");
    for (size_t j = 0; j < P && 4 + cw * (int)(j + 1) <= r.w; j++)
        frame_print(f, r, 4 + cw * (int)j, 1, ROLE_DIM, "%*zu", cw, j);
    const size_t n = session_steps(s);
    const StepRecord *last = n ? session_record(s, n - 1) : NULL;
    for (size_t qp = 0; qp < P && (int)qp + 2 < r.h; qp++) {
        const float *w = session_attn_row(s, 0, 0, qp);
        int y = 2 + (int)qp;
        if (!w) {
            frame_print(f, r, 1, y, ROLE_DIM, "q%zu", qp);
            continue;
        }
        int is_new = last && qp >= last->pos0;
        frame_print(f, r, 1, y, is_new ? ROLE_NEW : ROLE_NORMAL, "q%zu", qp);
        for (size_t j = 0; j < P && 4 + cw * (int)(j + 1) <= r.w; j++) {
            int x = 4 + cw * (int)j;
            if (j > qp) {
                frame_put_glyph(f, r, x + cw - 1, y, G_SLOT_EMPTY, ROLE_DIM);
                continue;
            }
            int role;
            (void)panel_heat_glyph(w[j], &role);
            frame_print(f, r, x, y, role, "%*.3f", cw, (double)w[j]);
        }
        if (is_new)
            frame_put_glyph(f, r, 4 + cw * (int)P + 1, y, G_NEW, ROLE_NEW);
    }
}

static void summary(Frame *f, Rect r, const View *v, const Session *s)
{
    frame_rule(f, r, 0, "summary: the document's table", v->focus[SCR_EXAMPLE] == P_SUMMARY);
    const int wide = r.w >= 56;
    /* columns: pass, phase, rows projected, cache length after, attention shape, uncached rows */
    const int x_phase = 1, x_rows = wide ? 20 : 16, x_len = wide ? 31 : 22, x_shape = wide ? 42 : 29,
              x_unc = wide ? 55 : 37;
    frame_text(f, r, 0, 1, ROLE_HEAD, "step");
    frame_text(f, r, 5, 1, ROLE_HEAD, "phase");
    frame_print_right(f, r, x_rows, 1, ROLE_HEAD, wide ? "projected" : "rows");
    frame_print_right(f, r, x_len, 1, ROLE_HEAD, wide ? "cache len" : "len");
    frame_print_right(f, r, x_shape, 1, ROLE_HEAD, wide ? "attention" : "attn");
    frame_print_right(f, r, x_unc, 1, ROLE_HEAD, wide ? "no cache" : "unc.");
    (void)x_phase;
    const size_t n = session_steps(s);
    uint64_t rows = 0, unc = 0;
    int y = 2;
    for (size_t i = 0; i < n && y < r.h; i++, y++) {
        const StepRecord *rec = session_record(s, i);
        int role = i + 1 == n ? ROLE_NEW : ROLE_NORMAL;
        frame_print_right(f, r, 3, y, role, "%zu", rec->step);
        frame_text(f, r, 5, y, role, rec->phase == PHASE_PREFILL ? "prefill" : "decode");
        frame_print_right(f, r, x_rows, y, role, "%llu", (unsigned long long)rec->ctr.tokens_projected);
        frame_print_right(f, r, x_len, y, role, "%zu", rec->context);
        frame_print_right(f, r, x_shape, y, role, "%zux%zu", rec->n_new, rec->context);
        frame_print_right(f, r, x_unc, y, ROLE_UNCACHED, "%llu", (unsigned long long)rec->unc.tokens_projected);
        rows += rec->ctr.tokens_projected;
        unc += rec->unc.tokens_projected;
    }
    if (n == 0) {
        frame_text(f, r, 0, y, ROLE_DIM, "(fills in as you step)");
        return;
    }
    frame_text(f, r, 0, y, ROLE_HEAD, "total");
    frame_print_right(f, r, x_rows, y, ROLE_HEAD, "%llu", (unsigned long long)rows);
    frame_print_right(f, r, x_unc, y, ROLE_UNCACHED, "%llu", (unsigned long long)unc);
    y++;
    char ratio[24];
    if (n == session_total_steps(s))
        frame_print(f, r, 0, y, ROLE_NORMAL, "%llu vs %llu rows: %s the work %s",
                    (unsigned long long)rows, (unsigned long long)unc, fmt_ratio(ratio, sizeof ratio, (double)unc,
                                                                                  (double)rows),
                    r.w >= 56 ? "without the cache" : "uncached");
    else
        frame_print(f, r, 0, y, ROLE_DIM, "so far %llu vs %llu rows projected", (unsigned long long)rows,
                    (unsigned long long)unc);
}

static void draw(Frame *f, Rect b, const View *v)
{
    const Session *s = v->ex;
    const size_t P = session_positions(s), plen = session_prompt_len(s);
    const int cache_h = 1 + (int)P, pass_h = 2 + (int)plen, bottom_h = 2 + (int)P;
    int y = 0;
    what_why(f, rect_sub(b, 0, y, b.w, 2), s);
    y += 2;
    cache_rows(f, rect_sub(b, 0, y, b.w, cache_h), v, s);
    y += cache_h;
    this_pass(f, rect_sub(b, 0, y, b.w, pass_h), v, s);
    y += pass_h;
    if (b.h - y - bottom_h >= 1 + (int)plen) { /* room for the scores */
        scores(f, rect_sub(b, 0, y, b.w, 1 + (int)plen), s);
        y += 1 + (int)plen;
    }
    int bh = b.h - y;
    /* a tall terminal: the pass's FLOPs and bytes under the table */
    const int counters_h = bh - bottom_h;
    if (counters_h >= COUNTERS_MIN_H)
        bh = bottom_h;
    weights(f, rect_sub(b, 0, y, HEAT_W, bh), v, s);
    summary(f, rect_sub(b, HEAT_W + 1, y, b.w - HEAT_W - 1, bh), v, s);
    if (counters_h < COUNTERS_MIN_H)
        return;
    y += bh;
    const int cw = b.w >= COUNTERS_W + 30 ? COUNTERS_W : b.w; /* the sparkline beside it when it fits */
    panel_counters(f, rect_sub(b, 0, y, cw, counters_h), v, s, 0);
    if (cw < b.w)
        panel_spark(f, rect_sub(b, cw + 1, y, b.w - cw - 1, SPARK_H), v, s, 0);
}

static unsigned key(View *v, int k)
{
    (void)v;
    (void)k;
    return KR_NONE;
}

const Screen screen_example = { "example", P_COUNT, panel_names, draw, key };
