/* ncurses' wide-character API (cchar_t, wget_wch) and wcwidth, also when
 * the build does not pass ncursesw's own flags (the sanitizer build) */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include "ui/tty.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/emit.h"
#include "ui/keys.h"
#include "util/clock.h"

/* The one global: the signal that asked the loop to stop (0 = none). */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* The loop running now (NULL outside tty_run), for tty_on_layer: a pass
 * of a large model takes seconds, and the screen must not freeze. */
#define BUSY_KEYS 64
typedef struct {
    double t0;   /* when the key or tick that started the work was taken */
    int shown;   /* the progress line is on screen */
    int quit;    /* q or Ctrl-C came during the work */
    /* other keys that came during the work, for the loop to take in order
     * afterwards (typing ahead is not lost; beyond BUSY_KEYS they are) */
    struct { int got; wint_t ch; } keys[BUSY_KEYS];
    size_t n_keys, next_key;
} Busy;
static Busy *busy;

/* How long work runs before the footer says so. */
#define BUSY_SHOW_S 0.2

int tty_on_layer(void *ctx, size_t layers_done, size_t n_layers)
{
    (void)ctx;
    if (!busy)
        return 0;
    if (stop_signal || busy->quit)
        return 1;
    /* q and Ctrl-C stop the pass; other keys wait their turn */
    timeout(0);
    wint_t ch;
    int got;
    while ((got = wget_wch(stdscr, &ch)) != ERR) {
        if (got == OK && (ch == 'q' || ch == 'Q' || ch == 3)) {
            busy->quit = 1;
            return 1;
        }
        if (busy->n_keys < BUSY_KEYS) {
            busy->keys[busy->n_keys].got = got;
            busy->keys[busy->n_keys++].ch = ch;
        }
    }
    double elapsed = clock_seconds() - busy->t0;
    if (elapsed < BUSY_SHOW_S || LINES < 1)
        return 0;
    char line[160];
    snprintf(line, sizeof line, " computing: layer %zu of %zu, %.1f s (q stops and quits)", layers_done, n_layers,
             elapsed);
    attrset(A_REVERSE);
    mvaddnstr(LINES - 1, 0, line, COLS);
    clrtoeol();
    attrset(A_NORMAL);
    refresh();
    busy->shown = 1;
    return 0;
}

/* An ncurses key (from wget_wch) as a view key; 0 for one the view ignores. */
static int translate(int got, wint_t ch)
{
    if (got == OK)
        return ch == '\r' ? VK_ENTER : ch == '\b' ? VK_BACKSPACE : (int)ch;
    switch (ch) {
    case KEY_LEFT: return VK_LEFT;
    case KEY_RIGHT: return VK_RIGHT;
    case KEY_UP: return VK_UP;
    case KEY_DOWN: return VK_DOWN;
    case KEY_BTAB: return VK_BTAB;
    case KEY_F(1): return VK_F1;
    case KEY_PPAGE: return VK_PGUP;
    case KEY_NPAGE: return VK_PGDN;
    case KEY_HOME: return VK_HOME;
    case KEY_END: return VK_END;
    case KEY_ENTER: return VK_ENTER;
    case KEY_BACKSPACE: return VK_BACKSPACE;
    case KEY_RESIZE: return VK_RESIZE;
    default: return 0;
    }
}

typedef struct {
    struct sigaction intr, term, hup;
} SavedSignals;

static void catch_signals(SavedSignals *saved)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &saved->intr);
    sigaction(SIGTERM, &sa, &saved->term);
    sigaction(SIGHUP, &sa, &saved->hup);
}

static void restore_signals(const SavedSignals *saved)
{
    sigaction(SIGINT, &saved->intr, NULL);
    sigaction(SIGTERM, &saved->term, NULL);
    sigaction(SIGHUP, &saved->hup, NULL);
}

/* ncurses on stdout in the modes the view needs: raw keys (Ctrl-C is a key,
 * so quitting is one clean path), no echo, keypad, no cursor. NULL when
 * the terminal cannot start. */
static SCREEN *start_terminal(void)
{
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr)
        return NULL;
    set_term(scr);
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    (void)curs_set(0);
    set_escdelay(25);
    return scr;
}

/* Keys, resizes and play ticks until q or a signal; a frame is built and
 * emitted only when something changed. */
static void event_loop(View *v, Frame *f, Emitter *em)
{
    double next_tick = 0;
    Busy work = { 0 };
    busy = &work;
    while (!stop_signal && !work.quit) {
        int ms = view_tick_ms(v), wait = 200; /* paused: wake now and then to see a signal's flag */
        if (ms >= 0) {
            double now = (clock_seconds() * 1e3);
            if (next_tick == 0)
                next_tick = now + ms;
            wait = next_tick > now ? (int)(next_tick - now) : 0;
        }
        wint_t ch = 0;
        int got;
        if (work.next_key < work.n_keys) { /* keys typed while a pass ran */
            got = work.keys[work.next_key].got;
            ch = work.keys[work.next_key++].ch;
        } else {
            work.n_keys = work.next_key = 0;
            timeout(wait);
            got = wget_wch(stdscr, &ch);
        }
        unsigned r = 0;
        work.t0 = clock_seconds();
        work.shown = 0;
        if (got == ERR) {
            if (ms >= 0 && (clock_seconds() * 1e3) >= next_tick) {
                r = view_tick(v);
                /* keep the rate, but never try to catch up a backlog */
                next_tick = next_tick + ms > (clock_seconds() * 1e3) ? next_tick + ms : (clock_seconds() * 1e3) + ms;
            }
        } else {
            int key = translate(got, ch);
            if (key == VK_RESIZE && frame_resize(f, COLS, LINES) == 0) {
                v->w = COLS;
                v->h = LINES;
            }
            if (key)
                r = view_key(v, key);
            if (!v->playing)
                next_tick = 0;
        }
        if ((r & KR_QUIT) || work.quit)
            break;
        if ((r & KR_CHANGED) || work.shown) {
            view_draw(v, f);
            emit_frame(em, f);
        }
    }
    busy = NULL;
}

int tty_run(View *v, Err *e)
{
    if (tty_check(e) < 0)
        return -1;
    /* wide characters need the user's locale; without UTF-8, ASCII glyphs */
    setlocale(LC_ALL, "");
    if (strcmp(nl_langinfo(CODESET), "UTF-8") != 0)
        v->ascii = 1;
    SavedSignals saved;
    stop_signal = 0;
    catch_signals(&saved); /* before newterm, so ncurses leaves them to us */
    SCREEN *scr = start_terminal();
    if (!scr) {
        restore_signals(&saved);
        return err_set(e, ERR_USAGE, "cannot start the terminal (TERM=%s)", getenv("TERM"));
    }
    Emitter em;
    emit_init(&em, v->color);
    Frame f;
    int rc = 0;
    if (frame_init(&f, COLS, LINES, v->ascii) < 0) {
        rc = err_set(e, ERR_RUNTIME, "out of memory for a %dx%d frame", COLS, LINES);
    } else {
        v->w = COLS;
        v->h = LINES;
        view_draw(v, &f);
        emit_frame(&em, &f);
        event_loop(v, &f, &em);
        if (stop_signal)
            rc = 128 + stop_signal;
        frame_free(&f);
    }
    endwin();
    delscreen(scr);
    restore_signals(&saved);
    return rc;
}

int tty_measure(View *v, int w, int h, int frames, Measure *out, Err *e)
{
    memset(out, 0, sizeof *out);
    out->w = w;
    out->h = h;
    FILE *sink = fopen("/dev/null", "w"), *src = fopen("/dev/null", "r");
    SCREEN *scr = sink && src ? newterm("xterm-256color", sink, src) : NULL;
    if (!scr) {
        if (sink)
            fclose(sink);
        if (src)
            fclose(src);
        return err_set(e, ERR_RUNTIME, "ncurses cannot start an xterm-256color screen on /dev/null");
    }
    set_term(scr);
    resizeterm(h, w);
    Emitter em;
    emit_init(&em, 1);
    Frame f;
    int rc = 0;
    if (frame_init(&f, w, h, v->ascii) < 0) {
        rc = err_set(e, ERR_RUNTIME, "out of memory for a %dx%d frame", w, h);
        goto done;
    }
    v->w = w;
    v->h = h;
    /* each screen as full as it gets: at the end of its run (at most 64 passes) */
    for (int s = 0; s < 3; s++) {
        (void)view_key(v, '1' + s);
        for (int i = 0; i < 64; i++)
            (void)view_key(v, ' ');
        double t0 = (clock_seconds() * 1e3);
        for (int i = 0; i < frames; i++)
            view_draw(v, &f);
        out->build_ms[s] = ((clock_seconds() * 1e3) - t0) / frames;
    }
    /* emission with every frame different from the last */
    double emit_total = 0;
    for (int i = 0; i < frames; i++) {
        (void)view_key(v, '1' + i % 3);
        view_draw(v, &f);
        double t0 = (clock_seconds() * 1e3);
        emit_frame(&em, &f);
        emit_total += (clock_seconds() * 1e3) - t0;
    }
    out->emit_ms = emit_total / frames;
    /* play mode on the simulation, as fast as it goes */
    (void)view_key(v, '2');
    double t0 = (clock_seconds() * 1e3), elapsed = 0;
    do {
        (void)view_key(v, 'r');
        v->playing = 1;
        while (v->playing) {
            unsigned r = view_tick(v);
            if (r & KR_CHANGED) {
                view_draw(v, &f);
                emit_frame(&em, &f);
            }
        }
        out->play_steps += v->sim ? session_steps(v->sim) : v->replay_step;
        elapsed = (clock_seconds() * 1e3) - t0;
    } while (elapsed < 1000);
    out->play_steps_s = (double)out->play_steps / (elapsed / 1e3);
    frame_free(&f);
done:
    endwin();
    delscreen(scr);
    fclose(sink);
    fclose(src);
    return rc;
}
