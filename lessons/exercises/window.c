/* window.c: a sliding window over a fixed buffer (lesson 7, the teaching notes'
 * "medium" exercise, the Marlin design's ring buffer). Fill in the TODOs; check it
 * with `kvscope lesson check 7 --file THIS_FILE`. */
#include <stdlib.h>
#include <string.h>

#include "window.h"

int window_init(Window *w, size_t window, size_t dim)
{
    w->window = window;
    w->dim = dim;
    w->n_seen = 0;
    w->k = calloc(window * dim, sizeof(float));
    w->v = calloc(window * dim, sizeof(float));
    if (!w->k || !w->v) {
        window_free(w);
        return -1;
    }
    return 0;
}

void window_free(Window *w)
{
    free(w->k);
    free(w->v);
    w->k = w->v = NULL;
}

void window_append(Window *w, const float *k, const float *v)
{
    /* TODO: the row of position w->n_seen goes to slot n_seen % window:
     * copy dim floats of k and of v there, then count the row. */
    (void)w;
    (void)k;
    (void)v;
}

size_t window_length(const Window *w)
{
    /* TODO: every row seen, but never more than the buffer holds */
    (void)w;
    return 0;
}

size_t window_first_pos(const Window *w)
{
    /* TODO: 0 until the buffer is full; then the oldest position kept */
    (void)w;
    return 0;
}

const float *window_k(const Window *w, size_t i)
{
    /* TODO: the slot of position window_first_pos(w) + i */
    return w->k + i * w->dim;
}

const float *window_v(const Window *w, size_t i)
{
    /* TODO: as window_k */
    return w->v + i * w->dim;
}
