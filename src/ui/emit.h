/* emit.h: copy a Frame to the terminal through ncurses, once per frame.
 *
 * The emitter maps each cell's role to an attribute: colours when the
 * terminal has them and the user allows them, else bold, dim, underline and
 * reverse only. It writes the frame row by row into stdscr and makes one
 * doupdate(), so the terminal sees only what changed. */
#ifndef KVSCOPE_UI_EMIT_H
#define KVSCOPE_UI_EMIT_H

#include "ui/frame.h"

typedef struct {
    unsigned attr[ROLE_COUNT]; /* attr_t, without the colour pair */
    short pair[ROLE_COUNT];
} Emitter;

/* Call after newterm(); colours are used when `color` and the terminal
 * has them (start_color is called then). */
void emit_init(Emitter *em, int color);
/* Draw f (sized to the terminal) and update the screen once. */
void emit_frame(const Emitter *em, const Frame *f);

#endif
