/* help.c: the help overlay (? or F1): the keys, and a legend of glyphs and
 * colours; and the screen shown when the terminal is too small. */
#include <stdio.h>

#include "ui/screens.h"

/* Every key the view takes (view.c's handlers, chooser.c's, prompt_edit.c's);
 * data/kvscope.1's Keys (under VIEW OPTIONS) say the same (tests/cli/test_view.sh). */
static const char *const keys[][2] = {
    { "Space, \u2192", "one step forward (one forward pass)" },
    { "\u2190", "one step back (rewind by deterministic replay)" },
    { "p", "play / pause (at the end: play again)" },
    { "+ -, = _", "faster / slower play" },
    { "Tab, S-Tab", "next / previous panel (the focused one: \u25b8)" },
    { "[ ] h l  { }", "previous / next layer; previous / next head" },
    { "s", "the cache map of the batch's next sequence (--batch)" },
    { "c", "choose a cache (compare: for the focused side)" },
    { "m", "choose a model" },
    { "t", "type a prompt (models with a tokenizer)" },
    { "r", "reset to pass 0" },
    { "1 2 3", "worked example, simulation, compare" },
    { "? F1", "this help (any key closes it)" },
    { "q, Ctrl-C", "quit" },
    { "\u2191 \u2193 j k", "in c's and m's lists: move; PgUp Home, PgDn End: the ends" },
    { "Enter, Esc", "lists: choose (or Space), close (or q); t: run, cancel" },
    { "\u2190 \u2192 Home End", "in t's line: move; Backspace deletes, Ctrl-U clears" },
};

typedef struct {
    Glyph g;
    int role;
    const char *text;
} Legend;

/* Legend lines, several entries each, so help fits 80x24. */
static const Legend legend[][5] = {
    { { G_SLOT_EXACT, ROLE_EXACT, "f32 slot (green)" },
      { G_SLOT_F16, ROLE_EXACT, "f16" },
      { G_SLOT_LOSSY, ROLE_LOSSY, "quantized (yellow)" },
      { G_SLOT_SHARED, ROLE_SHARED, "shared (blue)" } },
    { { G_SLOT_EVICTED, ROLE_EVICTED, "evicted (red)" },
      { G_SLOT_EMPTY, ROLE_DIM, "empty / reserved" },
      { G_NEW, ROLE_NEW, "new (bold)" },
      { G_PAGE, ROLE_DIM, "page start" } },
    { { G_SHADE4, ROLE_HEAT4, "weight >= .5" },
      { G_SHADE3, ROLE_HEAT3, ">= .25" },
      { G_SHADE2, ROLE_HEAT2, ">= .1" },
      { G_SHADE1, ROLE_HEAT1, "> .02 (attention heatmaps)" } },
    { { G_SPARK7, ROLE_SPARK, "cost of a pass, cached (cyan)" },
      { G_SPARK7, ROLE_UNCACHED, "without a cache (magenta)" } },
};

void help_draw(Frame *f, const View *v)
{
    (void)v;
    const int n_keys = (int)(sizeof keys / sizeof keys[0]), n_leg = (int)(sizeof legend / sizeof legend[0]);
    int w = f->w - 4 < 76 ? f->w - 4 : 76;
    int h = n_keys + n_leg + 3;
    if (h > f->h)
        h = f->h;
    Rect box = { (f->w - w) / 2, (f->h - h) / 2, w, h };
    frame_box(f, box, "help: keys and legend", ROLE_HEAD);
    Rect in = rect_sub(box, 2, 1, w - 4, h - 2);
    int y = 0;
    for (int i = 0; i < n_keys; i++, y++) {
        frame_text(f, in, 0, y, ROLE_KEY, keys[i][0]);
        frame_text(f, in, 13, y, ROLE_NORMAL, keys[i][1]);
    }
    frame_text(f, in, 0, y++, ROLE_HEAD, "legend (meaning is never carried by colour alone):");
    for (int i = 0; i < n_leg; i++, y++) {
        int x = 1;
        for (int j = 0; j < 5 && legend[i][j].text; j++) {
            frame_put_glyph(f, in, x, y, legend[i][j].g, legend[i][j].role);
            x = frame_text(f, in, x + 2, y, ROLE_NORMAL, legend[i][j].text) + 3;
        }
    }
}

void small_draw(Frame *f, const View *v)
{
    (void)v;
    Rect all = frame_rect(f);
    char need[96], have[32], want[32];
    snprintf(have, sizeof have, "have %dx%d,", f->w, f->h);
    snprintf(want, sizeof want, "need %dx%d", VIEW_MIN_W, VIEW_MIN_H);
    snprintf(need, sizeof need, "terminal too small: %s %s", have, want);
    /* one line when it fits, else one phrase per line; then the key */
    const char *lines[4] = { need, "q quits", NULL, NULL };
    int n = 2;
    if (text_width(need) > f->w)
        lines[0] = "terminal too small:", lines[1] = have, lines[2] = want, lines[3] = "q quits", n = 4;
    int y = f->h > n ? (f->h - n) / 2 : 0;
    for (int i = 0; i < n; i++)
        frame_text(f, all, 0, y + i, i + 1 < n ? ROLE_WARN : ROLE_NORMAL, lines[i]);
}
