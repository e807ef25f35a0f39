/* prompt_edit.c: the line behind t: the simulation's prompt as text, to edit
 * or replace. It opens on the old prompt, selected, so typing replaces it
 * and a cursor key keeps it; the tokens it makes are shown while it is
 * typed, with a warning when they do not fit the model, and Enter runs the
 * simulation on them (view.c applies it, or puts its refusal in p->error
 * and opens the line again). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "model/generate.h"
#include "ui/fmt.h"
#include "ui/keys.h"
#include "ui/screens.h"

void prompt_edit_open(PromptEdit *p, const Session *sim)
{
    const Tokenizer *tk = session_tokenizer(sim);
    memset(p, 0, sizeof *p);
    size_t len;
    const int *tok = session_tokens(sim, &len);
    const size_t plen = session_prompt_len(sim);
    for (size_t i = 0; i < plen; i++) { /* the prompt's text: its pieces, end to end */
        size_t n;
        const unsigned char *piece = tokenizer_piece(tk, tok[i], &n);
        if (!piece || p->len + n >= sizeof p->text)
            break;
        memcpy(p->text + p->len, piece, n);
        p->len += n;
    }
    p->text[p->len] = '\0';
    p->cur = p->len;
    p->selected = p->len > 0;
    p->open = 1;
}

static int is_cont(char c)
{
    return ((unsigned char)c & 0xC0) == 0x80;
}

/* Insert code point c as UTF-8 at the cursor, when it fits. */
static void insert(PromptEdit *p, unsigned c)
{
    char b[4];
    size_t n;
    if (c < 0x80)
        b[0] = (char)c, n = 1;
    else if (c < 0x800)
        b[0] = (char)(0xC0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3F)), n = 2;
    else if (c < 0x10000)
        b[0] = (char)(0xE0 | c >> 12), b[1] = (char)(0x80 | (c >> 6 & 0x3F)), b[2] = (char)(0x80 | (c & 0x3F)), n = 3;
    else
        b[0] = (char)(0xF0 | c >> 18), b[1] = (char)(0x80 | (c >> 12 & 0x3F)), b[2] = (char)(0x80 | (c >> 6 & 0x3F)),
        b[3] = (char)(0x80 | (c & 0x3F)), n = 4;
    if (p->len + n >= sizeof p->text)
        return;
    memmove(p->text + p->cur + n, p->text + p->cur, p->len - p->cur + 1);
    memcpy(p->text + p->cur, b, n);
    p->len += n;
    p->cur += n;
}

static void clear(PromptEdit *p)
{
    p->len = p->cur = 0;
    p->text[0] = '\0';
}

unsigned prompt_edit_key(PromptEdit *p, int key, int *submit)
{
    *submit = 0;
    const int typed = (key >= 32 && key < 127) || (key >= 0xA0 && key < VK_BASE) || key == VK_TAB;
    const int was_selected = p->selected;
    p->error[0] = '\0';
    p->selected = 0; /* any key but Enter ends the selection; typing replaces it first */
    if (key == VK_ENTER) {
        p->open = 0;
        *submit = 1;
    } else if (key == VK_ESC) {
        p->open = 0;
    } else if (typed) {
        if (was_selected)
            clear(p);
        insert(p, key == VK_TAB ? '\t' : (unsigned)key);
    } else if (key == VK_BACKSPACE && was_selected) {
        clear(p);
    } else if (key == VK_BACKSPACE && p->cur > 0) { /* back over a whole UTF-8 character */
        size_t from = p->cur - 1;
        while (from > 0 && is_cont(p->text[from]))
            from--;
        memmove(p->text + from, p->text + p->cur, p->len - p->cur + 1);
        p->len -= p->cur - from;
        p->cur = from;
    } else if (key == VK_CTRL_U) {
        clear(p);
    } else if (key == VK_LEFT) { /* from a selection: to its start */
        if (was_selected)
            p->cur = 0;
        else if (p->cur > 0)
            while (--p->cur > 0 && is_cont(p->text[p->cur]))
                ;
    } else if (key == VK_RIGHT) {
        if (was_selected)
            p->cur = p->len;
        else if (p->cur < p->len)
            while (++p->cur < p->len && is_cont(p->text[p->cur]))
                ;
    } else if (key == VK_HOME) {
        p->cur = 0;
    } else if (key == VK_END) {
        p->cur = p->len;
    } else {
        p->selected = was_selected;
        return KR_HANDLED; /* the line swallows other keys */
    }
    return KR_HANDLED | KR_CHANGED;
}

/* The shown form of text as tokens: pieces separated by '|', the tail that
 * fits in cap; the token count in *n (0 when it does not encode). */
static void tokens_line(const Tokenizer *tk, const char *text, size_t len, char *out, size_t cap, size_t *n)
{
    int *ids = NULL;
    Err e = { 0 };
    out[0] = '\0';
    *n = 0;
    if (len == 0 || tokenizer_encode(tk, text, len, &ids, n, &e) < 0)
        return;
    char all[4096] = "", shown[64];
    size_t used = 0;
    for (size_t i = 0; i < *n && used + 1 < sizeof all; i++) {
        size_t plen;
        const unsigned char *piece = tokenizer_piece(tk, ids[i], &plen);
        tokenizer_show(piece, plen, 1, shown, sizeof shown);
        used += (size_t)snprintf(all + used, sizeof all - used, "%s%s", i ? "|" : "", shown);
    }
    free(ids);
    size_t total = strlen(all), skip = 0;
    while (total - skip >= cap || (skip && is_cont(all[skip])))
        skip++;
    memcpy(out, all + skip, total - skip + 1);
}

/* From column `cols` of s on (whole UTF-8 characters). */
static const char *skip_cols(const char *s, int cols)
{
    for (; *s && cols > 0; cols--)
        for (s++; is_cont(*s); s++)
            ;
    return s;
}

/* The last `cols` display columns of s. */
static const char *tail(const char *s, int cols)
{
    const int w = text_width(s);
    return w > cols ? skip_cols(s, w - cols) : s;
}

/* The typed line at row 0 of in, after "> ": the part around the cursor,
 * an ellipsis where it is cut; the selection reversed, the cursor a block
 * at the end or a reversed character inside. */
static void draw_line(Frame *f, Rect in, const PromptEdit *p)
{
    char shown[PROMPT_EDIT_MAX * 4], before[PROMPT_EDIT_MAX * 4];
    tokenizer_show((const unsigned char *)p->text, p->len, 0, shown, sizeof shown);
    tokenizer_show((const unsigned char *)p->text, p->cur, 0, before, sizeof before);
    const int x0 = frame_text(f, in, 0, 0, ROLE_KEY, "> "), room = in.w - x0, ew = frame_ellipsis_w(f);
    const int total = text_width(shown), at = text_width(before);
    /* the first column of shown on screen: past the start when the cursor is
     * not in sight (an ellipsis at the left then, and at the right when the
     * text goes on past the cursor) */
    const int right = at < total ? ew : 0;
    const int start = total + 1 > room && at + 1 + right > room - ew ? at + 1 + right - room : 0;
    Rect line = rect_sub(in, x0, 0, room, 1);
    frame_text(f, line, 0, 0, p->selected ? ROLE_SEL : ROLE_NORMAL, skip_cols(shown, start));
    if (start > 0)
        frame_ellipsis(f, line, 0, 0, ROLE_DIM);
    if (at == total)
        frame_put_glyph(f, line, at - start, 0, G_SHADE4, ROLE_FOCUS);
    else
        frame_role(f, (Rect){ line.x + at - start, line.y, 1, 1 }, ROLE_SEL);
}

/* What the box says under the line: why Enter was refused, that the
 * tokens do not fit the model, or what the selection does; "" for nothing. */
static const char *message(const View *v, size_t n_tok, char *buf, size_t cap, int *role)
{
    const PromptEdit *p = &v->edit;
    const Config *c = &session_model(v->sim)->cfg;
    SessionSpec sp;
    session_spec(v->sim, &sp);
    *role = ROLE_WARN;
    if (p->error[0])
        return p->error;
    if (n_tok > c->max_seq_len || generate_positions(n_tok, sp.go.n_generate) > c->max_seq_len) {
        if (kv_shifts(session_cache(v->sim))) /* a shift cache runs on past the positions */
            *role = ROLE_DIM;
        if (n_tok > c->max_seq_len)
            snprintf(buf, cap, "%zu tokens: more than the model's %zu positions", n_tok, c->max_seq_len);
        else
            snprintf(buf, cap, "%zu tokens and %zu to generate: more than the model's %zu positions", n_tok,
                     sp.go.n_generate, c->max_seq_len);
        if (*role == ROLE_DIM)
            snprintf(buf + strlen(buf), cap - strlen(buf), " (cache %s shifts past them)", sp.cache_spec);
        return buf;
    }
    *role = ROLE_DIM;
    return p->selected ? "selected: typing replaces it; \u2190 \u2192 Home End keep it to edit" : "";
}

void prompt_edit_draw(Frame *f, const View *v)
{
    const PromptEdit *p = &v->edit;
    const Tokenizer *tk = session_tokenizer(v->sim);
    const int w = f->w - 4, h = 8;
    Rect box = { 2, f->h - h - 2, w, h };
    frame_box(f, box, "type a prompt", ROLE_HEAD);
    Rect in = rect_sub(box, 2, 1, w - 4, h - 2);
    draw_line(f, in, p);
    char toks[512], msg[256];
    size_t n;
    int role;
    tokens_line(tk, p->text, p->len, toks, sizeof toks, &n);
    const char *say = message(v, n, msg, sizeof msg, &role);
    frame_wrap(f, rect_sub(in, 0, 1, in.w, 2), role, say);
    const Config *c = &session_model(v->sim)->cfg;
    frame_print(f, in, 0, 3, ROLE_DIM, "%zu token%s (of %s's context of %zu):", n, fmt_s(n), c->name, c->max_seq_len);
    const int cut = text_width(toks) > in.w; /* the newest tokens, an ellipsis for the rest */
    const int x = cut ? frame_ellipsis(f, in, 0, 4, ROLE_DIM) : 0;
    frame_text(f, in, x, 4, ROLE_NORMAL, cut ? tail(toks, in.w - x) : toks);
    frame_text(f, in, 0, 5, ROLE_DIM, "Enter runs it, \u2190 \u2192 Home End move, Ctrl-U clears, Esc keeps the old");
}
