/* view.h: the interactive view's state, and the one place keys and frames
 * go through.
 *
 * The view holds the sessions (the worked example, the simulation, and the
 * three of the compare screen), which screen is shown, the panel with focus,
 * the chosen layer and head, play mode, and the overlays (help, a chooser).
 * A loop (the terminal one in tty.h, or the headless one in headless.h)
 * feeds it keys and asks it for frames:
 *
 *     view_key(v, key) -> KR_* bits     view_draw(v, frame)
 *
 * view_draw builds a whole frame (title bar, the screen, the footer, then
 * any overlay) and the loop emits it once. Below VIEW_MIN_W x VIEW_MIN_H the
 * frame says so instead and only q, Ctrl-C and resizes are taken. */
#ifndef KVSCOPE_UI_VIEW_H
#define KVSCOPE_UI_VIEW_H

#include <stddef.h>

#include "sim/beam_replay.h"
#include "sim/serve_replay.h"
#include "sim/spec_replay.h"
#include "sim/session.h"
#include "stats/roofline.h"
#include "ui/frame.h"

/* The smallest terminal the screens are laid out for (the documented minimum). */
#define VIEW_MIN_W 80
#define VIEW_MIN_H 24

typedef enum { SCR_EXAMPLE = 0, SCR_SIM, SCR_COMPARE, SCR_COUNT } ScreenId;

/* What a key did. */
enum {
    KR_NONE = 0,         /* not taken */
    KR_HANDLED = 1 << 0, /* taken */
    KR_CHANGED = 1 << 1, /* the frame must be redrawn */
    KR_QUIT = 1 << 2,    /* leave the view */
};

/* What the view asks of the app layer, which knows models and prompts. */
typedef struct {
    /* A validated config for model `name` (with the user's --set, --shared
     * applied) and its kernels; ERR_USAGE when it is unknown or too large. */
    int (*load_model)(void *ctx, const char *name, Config *cfg, const Kernels **kern, Err *e);
    /* The prompt for cfg, as the user's prompt options make it (*ids malloc'd). */
    int (*make_prompt)(void *ctx, const Config *cfg, int **ids, size_t *len, Err *e);
    void *ctx;
} ViewHooks;

typedef enum { CHOOSE_NONE = 0, CHOOSE_CACHE, CHOOSE_MODEL } ChooseKind;

#define CHOOSER_MAX 48

/* An open list to choose from (c: caches, m: models). */
typedef struct {
    ChooseKind kind;
    int side;               /* compare: which cache (0 = A, 1 = B) */
    char items[CHOOSER_MAX][96];
    char notes[CHOOSER_MAX][48];
    size_t n, sel;
    char left_out[160];     /* what was not listed and why, for the footer ("" when nothing) */
} Chooser;

#define PROMPT_EDIT_MAX 512

/* The line behind t: a prompt typed as text (UTF-8), for the simulation.
 * It opens on the old prompt, selected: the first character typed replaces
 * it, a cursor key keeps it to edit. */
typedef struct {
    int open;
    char text[PROMPT_EDIT_MAX];
    size_t len;
    size_t cur;             /* the cursor, a byte offset at a character's start: 0 .. len */
    int selected;           /* the whole text is selected */
    char error[512];        /* why the last Enter was refused ("" when it was not), until the next key */
} PromptEdit;

typedef struct {
    Session *ex;            /* the worked example */
    Session *sim;           /* the simulation; its model and prompt drive compare too. NULL when
                               the simulation screen shows a recorded run (beam, serving or speculation) instead */
    BeamReplay *beam;       /* an encoder-decoder's beam search, recorded; or NULL */
    ServeReplay *serving;   /* many requests served over one pool, recorded; or NULL */
    SpecReplay *spec;       /* speculative decoding, recorded; or NULL */
    size_t replay_step;     /* steps of the recorded run shown: 0 .. its steps */
    Session *cmp[3];        /* compare: cache A, cache B, and the exact reference */
    char cmp_spec[2][96];
    ScreenId screen;
    int focus[SCR_COUNT];   /* the focused panel of each screen */
    size_t layer, head;     /* for the heatmap and the map's marker */
    size_t seq;             /* the sequence of the simulation's batch its cache map shows (s) */
    int playing;
    int speed;              /* index into the speeds (view_speed_name) */
    int help;               /* the help overlay is shown */
    Chooser chooser;        /* kind CHOOSE_NONE when closed */
    PromptEdit edit;        /* a prompt being typed (t) */
    char status[320];       /* a message for the footer, until the next key */
    int status_warn;
    int ascii;              /* ASCII glyphs only */
    int color;              /* colours allowed */
    int hide_times;         /* headless: wall times would make frames differ run to run */
    int w, h;               /* terminal size */
    Roofs roofs;            /* the machine's two roofs for the counters and the roofline (sim/roofs.h);
                               source ROOFS_NONE: not known */
    ViewHooks hooks;
} View;

/* Take ownership of the two sessions and start on `screen`. */
void view_init(View *v, Session *ex, Session *sim, ScreenId screen, const ViewHooks *hooks);
/* The same with a recorded beam search on the simulation screen (an
 * encoder-decoder): compare, the cache and model lists and the prompt line
 * are for a decoder's session and say so. Takes ownership of beam. */
void view_init_beam(View *v, Session *ex, BeamReplay *beam, ScreenId screen, const ViewHooks *hooks);
/* The same with a recorded serving run (`view --serve`). Takes ownership. */
void view_init_serving(View *v, Session *ex, ServeReplay *serving, ScreenId screen, const ViewHooks *hooks);
/* The same with recorded speculative decoding (`view --draft --speculate`). Takes ownership. */
void view_init_spec(View *v, Session *ex, SpecReplay *spec, ScreenId screen, const ViewHooks *hooks);
/* Steps of the recorded run on the simulation screen (0 without one). */
size_t view_replay_steps(const View *v);
void view_free(View *v);

/* Build the whole frame for the current state (f has the terminal's size). */
void view_draw(const View *v, Frame *f);
/* Handle one key (VK_RESIZE: v->w, v->h already set by the loop). */
unsigned view_key(View *v, int key);
/* A play-mode tick: one step of every session on screen. */
unsigned view_tick(View *v);
/* Milliseconds between play ticks: -1 when paused, 0 for as fast as it goes. */
int view_tick_ms(const View *v);
/* "10 steps/s" or "max" for the current speed. */
const char *view_speed_name(const View *v, char *buf, size_t cap);

/* The sessions the current screen steps (1 or 3); out holds at most 3. */
size_t view_sessions(const View *v, Session **out);
/* Put a message in the footer (printf-style). */
void view_status(View *v, int warn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
