/* window.c, wrong on purpose (lesson 7): window_v reads slot i, not the slot
 * of the i-th oldest position (window_k is right). The lint proves its
 * check fails and names the mistake. */
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

/* Position p lives in slot p % window: the Marlin design's write_pos = seq_len % window_size. */
static size_t slot(const Window *w, size_t pos)
{
    return pos % w->window;
}

void window_append(Window *w, const float *k, const float *v)
{
    size_t s = slot(w, w->n_seen);
    memcpy(w->k + s * w->dim, k, w->dim * sizeof(float));
    memcpy(w->v + s * w->dim, v, w->dim * sizeof(float));
    w->n_seen++;
}

size_t window_length(const Window *w)
{
    return w->n_seen < w->window ? w->n_seen : w->window;
}

size_t window_first_pos(const Window *w)
{
    return w->n_seen - window_length(w);
}

const float *window_k(const Window *w, size_t i)
{
    return w->k + slot(w, window_first_pos(w) + i) * w->dim;
}

const float *window_v(const Window *w, size_t i)
{
    return w->v + i * w->dim; /* WRONG: the slot of row i is not i */
}
