/* progress_line.h: the progress line every long command shows (plot, bench,
 * eval, train, lesson check and lint, export, serve, tokenize --learn).
 *
 * One line on stderr, drawn again in place (a carriage return, the text,
 * spaces over what the last drawing left), never wider than the terminal,
 * so it cannot wrap:
 *     LABEL[: UNIT DONE of TOTAL], ELAPSED[, about ETA left][; DETAIL]
 * (the detail last: a narrow terminal cuts it first). The time left is the
 * phase's elapsed time times what is still to do over what is done.
 *
 * A call only changes what the line says (a count shows it when it is not
 * on the screen); a thread of the line's own draws it ten times a second,
 * so the clock moves during a long step, a fast count costs no drawing,
 * and a phase shorter than a tenth of a second without a count never
 * shows. progress_line_end erases the line and stops that thread. When
 * stderr is not a terminal, or the user said --quiet, every call does
 * nothing.
 *
 * Anything meant to stay on the terminal (a row on stdout, a warning on
 * stderr) must not be written over the line: call progress_line_clear
 * first; the line stays off until the next count. Call from one
 * thread. */
#ifndef KVSCOPE_APP_PROGRESS_LINE_H
#define KVSCOPE_APP_PROGRESS_LINE_H

#include <pthread.h>
#include <stddef.h>

typedef struct {
    int on;                  /* stderr is a terminal and not --quiet */
    pthread_mutex_t lock;    /* guards what follows: the caller and the drawing thread share it */
    pthread_cond_t wake;     /* to stop the drawing thread at once */
    pthread_t drawer;
    int drawing, stop;       /* the drawing thread runs; it is asked to end */
    int active;              /* between a begin and its end */
    int held;                /* cleared: off the screen until the next count */
    char label[160], unit[24], detail[160];
    size_t done, total;      /* total 0: no count shown */
    double t0;               /* the phase's start (clock_seconds) */
    size_t shown;            /* columns the line covers on screen; 0: not on screen */
} ProgressLine;

/* --quiet in a command's --help. */
extern const char progress_line_help[];

/* Off for good when quiet or when stderr is not a terminal. */
void progress_line_init(ProgressLine *p, int quiet);

/* A new phase: its label, and the unit its count will name ("run",
 * "step"; NULL: no count). The clock starts again; the count and the
 * detail are emptied. */
void progress_line_begin(ProgressLine *p, const char *label, const char *unit);

/* done of total units. */
void progress_line_count(ProgressLine *p, size_t done, size_t total);

/* The detail: what part of the phase runs now (bench's section), or
 * figures that change with the count (train's loss); shown with the next
 * count, or by the drawing thread. */
void progress_line_detail(ProgressLine *p, const char *detail);

/* Take the line off the screen, the cursor back at its start. */
void progress_line_clear(ProgressLine *p);

/* Erase the line: the phase is over (a begin starts another). */
void progress_line_end(ProgressLine *p);

/* s as "0.4 s", "12 s", "3m05s" or "1h02m". */
void progress_line_seconds(char *buf, size_t cap, double s);

#endif
