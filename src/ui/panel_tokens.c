/* panel_tokens.c: the prompt, then the tokens generated; the newest in
 * brackets. When they do not fit, the oldest go first. */
#include <stdio.h>
#include <string.h>

#include "ui/panels.h"

void panel_tokens(Frame *f, Rect r, const View *v, const Session *s, int focused)
{
    (void)v;
    size_t len;
    const int *tok = session_tokens(s, &len);
    const size_t plen = session_prompt_len(s);
    SessionSpec sp;
    session_spec(s, &sp);
    char title[96];
    snprintf(title, sizeof title, "tokens: prompt %zu, generated %zu of %zu (newest in brackets)", plen, len - plen,
             sp.go.n_generate);
    frame_rule(f, r, 0, title, focused);
    if (r.h < 2)
        return;
    /* lay tokens out right to left from the newest, to know where to start */
    const int width = r.w * (r.h - 1);
    int need = 0;
    size_t first = len;
    while (first > 0) {
        char buf[24];
        int w = snprintf(buf, sizeof buf, "%d ", tok[first - 1]) + (first - 1 == plen ? 2 : 0) + 2;
        if (need + w > width - 4)
            break;
        need += w;
        first--;
    }
    int x = 0, y = 1;
    if (first > 0) {
        frame_put_glyph(f, r, 0, y, G_ELLIPSIS, ROLE_DIM);
        x = 2;
    }
    for (size_t i = first; i < len; i++) {
        char buf[24];
        int newest = i + 1 == len && i >= plen;
        if (i == plen) {
            if (x + 2 > r.w)
                x = 0, y++;
            frame_put_glyph(f, r, x, y, G_VLINE, ROLE_DIM);
            x += 2;
        }
        int w = snprintf(buf, sizeof buf, newest ? "[%d]" : "%d", tok[i]);
        if (x + w > r.w)
            x = 0, y++;
        frame_text(f, r, x, y, newest ? ROLE_NEW : i < plen ? ROLE_DIM : ROLE_NORMAL, buf);
        x += w + 1;
    }
}
