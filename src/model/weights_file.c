/* weights_file.c: tensors from a small text file (data/weights/).
 *
 * The format is for hand-written weights such as the worked example's:
 *     # a comment
 *     NAME ROWS COLS
 *     ROWS * COLS numbers, in row-major order, spread over lines as you like
 * NAME is embed, final_norm, unembed, or layerL.T with T one of attn_norm,
 * wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down (and attn_sink, 1 x n_heads,
 * with attn_sink = learned). Every tensor must appear
 * exactly once with the shape the config implies. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "util/files.h"

typedef struct {
    char name[48];
    float *data;
    size_t rows, cols;
    int seen;
} Slot;

static void add_slot(Slot *s, size_t *n, size_t cap, const char *name, float *data, size_t rows, size_t cols)
{
    if (*n < cap)
        s[*n] = (Slot){ .data = data, .rows = rows, .cols = cols };
    if (*n < cap)
        snprintf(s[*n].name, sizeof s[*n].name, "%s", name);
    (*n)++;
}

/* Every tensor the model expects, with its shape; returns how many. */
static size_t list_slots(Model *m, Slot *s, size_t cap)
{
    const Config *c = &m->cfg;
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim, n = 0;
    add_slot(s, &n, cap, "embed", m->embed, c->vocab, d);
    size_t layers = c->shared_layers ? 1 : c->n_layers;
    for (size_t l = 0; l < layers; l++) {
        LayerWeights *w = &m->layers[l];
        const struct { const char *t; float *p; size_t r, cl; } t[] = {
            { "attn_norm", w->attn_norm, 1, d }, { "wq", w->wq, q, d },      { "wk", w->wk, kv, d },
            { "wv", w->wv, kv, d },              { "wo", w->wo, d, q },      { "ffn_norm", w->ffn_norm, 1, d },
            { "w_gate", w->w_gate, f, d },       { "w_up", w->w_up, f, d }, { "w_down", w->w_down, d, f },
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            char name[48];
            snprintf(name, sizeof name, "layer%zu.%s", l, t[i].t);
            add_slot(s, &n, cap, name, t[i].p, t[i].r, t[i].cl);
        }
    }
    add_slot(s, &n, cap, "final_norm", m->final_norm, 1, d);
    add_slot(s, &n, cap, "unembed", m->unembed, c->vocab, d);
    for (size_t l = 0; c->attn_sink && l < layers; l++) {
        char name[48];
        snprintf(name, sizeof name, "layer%zu.attn_sink", l);
        add_slot(s, &n, cap, name, m->layers[l].attn_sink, 1, c->n_heads);
    }
    return n;
}

/* Next whitespace-separated word, skipping '#' comments to end of line;
 * *line counts the newlines passed before the word. */
static int next_word(FILE *f, char *buf, size_t cap, size_t *line)
{
    size_t len = 0;
    for (;;) {
        int ch = fgetc(f);
        if (ch == '#')
            while ((ch = fgetc(f)) != EOF && ch != '\n')
                ;
        if (ch == EOF)
            break;
        if (isspace(ch)) {
            if (len) {
                ungetc(ch, f); /* the newline belongs to the next word's count */
                break;
            }
            *line += (ch == '\n');
            continue;
        }
        if (len + 1 < cap)
            buf[len++] = (char)ch;
    }
    buf[len] = '\0';
    return len ? 0 : -1;
}

int weights_load_file(Model *m, const char *path, Err *e)
{
    Slot slots[4 + 10 * 64];
    size_t n = list_slots(m, slots, sizeof slots / sizeof slots[0]);
    if (n > sizeof slots / sizeof slots[0])
        return err_set(e, ERR_USAGE, "text weights support at most 64 layers");
    FILE *f = files_fopen_input(path, e);
    if (!f)
        return e && e->kind == ERR_USAGE ? -1 : err_set(e, ERR_RUNTIME, "cannot open");
    size_t line = 1;
    char word[64];
    int rc = 0;
    while (rc == 0 && next_word(f, word, sizeof word, &line) == 0) {
        Slot *s = NULL;
        for (size_t i = 0; i < n; i++)
            if (strcmp(slots[i].name, word) == 0)
                s = &slots[i];
        if (!s) {
            rc = err_set(e, ERR_USAGE, "line %zu: unknown tensor '%s'", line, word);
            break;
        }
        char rw[32], cw[32];
        if (s->seen) {
            rc = err_set(e, ERR_USAGE, "line %zu: tensor '%s' appears twice", line, word);
            break;
        }
        if (next_word(f, rw, sizeof rw, &line) < 0 || next_word(f, cw, sizeof cw, &line) < 0 ||
            strtoul(rw, NULL, 10) != s->rows || strtoul(cw, NULL, 10) != s->cols) {
            rc = err_set(e, ERR_USAGE, "line %zu: tensor '%s' must be declared '%s %zu %zu'", line, word,
                         word, s->rows, s->cols);
            break;
        }
        for (size_t i = 0; i < s->rows * s->cols; i++) {
            char num[64], *end;
            if (next_word(f, num, sizeof num, &line) < 0) {
                rc = err_set(e, ERR_USAGE, "tensor '%s': file ends after %zu of %zu values", s->name, i,
                             s->rows * s->cols);
                break;
            }
            s->data[i] = strtof(num, &end);
            if (*end) {
                rc = err_set(e, ERR_USAGE, "line %zu: '%s' is not a number", line, num);
                break;
            }
        }
        s->seen = 1;
    }
    fclose(f);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!slots[i].seen)
            rc = err_set(e, ERR_USAGE, "tensor '%s' (%zu x %zu) is missing", slots[i].name, slots[i].rows,
                         slots[i].cols);
    return rc;
}
