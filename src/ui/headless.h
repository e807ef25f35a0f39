/* headless.h: the view without a terminal, for tests.
 *
 * A script of keys drives the same View the terminal loop drives; after
 * the start and after every key the frame is rendered to plain UTF-8 text
 * (each row with its trailing spaces removed) under a header line
 *
 *     --- frame N: KEY (WxH)
 *
 * so a test can cut the output into frames and compare them with golden
 * files. Colours are not rendered: every meaning is in the text too. */
#ifndef KVSCOPE_UI_HEADLESS_H
#define KVSCOPE_UI_HEADLESS_H

#include <stdio.h>

#include "ui/frame.h"
#include "ui/keys.h"
#include "ui/view.h"

typedef enum { FRAMES_ALL = 0, FRAMES_LAST, FRAMES_NONE } FramePrint;

/* Write f as text rows to out. */
void frame_write_text(const Frame *f, FILE *out);

/* Run the script on v at w x h. Stops at a key that quits. Returns 0, or
 * -1 (ERR_RUNTIME) when memory runs out. */
int headless_run(View *v, int w, int h, const ScriptKey *keys, size_t n, FramePrint mode, FILE *out, Err *e);

#endif
