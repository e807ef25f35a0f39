/* prompt_edit.c: the line behind t: the simulation's prompt as text, to edit
 * or replace; the tokens it makes are shown while it is typed, and Enter
 * runs the simulation on them (view.c applies it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/keys.h"
#include "ui/screens.h"

int prompt_edit_open(PromptEdit *p, const Session *sim, const char **why)
{
    const Tokenizer *tk = session_tokenizer(sim);
    if (!tk) {
        *why = "this model reads token ids, not text: choose one with a tokenizer (m, e.g. kjv-tiny)";
        return -1;
    }
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
    p->open = 1;
    return 0;
}

/* Append code point c as UTF-8, when it fits. */
static void put_utf8(PromptEdit *p, unsigned c)
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
    memcpy(p->text + p->len, b, n);
    p->len += n;
    p->text[p->len] = '\0';
}

unsigned prompt_edit_key(PromptEdit *p, int key, int *submit)
{
    *submit = 0;
    if (key == VK_ENTER) {
        p->open = 0;
        *submit = 1;
    } else if (key == VK_ESC) {
        p->open = 0;
    } else if (key == VK_BACKSPACE) {
        while (p->len > 0 && ((unsigned char)p->text[--p->len] & 0xC0) == 0x80)
            ; /* back over a whole UTF-8 character */
        p->text[p->len] = '\0';
    } else if (key == VK_CTRL_U) {
        p->len = 0;
        p->text[0] = '\0';
    } else if (key == VK_TAB) {
        put_utf8(p, '\t');
    } else if ((key >= 32 && key < 127) || (key >= 0xA0 && key < VK_BASE)) {
        put_utf8(p, (unsigned)key);
    } else {
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
    while (total - skip >= cap || (skip && ((unsigned char)all[skip] & 0xC0) == 0x80))
        skip++;
    memcpy(out, all + skip, total - skip + 1);
}

/* The last `cols` display columns of s (whole UTF-8 characters). */
static const char *tail(const char *s, int cols)
{
    while (text_width(s) > cols) {
        s++;
        while (((unsigned char)*s & 0xC0) == 0x80)
            s++;
    }
    return s;
}

void prompt_edit_draw(Frame *f, const View *v)
{
    const PromptEdit *p = &v->edit;
    const Tokenizer *tk = session_tokenizer(v->sim);
    const int w = f->w - 4, h = 7;
    Rect box = { 2, f->h - h - 2, w, h };
    frame_box(f, box, "type a prompt", ROLE_HEAD);
    Rect in = rect_sub(box, 2, 1, w - 4, h - 2);
    char shown[PROMPT_EDIT_MAX * 3];
    tokenizer_show((const unsigned char *)p->text, p->len, 0, shown, sizeof shown);
    int x = frame_text(f, in, 0, 0, ROLE_KEY, "> ");
    x = frame_text(f, in, x, 0, ROLE_NORMAL, tail(shown, in.w - 4));
    frame_put_glyph(f, in, x, 0, G_SHADE4, ROLE_FOCUS);
    char toks[512];
    size_t n;
    tokens_line(tk, p->text, p->len, toks, sizeof toks, &n);
    const Config *c = &session_model(v->sim)->cfg;
    frame_print(f, in, 0, 2, ROLE_DIM, "%zu token%s (of %s's context of %zu):", n, n == 1 ? "" : "s", c->name,
                c->max_seq_len);
    frame_text(f, in, 0, 3, ROLE_NORMAL, tail(toks, in.w));
    frame_text(f, in, 0, 4, ROLE_DIM, "Enter runs it from the first pass; Backspace deletes, Ctrl-U clears; Esc keeps the old one");
}
