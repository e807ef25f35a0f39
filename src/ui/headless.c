#include "ui/headless.h"

#include <string.h>

/* Append the UTF-8 bytes of cp to p; returns the new end. */
static char *utf8_put(char *p, uint32_t cp)
{
    if (cp < 0x80) {
        *p++ = (char)cp;
    } else if (cp < 0x800) {
        *p++ = (char)(0xc0 | (cp >> 6));
        *p++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *p++ = (char)(0xe0 | (cp >> 12));
        *p++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *p++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *p++ = (char)(0xf0 | (cp >> 18));
        *p++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *p++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *p++ = (char)(0x80 | (cp & 0x3f));
    }
    return p;
}

void frame_write_text(const Frame *f, FILE *out)
{
    char line[4 * 1000 + 2];
    for (int y = 0; y < f->h; y++) {
        int end = f->w;
        while (end > 0 && f->cells[y * f->w + end - 1].ch == ' ')
            end--;
        char *p = line;
        for (int x = 0; x < end && x < 1000; x++)
            p = utf8_put(p, f->cells[y * f->w + x].ch);
        *p++ = '\n';
        fwrite(line, 1, (size_t)(p - line), out);
    }
}

static void emit(const View *v, Frame *f, int index, const char *what, FILE *out)
{
    view_draw(v, f);
    fprintf(out, "--- frame %d: %s (%dx%d)\n", index, what, f->w, f->h);
    frame_write_text(f, out);
}

int headless_run(View *v, int w, int h, const ScriptKey *keys, size_t n, FramePrint mode, FILE *out, Err *e)
{
    Frame f;
    if (frame_init(&f, w, h, v->ascii) < 0)
        return err_set(e, ERR_RUNTIME, "out of memory for a %dx%d frame", w, h);
    v->w = w;
    v->h = h;
    if (mode == FRAMES_ALL)
        emit(v, &f, 0, "start", out);
    size_t i;
    char name[32] = "start";
    for (i = 0; i < n; i++) {
        if (keys[i].key == VK_RESIZE) {
            if (frame_resize(&f, keys[i].w, keys[i].h) < 0) {
                frame_free(&f);
                return err_set(e, ERR_RUNTIME, "out of memory for a %dx%d frame", keys[i].w, keys[i].h);
            }
            v->w = keys[i].w;
            v->h = keys[i].h;
            snprintf(name, sizeof name, "<resize:%dx%d>", keys[i].w, keys[i].h);
        } else {
            keys_name(keys[i].key, name, sizeof name);
        }
        unsigned r = view_key(v, keys[i].key);
        if (mode == FRAMES_ALL)
            emit(v, &f, (int)i + 1, name, out);
        if (r & KR_QUIT)
            break;
    }
    if (mode == FRAMES_LAST)
        emit(v, &f, (int)(i < n ? i + 1 : n), name, out);
    fprintf(out, "--- end: %s after %zu key(s)\n", i < n ? "quit" : "script done", i < n ? i + 1 : n);
    frame_free(&f);
    return 0;
}
