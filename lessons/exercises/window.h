/* window.h: a sliding window of K/V rows over a fixed buffer (lesson 7).
 *
 * The buffer holds `window` rows of K and of V. Appending a row when it is
 * full overwrites the oldest one, as a ring: the row of position p goes to
 * slot p % window. The window then holds the newest min(n_seen, window)
 * positions, and its memory never grows. */
#ifndef KVSCOPE_EXERCISE_WINDOW_H
#define KVSCOPE_EXERCISE_WINDOW_H

#include <stddef.h>

typedef struct {
    size_t window;  /* rows the buffer holds */
    size_t dim;     /* values per row (head_dim) */
    float *k, *v;   /* [window][dim] each: the fixed buffers */
    size_t n_seen;  /* rows appended so far: positions 0 .. n_seen-1 */
} Window;

/* Allocate the buffers (given). Returns 0, or -1 when memory runs out. */
int window_init(Window *w, size_t window, size_t dim);
void window_free(Window *w);

/* Store the K and V rows (dim values each) of position w->n_seen. */
void window_append(Window *w, const float *k, const float *v);

/* Rows held now: at most `window`. */
size_t window_length(const Window *w);

/* Absolute position of the oldest row held (0 until the window is full). */
size_t window_first_pos(const Window *w);

/* The i-th oldest row held (i < window_length): position first_pos + i. */
const float *window_k(const Window *w, size_t i);
const float *window_v(const Window *w, size_t i);

#endif
