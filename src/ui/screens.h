/* screens.h: what each screen and overlay exports to the view's loop.
 *
 * A screen draws its body (the rows between the title bar and the footer)
 * from the view's state, and takes the keys that only it knows; the keys
 * every screen shares (step, back, play, choose, help, quit) are the view's.
 * Panels are numbered 0 .. n_panels-1 for focus (Tab / Shift-Tab). */
#ifndef KVSCOPE_UI_SCREENS_H
#define KVSCOPE_UI_SCREENS_H

#include "ui/frame.h"
#include "ui/view.h"

typedef struct {
    const char *name;      /* in the title bar */
    int n_panels;
    const char *const *panel_names;
    void (*draw)(Frame *f, Rect body, const View *v);
    /* screen-specific keys; KR_NONE when the key is not the screen's */
    unsigned (*key)(View *v, int key);
} Screen;

extern const Screen screen_example; /* scr_example.c */
extern const Screen screen_sim;     /* scr_sim.c */
extern const Screen screen_compare; /* scr_compare.c */

/* Overlays, drawn over a screen. */
void help_draw(Frame *f, const View *v);       /* help.c */
void chooser_draw(Frame *f, const View *v);    /* chooser.c */
/* Fill c with caches (for the session on screen in v, or compare's side)
 * or models; returns 0, or -1 with *why set to the reason (c stays closed). */
int chooser_open(Chooser *c, const View *v, ChooseKind kind, const char **why);
/* Move in the open list or close it; Enter closes it and sets *chosen to its
 * kind (the item is c->items[c->sel]), otherwise *chosen is CHOOSE_NONE. */
unsigned chooser_key(Chooser *c, int key, ChooseKind *chosen);
void small_draw(Frame *f, const View *v);      /* too small to lay out */

/* The prompt line (prompt_edit.c). Open it on the simulation's prompt as
 * text, selected; sim's model must have a tokenizer. */
void prompt_edit_open(PromptEdit *p, const Session *sim);
/* Type into the open line; Enter closes it and sets *submit, Esc closes it. */
unsigned prompt_edit_key(PromptEdit *p, int key, int *submit);
void prompt_edit_draw(Frame *f, const View *v);

#endif
