#include "ui/frame.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unicode glyph and ASCII fallback, by meaning. */
static const struct {
    uint32_t uni;
    char ascii;
} glyphs[G_COUNT] = {
    [G_HLINE] = { 0x2500, '-' },        [G_VLINE] = { 0x2502, '|' },     [G_TL] = { 0x250c, '+' },
    [G_TR] = { 0x2510, '+' },           [G_BL] = { 0x2514, '+' },        [G_BR] = { 0x2518, '+' },
    [G_SLOT_EMPTY] = { 0x00b7, '.' },   [G_SLOT_EXACT] = { 0x2588, '#' }, [G_SLOT_F16] = { 0x2586, 'h' },
    [G_SLOT_LOSSY] = { 0x2592, 'q' },
    [G_SLOT_EVICTED] = { 0x00d7, 'x' }, [G_SLOT_SHARED] = { 0x2593, 's' }, [G_NEW] = { 0x25b2, '^' },
    [G_PAGE] = { 0x2575, '|' },         [G_FOCUS] = { 0x25b8, '>' },     [G_PLAY] = { 0x25b6, '>' },
    [G_PAUSE] = { 0x2016, '=' },        [G_ARROW] = { 0x2192, '>' },
    [G_SHADE0] = { ' ', ' ' },          [G_SHADE1] = { 0x2591, '.' },    [G_SHADE2] = { 0x2592, ':' },
    [G_SHADE3] = { 0x2593, '*' },       [G_SHADE4] = { 0x2588, '#' },    [G_SPARK0] = { 0x2581, '_' },
    [G_SPARK1] = { 0x2582, '.' },       [G_SPARK2] = { 0x2583, '-' },    [G_SPARK3] = { 0x2584, '~' },
    [G_SPARK4] = { 0x2585, '=' },       [G_SPARK5] = { 0x2586, '+' },    [G_SPARK6] = { 0x2587, '*' },
    [G_SPARK7] = { 0x2588, '#' },
};

/* ASCII for a code point met in text (labels use only these). */
static uint32_t ascii_of(uint32_t cp)
{
    if (cp < 0x80)
        return cp;
    for (int g = 0; g < G_COUNT; g++)
        if (glyphs[g].uni == cp)
            return (uint32_t)glyphs[g].ascii;
    switch (cp) {
    case 0x2190: return '<'; /* left arrow */
    case 0x25c0: return '<';
    case 0x2014: return '-'; /* em dash */
    case 0x2013: return '-';
    case 0x2248: return '~'; /* almost equal */
    case 0x2264: return '<';
    case 0x2265: return '>';
    case 0x2713: return '*'; /* check mark */
    case 0x2260: return '#'; /* not equal */
    case 0x2423: return '_'; /* open box: the space key */
    case 0x221a: return 'V'; /* square root */
    case 0x1d40: return 'T'; /* superscript T */
    case 0x2219: return '.';
    default: return '?';
    }
}

int frame_init(Frame *f, int w, int h, int ascii)
{
    memset(f, 0, sizeof *f);
    f->ascii = ascii;
    return frame_resize(f, w, h);
}

int frame_resize(Frame *f, int w, int h)
{
    if (w < 1)
        w = 1;
    if (h < 1)
        h = 1;
    Cell *c = malloc((size_t)w * (size_t)h * sizeof *c);
    if (!c)
        return -1;
    free(f->cells);
    f->cells = c;
    f->w = w;
    f->h = h;
    frame_clear(f);
    return 0;
}

void frame_free(Frame *f)
{
    free(f->cells);
    f->cells = NULL;
    f->w = f->h = 0;
}

void frame_clear(Frame *f)
{
    for (int i = 0; i < f->w * f->h; i++)
        f->cells[i] = (Cell){ ' ', ROLE_NORMAL };
}

Rect rect_sub(Rect r, int dx, int dy, int w, int h)
{
    Rect s = { r.x + dx, r.y + dy, w, h };
    if (dx < 0)
        s.x = r.x, s.w += dx;
    if (dy < 0)
        s.y = r.y, s.h += dy;
    if (s.x + s.w > r.x + r.w)
        s.w = r.x + r.w - s.x;
    if (s.y + s.h > r.y + r.h)
        s.h = r.y + r.h - s.y;
    if (s.w < 0)
        s.w = 0;
    if (s.h < 0)
        s.h = 0;
    return s;
}

uint32_t frame_glyph(const Frame *f, Glyph g)
{
    return f->ascii ? (uint32_t)glyphs[g].ascii : glyphs[g].uni;
}

void frame_put(Frame *f, Rect clip, int x, int y, uint32_t ch, int role)
{
    if (x < 0 || y < 0 || x >= clip.w || y >= clip.h)
        return;
    x += clip.x, y += clip.y;
    if (x < 0 || y < 0 || x >= f->w || y >= f->h)
        return;
    if (f->ascii)
        ch = ascii_of(ch);
    f->cells[y * f->w + x] = (Cell){ ch, (uint8_t)role };
}

void frame_put_glyph(Frame *f, Rect clip, int x, int y, Glyph g, int role)
{
    frame_put(f, clip, x, y, frame_glyph(f, g), role);
}

/* Next code point of UTF-8 text (malformed bytes read as '?'). */
static uint32_t utf8_next(const char **p)
{
    const unsigned char *s = (const unsigned char *)*p;
    uint32_t cp;
    int n;
    if (s[0] < 0x80)
        cp = s[0], n = 1;
    else if ((s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80)
        cp = (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f), n = 2;
    else if ((s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80)
        cp = (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f), n = 3;
    else if ((s[0] & 0xf8) == 0xf0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80)
        cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 | (uint32_t)(s[2] & 0x3f) << 6 |
             (s[3] & 0x3f),
        n = 4;
    else
        cp = '?', n = 1;
    *p += n;
    return cp;
}

int text_width(const char *utf8)
{
    int n = 0;
    while (*utf8) {
        (void)utf8_next(&utf8);
        n++;
    }
    return n;
}

int frame_ellipsis(Frame *f, Rect clip, int x, int y, int role)
{
    if (!f->ascii) {
        frame_put(f, clip, x, y, 0x2026, role); /* HORIZONTAL ELLIPSIS */
        return x + 1;
    }
    for (int i = 0; i < 3; i++)
        frame_put(f, clip, x + i, y, '.', role);
    return x + 3;
}

int frame_text(Frame *f, Rect clip, int x, int y, int role, const char *utf8)
{
    const int x0 = x, edge = clip.x + clip.w > f->w ? f->w - clip.x : clip.w; /* the first column not shown */
    int cut = 0;
    while (*utf8) {
        uint32_t cp = utf8_next(&utf8);
        cut |= x >= edge && cp != ' ';
        frame_put(f, clip, x++, y, cp, role);
    }
    if (cut && x0 < edge) { /* the last visible columns say the line goes on */
        const int at = edge - frame_ellipsis_w(f) > x0 ? edge - frame_ellipsis_w(f) : x0;
        frame_ellipsis(f, rect_sub(clip, 0, 0, edge, clip.h), at, y, role);
    }
    return x;
}

int frame_print(Frame *f, Rect clip, int x, int y, int role, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return frame_text(f, clip, x, y, role, buf);
}

int frame_print_right(Frame *f, Rect clip, int x_end, int y, int role, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return frame_text(f, clip, x_end - text_width(buf), y, role, buf);
}

int frame_wrap(Frame *f, Rect r, int role, const char *utf8)
{
    int row = 0;
    const char *p = utf8;
    while (*p && row < r.h && r.w > 0) {
        if (row > 0)
            while (*p == ' ')
                p++;
        /* the longest part that fits, back to its last space when a word goes on */
        const char *q = p, *space = NULL;
        for (int w = 0; *q && w < r.w; w++) {
            if (*q == ' ')
                space = q;
            (void)utf8_next(&q);
        }
        const char *end = !*q || row == r.h - 1 ? NULL : *q == ' ' || !space || space == p ? q : space;
        if (f) {
            char line[1024];
            size_t n = end ? (size_t)(end - p) : strlen(p);
            n = n < sizeof line ? n : sizeof line - 1;
            memcpy(line, p, n);
            line[n] = '\0';
            frame_text(f, r, 0, row, role, line);
        }
        row++;
        if (!end)
            break;
        p = end;
    }
    return row;
}

void frame_fill(Frame *f, Rect r, uint32_t ch, int role)
{
    Rect whole = frame_rect(f);
    for (int y = 0; y < r.h; y++)
        for (int x = 0; x < r.w; x++)
            frame_put(f, whole, r.x + x, r.y + y, ch, role);
}

void frame_role(Frame *f, Rect r, int role)
{
    for (int y = r.y; y < r.y + r.h; y++)
        for (int x = r.x; x < r.x + r.w; x++)
            if (x >= 0 && y >= 0 && x < f->w && y < f->h)
                f->cells[y * f->w + x].role = (uint8_t)role;
}

void frame_rule(Frame *f, Rect clip, int y, const char *title, int focused)
{
    int role = focused ? ROLE_FOCUS : ROLE_HEAD;
    for (int x = 0; x < clip.w; x++)
        frame_put_glyph(f, clip, x, y, G_HLINE, ROLE_DIM);
    frame_put_glyph(f, clip, 0, y, focused ? G_FOCUS : G_HLINE, focused ? ROLE_FOCUS : ROLE_DIM);
    frame_print(f, clip, 1, y, role, " %s ", title);
}

void frame_box(Frame *f, Rect r, const char *title, int role)
{
    if (r.w < 2 || r.h < 2)
        return;
    Rect whole = frame_rect(f);
    frame_fill(f, r, ' ', ROLE_NORMAL);
    for (int x = 1; x < r.w - 1; x++) {
        frame_put_glyph(f, whole, r.x + x, r.y, G_HLINE, role);
        frame_put_glyph(f, whole, r.x + x, r.y + r.h - 1, G_HLINE, role);
    }
    for (int y = 1; y < r.h - 1; y++) {
        frame_put_glyph(f, whole, r.x, r.y + y, G_VLINE, role);
        frame_put_glyph(f, whole, r.x + r.w - 1, r.y + y, G_VLINE, role);
    }
    frame_put_glyph(f, whole, r.x, r.y, G_TL, role);
    frame_put_glyph(f, whole, r.x + r.w - 1, r.y, G_TR, role);
    frame_put_glyph(f, whole, r.x, r.y + r.h - 1, G_BL, role);
    frame_put_glyph(f, whole, r.x + r.w - 1, r.y + r.h - 1, G_BR, role);
    if (title)
        frame_print(f, rect_sub(r, 0, 0, r.w - 1, 1), 2, 0, ROLE_HEAD, " %s ", title);
}
