#include "ui/view.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/fmt.h"
#include "ui/keys.h"
#include "ui/screens.h"

static const Screen *const screens[SCR_COUNT] = { &screen_example, &screen_sim, &screen_compare };

/* Play speeds in steps per second; 0 = as fast as the engine goes. */
static const int speeds[] = { 1, 2, 5, 10, 30, 60, 0 };
#define N_SPEEDS ((int)(sizeof speeds / sizeof speeds[0]))
#define DEFAULT_SPEED 3

/* Why a view of a recorded run has no compare screen. */
static const char NO_COMPARE[] = "compare runs one decoder's caches side by side; this view's recorded run is screen 2";

/* The second cache compare starts with: the same layout, 4-bit K and V. */
#define COMPARE_B_DEFAULT "contiguous+quant:k=q4_0,v=q4_0"

void view_init(View *v, Session *ex, Session *sim, ScreenId screen, const ViewHooks *hooks)
{
    memset(v, 0, sizeof *v);
    v->ex = ex;
    v->sim = sim;
    v->screen = screen;
    v->speed = DEFAULT_SPEED;
    v->color = 1;
    v->w = VIEW_MIN_W;
    v->h = VIEW_MIN_H;
    if (hooks)
        v->hooks = *hooks;
    snprintf(v->cmp_spec[0], sizeof v->cmp_spec[0], "%s", sim ? session_cache_spec(sim) : "contiguous");
    snprintf(v->cmp_spec[1], sizeof v->cmp_spec[1], "%s", COMPARE_B_DEFAULT);
}

void view_init_beam(View *v, Session *ex, BeamReplay *beam, ScreenId screen, const ViewHooks *hooks)
{
    view_init(v, ex, NULL, screen, hooks);
    v->beam = beam;
}

void view_init_serving(View *v, Session *ex, ServeReplay *serving, ScreenId screen, const ViewHooks *hooks)
{
    view_init(v, ex, NULL, screen, hooks);
    v->serving = serving;
}

void view_init_spec(View *v, Session *ex, SpecReplay *spec, ScreenId screen, const ViewHooks *hooks)
{
    view_init(v, ex, NULL, screen, hooks);
    v->spec = spec;
}

size_t view_replay_steps(const View *v)
{
    return v->beam ? v->beam->n_frames : v->serving ? v->serving->result.n_steps : v->spec ? v->spec->n_frames : 0;
}

/* The recorded run's model, for messages. */
static const char *replay_model(const View *v)
{
    return v->beam ? v->beam->model : v->serving ? v->serving->model : v->spec ? v->spec->target : "";
}

static void free_compare(View *v)
{
    for (int i = 0; i < 3; i++) {
        session_free(v->cmp[i]);
        v->cmp[i] = NULL;
    }
}

void view_free(View *v)
{
    free_compare(v);
    session_free(v->ex);
    session_free(v->sim);
    v->ex = v->sim = NULL;
    if (v->beam) {
        beam_replay_free(v->beam);
        free(v->beam);
        v->beam = NULL;
    }
    if (v->serving) {
        serve_replay_free(v->serving);
        free(v->serving);
        v->serving = NULL;
    }
    if (v->spec) {
        spec_replay_free(v->spec);
        free(v->spec);
        v->spec = NULL;
    }
}

void view_status(View *v, int warn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->status, sizeof v->status, fmt, ap);
    va_end(ap);
    v->status_warn = warn;
}

/* Build the compare screen's sessions from the simulation's model and
 * prompt, at the simulation's pass. A cache spec the model refuses falls
 * back to contiguous, and the footer says why. */
static int ensure_compare(View *v)
{
    if (v->cmp[0])
        return 0;
    if (!v->sim) {
        view_status(v, 1, "%s", NO_COMPARE);
        return -1;
    }
    SessionSpec sp;
    session_spec(v->sim, &sp);
    sp.uncached = UNCACHED_FORMULA; /* compare measures quality, not the uncached cost */
    Err e = { 0 };
    for (int i = 0; i < 3; i++) {
        sp.cache_spec = i < 2 ? v->cmp_spec[i] : "contiguous";
        if (session_init(&v->cmp[i], &sp, &e) < 0 && i < 2) {
            view_status(v, 1, "cache %c: %s; using contiguous", 'A' + i, e.msg);
            snprintf(v->cmp_spec[i], sizeof v->cmp_spec[i], "contiguous");
            sp.cache_spec = "contiguous";
            (void)session_init(&v->cmp[i], &sp, &e);
        }
        if (!v->cmp[i] || session_seek(v->cmp[i], session_steps(v->sim), &e) < 0) {
            free_compare(v);
            view_status(v, 1, "compare: %s", e.msg);
            return -1;
        }
    }
    return 0;
}

size_t view_sessions(const View *v, Session **out)
{
    switch (v->screen) {
    case SCR_EXAMPLE:
        out[0] = v->ex;
        return 1;
    case SCR_SIM:
        out[0] = v->sim;
        return v->sim ? 1 : 0;
    default:
        if (!v->cmp[0])
            return 0;
        for (int i = 0; i < 3; i++)
            out[i] = v->cmp[i];
        return 3;
    }
}

const char *view_speed_name(const View *v, char *buf, size_t cap)
{
    if (speeds[v->speed] == 0)
        snprintf(buf, cap, "max");
    else
        snprintf(buf, cap, "%d step%s/s", speeds[v->speed], speeds[v->speed] == 1 ? "" : "s");
    return buf;
}

int view_tick_ms(const View *v)
{
    if (!v->playing)
        return -1;
    return speeds[v->speed] ? 1000 / speeds[v->speed] : 0;
}

/* Apply `op` to every session on screen. */
typedef enum { OP_STEP, OP_BACK, OP_RESET } Op;

/* A recorded run: a step is the next step of the record. */
static unsigned apply_replay(View *v, Op op)
{
    const size_t n = view_replay_steps(v);
    if (op == OP_STEP && v->replay_step < n)
        v->replay_step++;
    else if (op == OP_BACK && v->replay_step > 0)
        v->replay_step--;
    else if (op == OP_RESET)
        v->replay_step = 0;
    if (op == OP_STEP && v->replay_step == n) {
        v->playing = 0;
        if (v->beam)
            view_status(v, 0, "search complete: %zu step%s, the best hypothesis %zu token%s (r resets, Left goes "
                        "back)", n, n == 1 ? "" : "s", v->beam->best_len, v->beam->best_len == 1 ? "" : "s");
        else if (v->serving)
            view_status(v, 0, "every request served: %zu step%s, %zu tokens generated (r resets, Left goes back)",
                        n, n == 1 ? "" : "s", v->serving->result.generated_tokens);
        else
            view_status(v, 0, "generation complete: %zu tokens in %zu target passes (r resets, Left goes back)",
                        v->spec->final.generated, v->spec->final.target_passes);
    } else if (op == OP_BACK && v->replay_step == 0) {
        view_status(v, 0, "at the start: nothing has run yet");
    }
    return KR_HANDLED | KR_CHANGED;
}

static unsigned apply(View *v, Op op)
{
    if (!v->sim && v->screen == SCR_SIM)
        return apply_replay(v, op);
    Session *ss[3];
    size_t n = view_sessions(v, ss);
    Err e = { 0 };
    int ended = 0, at_start = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = op == OP_STEP ? session_step(ss[i], &e) : op == OP_BACK ? session_back(ss[i], &e)
                                                                          : session_reset(ss[i], &e);
        if (rc < 0) {
            v->playing = 0;
            view_status(v, 1, "%s", e.msg);
            return KR_HANDLED | KR_CHANGED;
        }
        ended |= op == OP_STEP && rc == 0;
        at_start |= op == OP_BACK && rc == 0;
    }
    if (n && ended) {
        v->playing = 0;
        size_t len;
        (void)session_tokens(ss[0], &len);
        const size_t gen = len - session_prompt_len(ss[0]);
        view_status(v, 0, "generation complete: %zu pass%s, %zu token%s generated (r resets, Left goes back)",
                    session_steps(ss[0]), session_steps(ss[0]) == 1 ? "" : "es", gen, fmt_s(gen));
    } else if (at_start) {
        view_status(v, 0, "at the start: nothing has run yet");
    }
    return KR_HANDLED | KR_CHANGED;
}

unsigned view_tick(View *v)
{
    if (!v->playing)
        return KR_HANDLED;
    return apply(v, OP_STEP);
}

static int at_end(const View *v)
{
    if (!v->sim && v->screen == SCR_SIM)
        return v->replay_step == view_replay_steps(v);
    Session *ss[3];
    size_t n = view_sessions(v, ss);
    return n && session_steps(ss[0]) == session_total_steps(ss[0]);
}

static void clamp_layer_head(View *v)
{
    Session *ss[3];
    if (view_sessions(v, ss) == 0)
        return;
    const Config *c = &session_model(ss[0])->cfg;
    if (v->layer >= c->n_layers)
        v->layer = c->n_layers - 1;
    if (v->head >= c->n_heads)
        v->head = c->n_heads - 1;
}

static unsigned switch_screen(View *v, ScreenId s)
{
    v->screen = s;
    v->playing = 0;
    if (s == SCR_COMPARE)
        (void)ensure_compare(v);
    clamp_layer_head(v);
    return KR_HANDLED | KR_CHANGED;
}

/* [ ] h l pick the layer, { } the head, for the heatmap and the map's marker. */
static unsigned layer_head_key(View *v, int key)
{
    switch (key) {
    case '[':
    case 'h':
        if (v->layer > 0)
            v->layer--;
        break;
    case ']':
    case 'l':
        v->layer++;
        break;
    case '{':
        if (v->head > 0)
            v->head--;
        break;
    case '}':
        v->head++;
        break;
    default:
        return KR_NONE;
    }
    clamp_layer_head(v);
    return KR_HANDLED | KR_CHANGED;
}

/* p plays, + and - change its speed. */
static unsigned play_key(View *v, int key)
{
    switch (key) {
    case 'p':
        if (!v->playing && at_end(v))
            (void)apply(v, OP_RESET); /* play at the end plays again from the start */
        v->playing = !v->playing;
        break;
    case '+':
    case '=':
    case '-':
    case '_': {
        const int faster = key == '+' || key == '=', was = v->speed;
        if (faster && v->speed + 1 < N_SPEEDS)
            v->speed++;
        else if (!faster && v->speed > 0)
            v->speed--;
        /* say it: while paused nothing else on screen moves */
        char name[32];
        view_speed_name(v, name, sizeof name);
        if (v->speed == was)
            view_status(v, 0, "play speed %s, already the %s%s", name, faster ? "fastest" : "slowest",
                        v->playing ? "" : " (p plays)");
        else
            view_status(v, 0, "play speed now %s%s", name, v->playing ? "" : " (p plays)");
        break;
    }
    default:
        return KR_NONE;
    }
    return KR_HANDLED | KR_CHANGED;
}

/* c, m and t open the cache list, the model list and the prompt line. */
static unsigned overlay_key(View *v, int key)
{
    const char *why = NULL;
    v->playing = 0;
    if (key == 't')
        prompt_edit_open(&v->edit, v->sim);
    else if (chooser_open(&v->chooser, v, key == 'c' ? CHOOSE_CACHE : CHOOSE_MODEL, &why) < 0)
        view_status(v, 1, "%s", why);
    else if (v->chooser.left_out[0])
        view_status(v, 0, "%s", v->chooser.left_out);
    return KR_HANDLED | KR_CHANGED;
}

/* Why `key` does nothing on the screen shown, or NULL when it applies (and
 * for keys every screen takes: 1-3, ?, q). The footer lists only keys that
 * apply; a key that does not says this. */
static const char *why_not(const View *v, int key, char *buf, size_t cap)
{
    Session *ss[3];
    const size_t n = view_sessions(v, ss);
    const int replay = !v->sim && v->screen == SCR_SIM;
    const Config *c = n ? &session_model(ss[0])->cfg : NULL;
    /* nothing to step: compare without its sessions */
    const char *idle = n || replay ? NULL : v->sim ? "compare could not start (3 tries again)" : NO_COMPARE;
    if (!v->sim) {
        const char *what = key == 'c'   ? "the cache list is"
                           : key == 'm' ? "the model list is"
                           : key == 't' ? "the prompt line is"
                           : key == 's' ? "a batch's sequences are"
                                        : "layers and heads are";
        snprintf(buf, cap, "%s for a decoder stepped live; this is a recorded run of model %s (its options set it)",
                 what, replay_model(v));
    }
    const char *recorded = v->sim ? idle : buf;
    switch (key) {
    case ' ': case VK_RIGHT: case VK_LEFT: case 'r': case 'p': case '+': case '=': case '-': case '_':
        return idle;
    case VK_TAB: case VK_BTAB:
        return replay ? "a recorded run is one panel: Tab has nothing to move to" : idle;
    case '[': case ']': case 'h': case 'l': case '{': case '}': {
        const int layer = key == '[' || key == ']' || key == 'h' || key == 'l';
        if (!c)
            return recorded;
        if ((layer ? c->n_layers : c->n_heads) > 1)
            return NULL;
        snprintf(buf, cap, "model %s has one %s", c->name, layer ? "layer" : "head");
        return buf;
    }
    case 'c':
        return n ? NULL : recorded;
    case 'm':
        return v->sim ? NULL : buf;
    case 't':
        if (!v->sim)
            return buf;
        return session_tokenizer(v->sim) ? NULL : "this model reads token ids, not text: choose one with a "
                                                  "tokenizer (m, e.g. kjv-tiny)";
    case 's':
        if (!v->sim)
            return buf;
        if (session_batch(v->sim) < 2)
            return "one sequence runs: --batch N runs more, and s shows each one's cache map";
        return v->screen == SCR_SIM ? NULL : "s shows another sequence's cache map on the simulation (2)";
    default:
        return NULL;
    }
}

/* s: the simulation's map shows the next sequence of the batch. */
static unsigned sequence_key(View *v)
{
    const size_t batch = session_batch(v->sim);
    v->seq = (v->seq + 1) % batch;
    const char *what = v->seq == 0           ? "runs the prompt"
                       : v->seq + 1 == batch ? "forked from 0 after the prefill"
                                             : "the prompt with its last token changed";
    view_status(v, 0, "the cache map shows sequence %zu of %zu (%s); s shows the next", v->seq, batch, what);
    return KR_HANDLED | KR_CHANGED;
}

/* The keys every screen shares. */
static unsigned global_key(View *v, int key)
{
    const Screen *scr = screens[v->screen];
    char buf[256];
    const char *why = why_not(v, key, buf, sizeof buf);
    if (why) {
        view_status(v, 1, "%s", why);
        return KR_HANDLED | KR_CHANGED;
    }
    switch (key) {
    case 'q':
        return KR_HANDLED | KR_QUIT;
    case '?':
    case VK_F1:
        v->help = 1;
        return KR_HANDLED | KR_CHANGED;
    case '1':
    case '2':
    case '3':
        return switch_screen(v, (ScreenId)(key - '1'));
    case ' ':
    case VK_RIGHT:
        return apply(v, OP_STEP);
    case VK_LEFT:
        return apply(v, OP_BACK);
    case 'r':
        v->playing = 0;
        return apply(v, OP_RESET);
    case VK_TAB:
        v->focus[v->screen] = (v->focus[v->screen] + 1) % scr->n_panels;
        return KR_HANDLED | KR_CHANGED;
    case VK_BTAB:
        v->focus[v->screen] = (v->focus[v->screen] + scr->n_panels - 1) % scr->n_panels;
        return KR_HANDLED | KR_CHANGED;
    case 'c':
    case 'm':
    case 't':
        return overlay_key(v, key);
    case 's':
        return sequence_key(v);
    default: {
        unsigned r = play_key(v, key);
        return r != KR_NONE ? r : layer_head_key(v, key);
    }
    }
}

/* Switch the cache (of the session on screen, or compare's `side`) or the
 * model to `item`; 0, or -1 with the reason in the status. */
static int apply_choice(View *v, ChooseKind kind, int side, const char *item)
{
    Err e = { 0 };
    if (kind == CHOOSE_CACHE) {
        Session *target = v->screen == SCR_EXAMPLE ? v->ex : v->screen == SCR_SIM ? v->sim : v->cmp[side];
        if (!target || session_set_cache(target, item, &e) < 0) {
            view_status(v, 1, "cache '%s': %s", item, target ? e.msg : "no session");
            return -1;
        }
        if (v->screen == SCR_COMPARE)
            snprintf(v->cmp_spec[side], sizeof v->cmp_spec[0], "%s", item);
        view_status(v, 0, "cache now %s, replayed to pass %zu", item, session_steps(target));
        return 0;
    }
    /* a model: the simulation (and compare) switch to it, with a prompt made
     * for it as the command line's options make one */
    Config cfg;
    const Kernels *kern;
    int *prompt = NULL;
    size_t plen;
    if (!v->hooks.load_model || v->hooks.load_model(v->hooks.ctx, item, &cfg, &kern, &e) < 0 ||
        v->hooks.make_prompt(v->hooks.ctx, &cfg, &prompt, &plen, &e) < 0 ||
        session_set_model(v->sim, &cfg, kern, prompt, plen, &e) < 0) {
        free(prompt);
        view_status(v, 1, "%s", v->hooks.load_model ? e.msg : "models cannot be loaded here");
        return -1;
    }
    free(prompt);
    free_compare(v);
    snprintf(v->cmp_spec[0], sizeof v->cmp_spec[0], "%s", session_cache_spec(v->sim));
    if (v->screen == SCR_EXAMPLE)
        v->screen = SCR_SIM;
    if (v->screen == SCR_COMPARE)
        (void)ensure_compare(v);
    clamp_layer_head(v);
    view_status(v, 0, "model now %s, at pass %zu", item, session_steps(v->sim));
    return 0;
}

/* Run the simulation (and compare) on the typed prompt, from its first
 * pass; 0, or -1 with the reason in v->edit.error and the old prompt kept. */
static int apply_prompt(View *v)
{
    if (v->edit.len == 0) {
        snprintf(v->edit.error, sizeof v->edit.error, "an empty prompt: type some text (Esc keeps the old one)");
        return -1;
    }
    int *ids = NULL;
    size_t n;
    Err e = { 0 };
    const Model *m = session_model(v->sim);
    Config cfg = m->cfg;
    if (tokenizer_encode(session_tokenizer(v->sim), v->edit.text, v->edit.len, &ids, &n, &e) < 0 ||
        session_set_model(v->sim, &cfg, m->kern, ids, n, &e) < 0 || session_reset(v->sim, &e) < 0 ||
        session_step(v->sim, &e) < 0) {
        free(ids);
        snprintf(v->edit.error, sizeof v->edit.error, "%s", e.msg);
        return -1;
    }
    free(ids);
    free_compare(v);
    if (v->screen == SCR_EXAMPLE)
        v->screen = SCR_SIM;
    if (v->screen == SCR_COMPARE)
        (void)ensure_compare(v);
    view_status(v, 0, "prompt now %zu token%s; the first pass (the prefill) has run", n, fmt_s(n));
    return 0;
}

unsigned view_key(View *v, int key)
{
    if (key == VK_CTRL_C)
        return KR_HANDLED | KR_QUIT;
    if (key == VK_RESIZE)
        return KR_HANDLED | KR_CHANGED;
    if (key == VK_TICK)
        return view_tick(v);
    unsigned had_status = v->status[0] ? KR_CHANGED : 0;
    v->status[0] = '\0';
    if (v->w < VIEW_MIN_W || v->h < VIEW_MIN_H)
        return key == 'q' ? KR_HANDLED | KR_QUIT : had_status;
    if (v->edit.open) {
        int submit;
        unsigned r = prompt_edit_key(&v->edit, key, &submit);
        if (submit && apply_prompt(v) < 0)
            v->edit.open = 1; /* refused: the line stays, with the typed text and why */
        return r | had_status;
    }
    if (v->chooser.kind != CHOOSE_NONE) {
        ChooseKind chosen;
        unsigned r = chooser_key(&v->chooser, key, &chosen);
        if (chosen != CHOOSE_NONE)
            (void)apply_choice(v, chosen, v->chooser.side, v->chooser.items[v->chooser.sel]);
        return r | had_status;
    }
    if (v->help) {
        if (key == 'q')
            return KR_HANDLED | KR_QUIT;
        v->help = 0;
        return KR_HANDLED | KR_CHANGED;
    }
    unsigned r = screens[v->screen]->key ? screens[v->screen]->key(v, key) : KR_NONE;
    if (r == KR_NONE)
        r = global_key(v, key);
    if (r == KR_NONE)
        view_status(v, 0, "that key does nothing here; ? shows the keys");
    return r | had_status | KR_CHANGED;
}

/* --- frame ---------------------------------------------------------------- */

static void draw_title(const View *v, Frame *f)
{
    Rect row = { 0, 0, f->w, 1 };
    frame_fill(f, row, ' ', ROLE_TITLE);
    int x = frame_text(f, row, 1, 0, ROLE_TITLE, "kvscope");
    x += 2;
    for (int s = 0; s < SCR_COUNT; s++) {
        char tab[48];
        int cur = (int)v->screen == s;
        snprintf(tab, sizeof tab, "%c%d %s%c", cur ? '[' : ' ', s + 1, screens[s]->name, cur ? ']' : ' ');
        x = frame_text(f, row, x, 0, cur ? ROLE_TAB : ROLE_TITLE, tab) + 1;
    }
    Session *ss[3];
    char right[96], speed[32];
    size_t n = view_sessions(v, ss);
    int len = 0;
    if (v->playing && view_tick_ms(v) > 0)
        len = snprintf(right, sizeof right, "\u25b6 play %d/s", 1000 / view_tick_ms(v));
    else if (v->playing)
        len = snprintf(right, sizeof right, "\u25b6 play %s", view_speed_name(v, speed, sizeof speed));
    else
        len = snprintf(right, sizeof right, "\u2016 paused");
    if (n)
        snprintf(right + len, sizeof right - (size_t)len, "  %zu/%zu passes ", session_steps(ss[0]),
                 session_total_steps(ss[0]));
    else if (!v->sim && v->screen == SCR_SIM)
        snprintf(right + len, sizeof right - (size_t)len, "  %zu/%zu steps ", v->replay_step,
                 view_replay_steps(v));
    int rx = f->w - text_width(right);
    if (rx > x)
        frame_text(f, row, rx, 0, ROLE_TITLE, right);
}

static void draw_footer(const View *v, Frame *f)
{
    Rect row = { 0, f->h - 1, f->w, 1 };
    if (v->status[0]) { /* a long message takes the row above too */
        const int role = v->status_warn ? ROLE_WARN : ROLE_NORMAL;
        const int rows = frame_wrap(NULL, (Rect){ 1, 0, f->w - 2, 2 }, role, v->status);
        Rect at = { 0, f->h - rows, f->w, rows };
        frame_fill(f, at, ' ', ROLE_NORMAL);
        frame_wrap(f, rect_sub(at, 1, 0, f->w - 2, rows), role, v->status);
        return;
    }
    /* In the order shown; rank: which stay when the row is short (0 first);
     * key: one the hint stands for, to leave out a hint whose keys do not
     * apply here. ? help lists them all. */
    static const struct {
        const char *key, *what;
        int rank, code;
    } hints[] = {
        { "Spc/\u2192", "step", 0, ' ' }, { "\u2190", "back", 1, VK_LEFT }, { "p", "play", 4, 'p' },
        { "+/-", "speed", 12, '+' },      { "Tab", "panel", 5, VK_TAB },   { "s", "sequence", 6, 's' },
        { "[ ]", "layer", 9, '[' },       { "{ }", "head", 10, '{' },      { "c", "cache", 8, 'c' },
        { "m", "model", 11, 'm' },        { "t", "prompt", 13, 't' },      { "r", "reset", 14, 'r' },
        { "1-3", "screen", 7, '1' },      { "?", "help", 3, '?' },         { "q", "quit", 2, 'q' },
    };
    enum { N_HINTS = sizeof hints / sizeof hints[0], SPEED = 3 /* "+/-" */ };
    char why[256];
    int show[N_HINTS] = { 0 }, used = 1;
    for (int rank = 0; rank < N_HINTS; rank++)
        for (int i = 0; i < N_HINTS; i++) {
            if (hints[i].rank != rank || why_not(v, hints[i].code, why, sizeof why))
                continue;
            int need = text_width(hints[i].key) + 1 + text_width(hints[i].what) + 2;
            if (used + need <= f->w)
                show[i] = 1, used += need;
        }
    /* playing, the speed keys matter more: in place of the lowest-ranked */
    if (v->playing && !show[SPEED] && !why_not(v, '+', why, sizeof why)) {
        int drop = -1;
        for (int i = 0; i < N_HINTS; i++)
            if (show[i] && hints[i].rank > 4 && (drop < 0 || hints[i].rank > hints[drop].rank))
                drop = i;
        const int gain = drop < 0 ? 0 : text_width(hints[drop].key) + text_width(hints[drop].what);
        if (drop >= 0 && used - gain + text_width(hints[SPEED].key) + text_width(hints[SPEED].what) <= f->w)
            show[drop] = 0, show[SPEED] = 1;
    }
    int x = 1;
    for (int i = 0; i < N_HINTS; i++) {
        if (!show[i])
            continue;
        x = frame_text(f, row, x, 0, ROLE_KEY, hints[i].key) + 1;
        x = frame_text(f, row, x, 0, ROLE_NORMAL, hints[i].what) + 2;
    }
}

void view_draw(const View *v, Frame *f)
{
    frame_clear(f);
    if (f->w < VIEW_MIN_W || f->h < VIEW_MIN_H) {
        small_draw(f, v);
        return;
    }
    draw_title(v, f);
    Rect body = { 0, 1, f->w, f->h - 2 };
    screens[v->screen]->draw(f, body, v);
    draw_footer(v, f);
    if (v->help)
        help_draw(f, v);
    if (v->chooser.kind != CHOOSE_NONE)
        chooser_draw(f, v);
    if (v->edit.open)
        prompt_edit_draw(f, v);
}
