/* panel_tokens.c: the prompt, then the tokens generated; the newest in
 * brackets. A model with a tokenizer shows each token as its piece of text
 * (a space inside a piece as ␣, control bytes escaped, one blank between
 * pieces so the boundaries show); one without shows ids. When they do not
 * fit, the oldest go first. */
#include <stdio.h>
#include <string.h>

#include "ui/panels.h"

const char *panel_token_label(const Tokenizer *tk, int id, char *buf, size_t cap)
{
    size_t len;
    const unsigned char *piece = tk ? tokenizer_piece(tk, id, &len) : NULL;
    if (piece)
        return tokenizer_show(piece, len, 1, buf, cap);
    snprintf(buf, cap, tk ? "<%d>" : "%d", id);
    return buf;
}

char *panel_clip(char *s, int cols)
{
    int w = 0;
    char *p = s;
    while (*p) {
        char *next = p + 1;
        while (((unsigned char)*next & 0xC0) == 0x80)
            next++;
        char keep = *next;
        *next = '\0';
        int cw = text_width(p);
        *next = keep;
        if (w + cw > cols)
            break;
        w += cw;
        p = next;
    }
    *p = '\0';
    return s;
}

void panel_token_axis(Frame *f, Rect r, int y, const char *name, int lw, int cw, size_t P, const Tokenizer *tk,
                      const int *tok)
{
    frame_text(f, r, 0, y, ROLE_DIM, name);
    const int cols = cw > 1 ? cw - 1 : 1;
    for (size_t j = 0; j < P && lw + (int)j * cw < r.w; j++) {
        char label[64];
        char *shown = (char *)panel_token_label(tk, tok[j], label, sizeof label);
        const int x = lw + (int)j * cw;
        if (cw <= 2 && strncmp(shown, "\u2423", 3) == 0 && shown[3])
            shown += 3;
        if (cols < 4 && shown[0] == '\\' && shown[1] == 'x' && strlen(shown) == 4) { /* a byte: its hex digits */
            if (cols < 2) { /* no room for them: cut */
                frame_ellipsis(f, rect_sub(r, x, 0, 1, r.h), 0, y, ROLE_DIM);
                continue;
            }
            shown += 2;
        }
        frame_text(f, r, x, y, ROLE_DIM, panel_clip(shown, cols));
    }
}

void panel_tokens(Frame *f, Rect r, const View *v, const Session *s, int focused)
{
    (void)v;
    size_t len;
    const int *tok = session_tokens(s, &len);
    const Tokenizer *tk = session_tokenizer(s);
    const size_t plen = session_prompt_len(s);
    SessionSpec sp;
    session_spec(s, &sp);
    char title[128];
    snprintf(title, sizeof title, "tokens%s: prompt %zu, generated %zu of %zu (newest in brackets)",
             tk ? " as text" : "", plen, len - plen, sp.go.n_generate);
    frame_rule(f, r, 0, title, focused);
    if (r.h < 2)
        return;
    /* lay tokens out right to left from the newest, to know where to start */
    const int width = r.w * (r.h - 1);
    int need = 0;
    size_t first = len;
    while (first > 0) {
        char buf[64];
        int w = text_width(panel_token_label(tk, tok[first - 1], buf, sizeof buf)) + 1 + (first - 1 == plen ? 2 : 0) + 2;
        if (need + w > width - 4)
            break;
        need += w;
        first--;
    }
    int x = 0, y = 1;
    if (first > 0)
        x = frame_ellipsis(f, r, 0, y, ROLE_DIM) + 1;
    for (size_t i = first; i < len; i++) {
        char label[64], buf[72];
        int newest = i + 1 == len && i >= plen;
        if (i == plen) {
            if (x + 2 > r.w)
                x = 0, y++;
            frame_put_glyph(f, r, x, y, G_VLINE, ROLE_DIM);
            x += 2;
        }
        panel_token_label(tk, tok[i], label, sizeof label);
        snprintf(buf, sizeof buf, newest ? "[%s]" : "%s", label);
        int w = text_width(buf);
        if (x + w > r.w)
            x = 0, y++;
        frame_text(f, r, x, y, newest ? ROLE_NEW : i < plen ? ROLE_DIM : ROLE_NORMAL, buf);
        x += w + 1;
    }
}
