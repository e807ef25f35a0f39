/* frame.h: a grid of character cells that screens draw into.
 *
 * A frame is built whole, then emitted once: to the terminal through
 * ncurses (emit.h) or to plain text for tests (headless.h). A cell holds a
 * Unicode code point and a role; the role says what the cell means (a new
 * row, a quantized slot, a key name) and the emitter chooses how that looks.
 * Meaning is never carried by the role alone: every role that matters is
 * drawn with its own glyph or words too, so a monochrome terminal and the
 * plain-text frames say the same thing.
 *
 * Every write is clipped to the frame and to the Rect it is given, so a
 * screen can draw at any size without checking bounds. Text is UTF-8; in
 * ASCII mode each character outside ASCII is replaced by its fallback.
 *
 * One rule for text that does not fit: a line of text cut by the right edge
 * of its Rect (or of the frame) ends in an ellipsis, "…" or, in ASCII
 * mode, "..." (frame_ellipsis); frame_text applies it to every write. */
#ifndef KVSCOPE_UI_FRAME_H
#define KVSCOPE_UI_FRAME_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ROLE_NORMAL = 0,
    ROLE_DIM,      /* secondary text, empty slots */
    ROLE_TITLE,    /* the title bar */
    ROLE_TAB,      /* the current screen's name in the title bar */
    ROLE_HEAD,     /* a panel's title */
    ROLE_FOCUS,    /* the focused panel's title */
    ROLE_KEY,      /* a key name in the footer and help */
    ROLE_NEW,      /* what this step added (also marked by a glyph) */
    ROLE_WARN,     /* errors, differences */
    ROLE_GOOD,     /* agreement */
    ROLE_SEL,      /* the selected line of a list */
    ROLE_EXACT,    /* cache slots by state */
    ROLE_LOSSY,
    ROLE_EVICTED,
    ROLE_SHARED,
    ROLE_HEAT1,    /* attention weights, low to high (also by shade glyph) */
    ROLE_HEAT2,
    ROLE_HEAT3,
    ROLE_HEAT4,
    ROLE_SPARK,    /* the cached run's cost */
    ROLE_UNCACHED, /* the uncached run's cost */
    ROLE_COUNT
} Role;

/* Characters with an ASCII fallback, by meaning. */
typedef enum {
    G_HLINE, G_VLINE, G_TL, G_TR, G_BL, G_BR,
    G_SLOT_EMPTY, G_SLOT_EXACT, G_SLOT_F16, G_SLOT_LOSSY, G_SLOT_EVICTED, G_SLOT_SHARED,
    G_NEW, G_PAGE, G_FOCUS, G_PLAY, G_PAUSE, G_ARROW,
    G_SHADE0, G_SHADE1, G_SHADE2, G_SHADE3, G_SHADE4,
    G_SPARK0, G_SPARK1, G_SPARK2, G_SPARK3, G_SPARK4, G_SPARK5, G_SPARK6, G_SPARK7,
    G_COUNT
} Glyph;

typedef struct {
    uint32_t ch;
    uint8_t role;
} Cell;

typedef struct {
    int w, h;
    int ascii; /* draw ASCII fallbacks only */
    Cell *cells; /* [h][w] */
} Frame;

typedef struct {
    int x, y, w, h;
} Rect;

/* Allocate a w x h frame (w, h >= 1). Returns 0, or -1 when memory runs
 * out (the frame is then empty). frame_free releases it. */
int frame_init(Frame *f, int w, int h, int ascii);
/* Change the size; the contents are cleared. Returns 0 or -1 (unchanged). */
int frame_resize(Frame *f, int w, int h);
void frame_free(Frame *f);
/* Every cell a space in ROLE_NORMAL. */
void frame_clear(Frame *f);

static inline Rect frame_rect(const Frame *f) { return (Rect){ 0, 0, f->w, f->h }; }
/* The part of r from row dy and column dx on, at most w x h (clipped to r). */
Rect rect_sub(Rect r, int dx, int dy, int w, int h);

/* The code point for glyph g in f's mode. */
uint32_t frame_glyph(const Frame *f, Glyph g);
/* Put one character at (x, y) of clip; clipped. */
void frame_put(Frame *f, Rect clip, int x, int y, uint32_t ch, int role);
void frame_put_glyph(Frame *f, Rect clip, int x, int y, Glyph g, int role);
/* Write UTF-8 text at (x, y) of clip, clipped; returns the column after it
 * (as if unclipped), so calls chain. When the right edge cuts off any of it
 * but spaces, the last visible columns become an ellipsis. */
int frame_text(Frame *f, Rect clip, int x, int y, int role, const char *utf8);
int frame_print(Frame *f, Rect clip, int x, int y, int role, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Text right-aligned to end at column x_end (exclusive) of clip. */
int frame_print_right(Frame *f, Rect clip, int x_end, int y, int role, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The ellipsis at (x, y) of clip, clipped: "…", or "..." in ASCII mode;
 * returns the column after it. */
int frame_ellipsis(Frame *f, Rect clip, int x, int y, int role);
/* UTF-8 text over the rows of r, broken at spaces (mid-word only for a
 * word longer than a row); the last row cut with an ellipsis when the text
 * goes on. Returns the rows it takes (at most r.h); with f NULL it only
 * counts them. */
int frame_wrap(Frame *f, Rect r, int role, const char *utf8);
/* Columns frame_ellipsis takes in f's mode. */
static inline int frame_ellipsis_w(const Frame *f) { return f->ascii ? 3 : 1; }
/* Fill a rectangle of clip with one character. */
void frame_fill(Frame *f, Rect r, uint32_t ch, int role);
/* Set the role of cells already drawn (a highlight), clipped. */
void frame_role(Frame *f, Rect r, int role);
/* A panel title: "─ title ─────" across row y of clip, with a focus mark. */
void frame_rule(Frame *f, Rect clip, int y, const char *title, int focused);
/* A box around r with a title in its top edge. */
void frame_box(Frame *f, Rect r, const char *title, int role);

/* Columns the UTF-8 text takes (one per code point). */
int text_width(const char *utf8);

#endif
