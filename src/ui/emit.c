/* ncurses' wide-character API (cchar_t, wget_wch) and wcwidth, also when
 * the build does not pass ncursesw's own flags (the sanitizer build) */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include "ui/emit.h"

#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* How each role looks: a colour (or -1 for the default) and the attributes
 * with colour and without. Roles that carry meaning keep a glyph too, so
 * the monochrome column may leave them plain. */
static const struct {
    short fg, bg;
    unsigned color_attr, mono_attr;
} looks[ROLE_COUNT] = {
    [ROLE_NORMAL] = { -1, -1, 0, 0 },
    [ROLE_DIM] = { -1, -1, A_DIM, A_DIM },
    [ROLE_TITLE] = { COLOR_BLACK, COLOR_WHITE, 0, A_REVERSE },
    [ROLE_TAB] = { COLOR_BLACK, COLOR_CYAN, A_BOLD, A_BOLD },
    [ROLE_HEAD] = { -1, -1, A_BOLD, A_BOLD },
    [ROLE_FOCUS] = { COLOR_YELLOW, -1, A_BOLD, A_BOLD | A_UNDERLINE },
    [ROLE_KEY] = { COLOR_CYAN, -1, A_BOLD, A_BOLD },
    [ROLE_NEW] = { -1, -1, A_BOLD | A_UNDERLINE, A_BOLD | A_UNDERLINE },
    [ROLE_WARN] = { COLOR_RED, -1, A_BOLD, A_BOLD },
    [ROLE_GOOD] = { COLOR_GREEN, -1, 0, 0 },
    [ROLE_SEL] = { -1, -1, A_REVERSE, A_REVERSE },
    [ROLE_EXACT] = { COLOR_GREEN, -1, 0, 0 },
    [ROLE_LOSSY] = { COLOR_YELLOW, -1, 0, 0 },
    [ROLE_EVICTED] = { COLOR_RED, -1, 0, 0 },
    [ROLE_SHARED] = { COLOR_BLUE, -1, 0, 0 },
    [ROLE_HEAT1] = { COLOR_BLUE, -1, 0, 0 },
    [ROLE_HEAT2] = { COLOR_CYAN, -1, 0, 0 },
    [ROLE_HEAT3] = { COLOR_YELLOW, -1, 0, 0 },
    [ROLE_HEAT4] = { COLOR_RED, -1, A_BOLD, 0 },
    [ROLE_SPARK] = { COLOR_CYAN, -1, 0, 0 },
    [ROLE_UNCACHED] = { COLOR_MAGENTA, -1, 0, 0 },
};

void emit_init(Emitter *em, int color)
{
    memset(em, 0, sizeof *em);
    int use = color && has_colors() && start_color() == OK;
    if (use)
        use_default_colors();
    for (int r = 0; r < ROLE_COUNT; r++) {
        if (use && (looks[r].fg != -1 || looks[r].bg != -1) && r < COLOR_PAIRS) {
            init_pair((short)(r + 1), looks[r].fg, looks[r].bg);
            em->pair[r] = (short)(r + 1);
            em->attr[r] = looks[r].color_attr;
        } else {
            em->attr[r] = use ? looks[r].color_attr : looks[r].mono_attr;
        }
    }
}

void emit_frame(const Emitter *em, const Frame *f)
{
    int w = f->w < COLS ? f->w : COLS, h = f->h < LINES ? f->h : LINES;
    cchar_t *row = malloc((size_t)w * sizeof *row);
    if (!row)
        return;
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            const Cell *c = &f->cells[y * f->w + x];
            /* a character the locale cannot show would throw the row out of step */
            wchar_t wc[2] = { (wchar_t)c->ch, 0 };
            if (c->ch >= 0x80 && wcwidth(wc[0]) != 1)
                wc[0] = '?';
            setcchar(&row[x], wc, (attr_t)em->attr[c->role], em->pair[c->role], NULL);
        }
        mvadd_wchnstr(y, 0, row, w);
    }
    free(row);
    wnoutrefresh(stdscr);
    doupdate();
}
