/* progress_line.c: the progress line of a long command (progress_line.h). */
#include "app/progress_line.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

#define REDRAW_NS 100000000L /* ten drawings a second */
#define DEFAULT_COLUMNS 80   /* when the terminal does not say */

const char progress_line_help[] =
    "  --quiet             no progress line on stderr (one is shown only when stderr is a terminal)\n";

void progress_line_init(ProgressLine *p, int quiet)
{
    memset(p, 0, sizeof *p);
    p->on = !quiet && isatty(STDERR_FILENO);
    if (p->on) {
        pthread_condattr_t monotonic; /* a change of the wall clock must not stall the drawing */
        pthread_condattr_init(&monotonic);
        pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, &monotonic);
        pthread_condattr_destroy(&monotonic);
    }
}

void progress_line_seconds(char *buf, size_t cap, double s)
{
    if (s < 9.95)
        snprintf(buf, cap, "%.1f s", s);
    else if (s < 59.5)
        snprintf(buf, cap, "%.0f s", s);
    else if (s < 3600)
        snprintf(buf, cap, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, cap, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

static size_t columns(void)
{
    struct winsize ws;
    return ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col : DEFAULT_COLUMNS;
}

/* write(2), not stdio: a child forked meanwhile (lesson checks) must not
 * inherit a stream lock this thread holds. */
static void put(const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = write(STDERR_FILENO, buf, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        buf += k;
        n -= (size_t)k;
    }
}

/* Append to text [cap] at *n, keeping *n < cap. */
static void append(char *text, size_t cap, size_t *n, const char *fmt, const char *a, size_t x, size_t y)
{
    int k = snprintf(text + *n, cap - *n, fmt, a, x, y);
    if (k > 0)
        *n = *n + (size_t)k < cap ? *n + (size_t)k : cap - 1;
}

/* The line as it is now, in one write (the lock held): spaces over the
 * last drawing when it was longer, then the text, cut to the terminal's
 * width less one (a full last column wraps on some terminals). */
static void draw(ProgressLine *p)
{
    char text[512], el[16], eta[16];
    size_t n = 0;
    const double elapsed = clock_seconds() - p->t0;
    append(text, sizeof text, &n, "%s", p->label, 0, 0);
    if (p->unit[0] && p->total)
        append(text, sizeof text, &n, ": %s %zu of %zu", p->unit, p->done, p->total);
    progress_line_seconds(el, sizeof el, elapsed);
    append(text, sizeof text, &n, ", %s", el, 0, 0);
    if (p->unit[0] && p->total && p->done && p->done <= p->total) {
        progress_line_seconds(eta, sizeof eta, elapsed * (double)(p->total - p->done) / (double)p->done);
        append(text, sizeof text, &n, ", about %s left", eta, 0, 0);
    }
    if (p->detail[0])
        append(text, sizeof text, &n, "; %s", p->detail, 0, 0);
    const size_t width = columns() - 1;
    n = n < width ? n : width;
    char frame[2 * sizeof text + 2]; /* "\r", spaces over the old line, "\r", the text */
    size_t f = 0;
    frame[f++] = '\r';
    if (p->shown > n) {
        memset(frame + f, ' ', p->shown);
        f += p->shown;
        frame[f++] = '\r';
    }
    memcpy(frame + f, text, n);
    put(frame, f + n);
    p->shown = n;
}

/* Spaces over the line (the lock held). */
static void erase(ProgressLine *p)
{
    char frame[sizeof p->label + sizeof p->unit + sizeof p->detail + 256];
    if (!p->shown || p->shown + 2 > sizeof frame)
        return;
    frame[0] = '\r';
    memset(frame + 1, ' ', p->shown);
    frame[p->shown + 1] = '\r';
    put(frame, p->shown + 2);
    p->shown = 0;
}

/* The drawing thread: the line again every tenth of a second, unless it
 * was cleared, until asked to stop. Signals stay with the command's own
 * thread (train's Ctrl-C). */
static void *drawer(void *arg)
{
    ProgressLine *p = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += REDRAW_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->wake, &p->lock, &until);
        if (!p->stop && p->active && !p->held)
            draw(p);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void progress_line_begin(ProgressLine *p, const char *label, const char *unit)
{
    if (!p->on)
        return;
    pthread_mutex_lock(&p->lock);
    snprintf(p->label, sizeof p->label, "%s", label);
    snprintf(p->unit, sizeof p->unit, "%s", unit ? unit : "");
    p->detail[0] = '\0';
    p->done = p->total = 0;
    p->t0 = clock_seconds();
    p->active = 1;
    p->held = 0;
    pthread_mutex_unlock(&p->lock);
    if (!p->drawing) /* without it the line is still right, only drawn less often */
        p->drawing = pthread_create(&p->drawer, NULL, drawer, p) == 0;
}

void progress_line_count(ProgressLine *p, size_t done, size_t total)
{
    if (!p->on)
        return;
    pthread_mutex_lock(&p->lock);
    p->done = done;
    p->total = total;
    p->held = 0;
    if (p->active && !p->shown) /* else the drawing thread shows it */
        draw(p);
    pthread_mutex_unlock(&p->lock);
}

void progress_line_detail(ProgressLine *p, const char *detail)
{
    if (!p->on)
        return;
    pthread_mutex_lock(&p->lock);
    snprintf(p->detail, sizeof p->detail, "%s", detail);
    pthread_mutex_unlock(&p->lock);
}

void progress_line_clear(ProgressLine *p)
{
    if (!p->on)
        return;
    pthread_mutex_lock(&p->lock);
    erase(p);
    p->held = 1;
    pthread_mutex_unlock(&p->lock);
}

void progress_line_end(ProgressLine *p)
{
    if (!p->on)
        return;
    pthread_mutex_lock(&p->lock);
    erase(p);
    p->active = 0;
    p->stop = 1;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    if (p->drawing)
        pthread_join(p->drawer, NULL);
    p->drawing = p->stop = 0;
}
