/* keys.h: the view's key codes, independent of ncurses.
 *
 * A printable key is its own character ('p', '?', '['); control keys are
 * their ASCII codes (Tab 9, Enter 10, Esc 27, Ctrl-C 3); the rest are the
 * codes below, above Unicode's range. The terminal loop translates ncurses
 * keys to these; the headless loop reads them from a script. */
#ifndef KVSCOPE_UI_KEYS_H
#define KVSCOPE_UI_KEYS_H

#include <stddef.h>

#include "util/err.h"

enum {
    VK_CTRL_C = 3,
    VK_TAB = 9,
    VK_CTRL_U = 21, /* clears a line being typed */
    VK_ENTER = 10,
    VK_ESC = 27,
    VK_BACKSPACE = 127,
    VK_BASE = 0x110000,
    VK_LEFT, VK_RIGHT, VK_UP, VK_DOWN, VK_BTAB, VK_F1, VK_PGUP, VK_PGDN, VK_HOME, VK_END,
    VK_RESIZE, /* the terminal changed size (script: <resize:WxH>) */
    VK_TICK,   /* a play-mode tick: the timer fired (script: <tick>) */
};

/* One scripted key: the code, and for VK_RESIZE the new size. */
typedef struct {
    int key;
    int w, h;
} ScriptKey;

/* Parse a key script: whitespace separates nothing but itself; inside a
 * word each character is a key, and <name> is a named key: <space> <left>
 * <right> <up> <down> <tab> <btab> <enter> <esc> <f1> <c-c> <pgup> <pgdn>
 * <home> <end> <bs> (backspace) <c-u> <tick> <tick:N> (N ticks) <resize:WxH> <lt> ('<'). Example:
 * "<space> <right> p <tick:3> ? q". *out is malloc'd (caller frees).
 * Fails with ERR_USAGE naming the bad part. */
int keys_parse_script(const char *script, ScriptKey **out, size_t *n, Err *e);

/* A short readable name of a key, for the headless frame headers. */
const char *keys_name(int key, char *buf, size_t cap);

#endif
