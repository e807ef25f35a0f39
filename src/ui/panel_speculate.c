/* panel_speculate.c: speculative decoding on the simulation screen
 * (`view --draft NAME --speculate K`), read from the record
 * (sim/spec_replay.h), one event a step:
 *
 *   what the event did
 *   the target's cache and the draft's: a cell a token row, the rows this
 *   round wrote marked new, the rows a roll-back gave back crossed out
 *   the text: committed tokens, then the round's proposals (kept, refused,
 *   and the target's own token after the kept ones)
 *   the run so far: passes, proposals kept by place, rows rolled back, FLOPs */
#include <stdio.h>
#include <string.h>

#include "ui/fmt.h"
#include "ui/panels.h"

/* Rows the draft held when frame i's round began. */
static size_t draft_rows_at_start(const SpecReplay *r, size_t i)
{
    while (i > 0 && r->frames[i - 1].round == r->frames[i].round)
        i--;
    return i ? r->frames[i - 1].draft_rows : r->plen;
}

/* A token as text, for one cell run: its piece, or its id without a tokenizer. */
static const char *token_text(const SpecReplay *r, int id, char *buf, size_t cap)
{
    size_t len;
    const unsigned char *p = r->tok ? tokenizer_piece(r->tok, id, &len) : NULL;
    if (p)
        return tokenizer_show(p, len, 1, buf, cap);
    snprintf(buf, cap, "%d ", id);
    return buf;
}

static void draw_what(Frame *f, Rect b, const SpecReplay *r, size_t step)
{
    char tok[48];
    if (step == 0) {
        frame_print(f, b, 0, 0, ROLE_NORMAL, "The prompt (%zu tokens) is in both caches; %s chose the next token.",
                    r->plen, r->target);
        return;
    }
    const SpecFrame *fr = &r->frames[step - 1];
    switch (fr->kind) {
    case SPEC_EV_DRAFT:
        frame_print(f, b, 0, 0, ROLE_NORMAL, "Round %zu: draft %s proposes token %zu, '%s' (a decode step over its "
                    "%zu rows)", fr->round, r->draft, fr->proposed,
                    token_text(r, fr->proposals[fr->proposed - 1], tok, sizeof tok), fr->draft_rows);
        break;
    case SPEC_EV_VERIFY:
        frame_print(f, b, 0, 0, ROLE_NORMAL, "Round %zu: the target checks %zu proposal%s in one %zu-row pass: keeps "
                    "%zu, then '%s'", fr->round, fr->proposed, fmt_s(fr->proposed), fr->proposed + 1, fr->kept,
                    token_text(r, fr->next, tok, sizeof tok));
        break;
    case SPEC_EV_ROLLBACK: {
        const SpecFrame *seen = &r->frames[step - 2]; /* the verification before it */
        frame_print(f, b, 0, 0, ROLE_NORMAL, "Round %zu: %zu token%s committed; refused rows given back: target %zu, "
                    "draft %zu", fr->round, fr->kept + 1, fmt_s(fr->kept + 1),
                    seen->target_rows - fr->target_rows, seen->draft_rows - fr->draft_rows);
        break;
    }
    }
}

/* One cache as a strip of cells, the newest at the right: rows below
 * `start` held before the round, [start, rows) written this round, and
 * [rows, gone) given back by this frame's roll-back. */
static void draw_strip(Frame *f, Rect r, size_t start, size_t rows, size_t gone)
{
    const size_t end = gone > rows ? gone : rows;
    /* too many to show: an ellipsis and a space, then the newest that fit */
    const int lead = frame_ellipsis_w(f) + 1;
    const size_t fit = end > (size_t)r.w ? (size_t)(r.w > lead ? r.w - lead : 1) : end;
    const size_t first = end - fit;
    int x = 0;
    if (first > 0)
        x = frame_ellipsis(f, r, 0, 0, ROLE_DIM) + 1;
    for (size_t p = first; p < end && x < r.w; p++, x++)
        if (p >= rows)
            frame_put(f, r, x, 0, 'x', ROLE_WARN);
        else if (p >= start)
            frame_put_glyph(f, r, x, 0, G_NEW, ROLE_NEW);
        else
            frame_put_glyph(f, r, x, 0, G_SLOT_EXACT, ROLE_EXACT);
}

static void draw_caches(Frame *f, Rect b, int y, const SpecReplay *r, size_t step)
{
    char title[192];
    size_t t_start, t_rows, t_gone, d_start, d_rows, d_gone;
    if (step == 0) {
        t_start = t_rows = t_gone = d_start = d_rows = d_gone = r->plen;
    } else {
        const SpecFrame *fr = &r->frames[step - 1];
        const SpecFrame *seen = fr->kind == SPEC_EV_ROLLBACK ? &r->frames[step - 2] : fr;
        t_start = fr->committed - 1;
        d_start = draft_rows_at_start(r, step - 1);
        t_rows = fr->target_rows;
        d_rows = fr->draft_rows;
        t_gone = seen->target_rows;
        d_gone = seen->draft_rows;
    }
    snprintf(title, sizeof title, "target %s: %zu rows (new this round: %zu; x: given back)", r->target, t_rows,
             t_rows - t_start);
    frame_rule(f, rect_sub(b, 0, y, b.w, 1), 0, title, 0);
    draw_strip(f, rect_sub(b, 0, y + 1, b.w, 1), t_start, t_rows, t_gone);
    snprintf(title, sizeof title, "draft %s: %zu rows (new this round: %zu)", r->draft, d_rows,
             d_rows > d_start ? d_rows - d_start : 0);
    frame_rule(f, rect_sub(b, 0, y + 2, b.w, 1), 0, title, 0);
    draw_strip(f, rect_sub(b, 0, y + 3, b.w, 1), d_start, d_rows, d_gone);
}

/* The text: the committed tokens, then the round's proposals marked by what
 * became of them, flowed over `lines` rows, the oldest dropped to fit. */
typedef struct {
    char text[48];
    int role;
} Item;

#define MAX_ITEMS 512

static void draw_text(Frame *f, Rect r, const SpecReplay *rp, size_t step)
{
    Item items[MAX_ITEMS];
    size_t n = 0;
    const SpecFrame *fr = step ? &rp->frames[step - 1] : NULL;
    const size_t committed = fr ? fr->committed : rp->plen + 1;
    const size_t from = committed > MAX_ITEMS - SPEC_MAX_K - 2 ? committed - (MAX_ITEMS - SPEC_MAX_K - 2) : 0;
    for (size_t i = from; i < committed && i < rp->n_tokens; i++, n++) {
        token_text(rp, rp->tokens[i], items[n].text, sizeof items[n].text);
        items[n].role = i < rp->plen ? ROLE_DIM : ROLE_NORMAL;
    }
    if (fr) { /* where the round's proposals begin */
        snprintf(items[n].text, sizeof items[n].text, " | ");
        items[n++].role = ROLE_DIM;
    }
    for (size_t i = 0; fr && i < fr->proposed; i++, n++) {
        char tok[40];
        const int refused = fr->kind != SPEC_EV_DRAFT && i >= fr->kept;
        token_text(rp, fr->proposals[i], tok, sizeof tok);
        /* proposals a space apart (their pieces run together otherwise), a refused one marked */
        snprintf(items[n].text, sizeof items[n].text, "%s%s ", refused ? (f->ascii ? "!" : "\u2717") : "", tok);
        items[n].role = fr->kind == SPEC_EV_DRAFT ? ROLE_NEW : refused ? ROLE_WARN : ROLE_GOOD;
    }
    if (fr && fr->kind != SPEC_EV_DRAFT) { /* the target's own token after the kept ones */
        char tok[40];
        snprintf(items[n].text, sizeof items[n].text, "[%s]", token_text(rp, fr->next, tok, sizeof tok));
        items[n++].role = ROLE_NEW;
    }
    /* drop the oldest until the rest fits the rows */
    size_t start = n, used = 0;
    while (start > 0 && used + (size_t)text_width(items[start - 1].text) <= (size_t)(r.w * r.h - r.w))
        used += (size_t)text_width(items[--start].text);
    int x = 0, y = 0;
    for (size_t i = start; i < n && y < r.h; i++) {
        const int w = text_width(items[i].text);
        if (x + w > r.w) {
            x = 0;
            y++;
        }
        if (y < r.h)
            x = frame_text(f, r, x, y, items[i].role, items[i].text);
    }
}

static void draw_counts(Frame *f, Rect b, int y, const SpecReplay *r, size_t step)
{
    const SpecStats *st = step ? &r->frames[step - 1].st : NULL;
    if (!st) {
        frame_text(f, b, 0, y, ROLE_DIM, "no round yet");
        return;
    }
    frame_print(f, b, 0, y++, ROLE_NORMAL, "target passes %zu (prefill + %zu checks), draft passes %zu, committed %zu "
                "tokens", st->target_passes, st->target_passes - 1, st->draft_passes, st->generated);
    int x = frame_print(f, b, 0, y, ROLE_NORMAL, "kept %zu of %zu proposals; by place:", st->accepted, st->drafted);
    for (size_t i = 0; i < r->k && st->proposed_at[i]; i++)
        x = frame_print(f, b, x + 1, y, ROLE_NORMAL, "%zu: %zu/%zu", i + 1, st->accepted_at[i], st->proposed_at[i]);
    y++;
    char tf[32], df[32];
    frame_print(f, b, 0, y, ROLE_NORMAL, "rows given back: target %zu, draft %zu; FLOPs: target %s, draft %s",
                st->target_rolled, st->draft_rolled,
                fmt_count(tf, sizeof tf, counters_total_flops(&st->target), 0),
                fmt_count(df, sizeof df, counters_total_flops(&st->draft), 0));
}

void panel_speculate(Frame *f, Rect b, const View *v)
{
    const SpecReplay *r = v->spec;
    const size_t step = v->replay_step;
    draw_what(f, b, r, step);
    char title[320];
    snprintf(title, sizeof title, "draft %s proposes %zu a round; target %s; cache %s", r->draft, r->k, r->target,
             r->cache);
    frame_rule(f, rect_sub(b, 0, 1, b.w, 1), 0, title, 0);
    draw_caches(f, b, 2, r, step);
    const int counts_h = 3, text_y = 7;
    const int text_h = b.h - text_y - 1 - counts_h;
    snprintf(title, sizeof title, "the text; after |: this round's proposals (%s refused), [the target's own]", f->ascii ? "!" : "\u2717");
    frame_rule(f, rect_sub(b, 0, 6, b.w, 1), 0, title, 0);
    if (text_h > 0)
        draw_text(f, rect_sub(b, 0, text_y, b.w, text_h), r, step);
    frame_rule(f, rect_sub(b, 0, b.h - counts_h - 1, b.w, 1), 0, "the run so far", 0);
    draw_counts(f, b, b.h - counts_h, r, step);
}
