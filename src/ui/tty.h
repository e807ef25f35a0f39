/* tty.h: the interactive view's loop on a real terminal.
 *
 * One loop: wait for a key (or, in play mode, for the next tick), hand it
 * to the view, and when the view says something changed, build a frame and
 * emit it once. KEY_RESIZE re-lays out. SIGINT, SIGTERM and SIGHUP only set
 * a flag that the loop checks; the terminal is restored (endwin) on every
 * way out. */
#ifndef KVSCOPE_UI_TTY_H
#define KVSCOPE_UI_TTY_H

#include "ui/view.h"
#include "util/err.h"

/* Check that stdin and stdout are terminals and TERM names a known one;
 * ERR_USAGE with the reason when not. Call before anything is loaded. */
int tty_check(Err *e);

/* Run the view until q, Ctrl-C or a signal. Returns 0 after q or Ctrl-C,
 * 128 + the signal's number after a signal, -1 (with e) when the terminal
 * cannot be set up. The terminal is restored in every case. */
int tty_run(View *v, Err *e);

/* A SessionSpec.on_layer for the terminal: during tty_run, once a pass has
 * run for a fifth of a second the bottom line shows its progress, and q or
 * Ctrl-C stops it (nonzero) and ends the view; other keys pressed meanwhile
 * are kept, in order, for after the pass. Outside tty_run it does nothing
 * and returns 0. */
int tty_on_layer(void *ctx, size_t layers_done, size_t n_layers);

/* What tty_measure found (means; nothing is asserted). */
typedef struct {
    int w, h;
    double build_ms[3];  /* view_draw per frame, each screen */
    double emit_ms;      /* emit_frame per frame, the screens in turn (every frame differs) */
    double play_steps_s; /* play mode on the simulation: tick + draw + emit, as fast as it goes */
    size_t play_steps;
} Measure;

/* Measure the view at w x h through a real ncurses screen writing to
 * /dev/null (TERM=xterm-256color, so no terminal is needed): building
 * `frames` frames of each screen at the end of its run (at most 64 passes),
 * emitting `frames` frames that each differ from the last, then the
 * simulation played from pass 0 to the end, repeated for at least a second.
 * -1 when ncurses cannot start. */
int tty_measure(View *v, int w, int h, int frames, Measure *out, Err *e);

#endif
