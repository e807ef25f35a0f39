/* panel_roofline.c: every pass of the run on this machine's roofline, in
 * characters: log-log axes, FLOPs per byte across and FLOP/s up; the DRAM
 * roof rising (/) to the ridge (+), the compute roof flat after it (-).
 * A pass left of the ridge is memory-bound (decode), right of it
 * compute-bound (prefill, or decode in a wide batch).
 *
 *   c  a cached pass      u  its uncached twin      C U  the newest pass
 *
 * With times hidden (headless frames) a pass cannot be placed by its speed:
 * each is drawn on its roof, at its intensity, and the legend says so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/roofs.h"
#include "ui/fmt.h"
#include "ui/panels.h"

#define AXIS_W 5   /* the y labels: "100G" and a column for the axis */
#define MIN_DECADES 2
#define MAX_Y_DECADES 5
#define LEGEND_H 3 /* the marks, the newest pass in words, a note */

/* A pass's point: x and y in log10 (FLOP/B, FLOP/s). */
typedef struct {
    double lx, ly;
    int uncached, newest, above;
} Mark;

/* "100G", "1G", "10M": a power of ten of FLOP/s in four columns. */
static const char *decade_label(char *buf, size_t cap, int d)
{
    static const char units[] = { ' ', 'k', 'M', 'G', 'T', 'P' };
    if (d < 0 || d >= 18) {
        snprintf(buf, cap, "1e%d", d);
        return buf;
    }
    static const char *const lead[] = { "1", "10", "100" };
    snprintf(buf, cap, "%s%c", lead[d % 3], units[d / 3]);
    return buf;
}

/* "0.01", "0.1", "1", "10", "1k", "1e6". */
static const char *intensity_label(char *buf, size_t cap, int d)
{
    if (d < 0)
        snprintf(buf, cap, "%.*f", -d, pow(10, d));
    else if (d < 3)
        snprintf(buf, cap, "%.0f", pow(10, d));
    else if (d < 6)
        snprintf(buf, cap, "%sk", d == 3 ? "1" : d == 4 ? "10" : "100");
    else
        snprintf(buf, cap, "1e%d", d);
    return buf;
}

/* Where a pass sits: its measured FLOP/s, or on its roof when times are hidden. */
static int place(Mark *m, const Counters *c, const Roofs *roofs, int hide, int uncached, int newest)
{
    RoofPoint p;
    roofline_point(&p, c, roofs);
    if (!p.bytes || !p.flops)
        return 0;
    const double y = hide ? roofline_attainable(roofs, p.intensity) : p.flops_ps;
    if (!(y > 0))
        return 0;
    *m = (Mark){ log10(p.intensity), log10(y), uncached, newest, !hide && p.from_cache };
    return 1;
}

void panel_roofline(Frame *f, Rect r, const View *v, const Session *s, int focused)
{
    const Roofs *roofs = &v->roofs;
    char title[160], origin[96];
    if (roofline_known(roofs)) { /* the roofs' source first, the axes' units where they fit */
        roofs_origin(roofs, origin, sizeof origin);
        snprintf(title, sizeof title, "roofline (FLOP/s by FLOP/B), roofs: %s", origin);
        if (text_width(title) + 4 > r.w)
            snprintf(title, sizeof title, "roofline, roofs: %s", origin);
        char *utc = strstr(title, " UTC");
        if (text_width(title) + 4 > r.w && utc) /* narrow: the time without its zone */
            memmove(utc, utc + 4, strlen(utc + 4) + 1);
        if (text_width(title) + 4 > r.w) /* narrower: "roofline: kvscope bench, 2026-11-29" */
            snprintf(title, sizeof title, "roofline: %s", origin);
        char *last = strrchr(title, ' ');
        if (text_width(title) + 4 > r.w && last && roofs->source == ROOFS_BENCH)
            *last = '\0';
    } else {
        snprintf(title, sizeof title, "roofline (FLOP/s by FLOP/B)");
    }
    frame_rule(f, r, 0, title, focused);
    if (!roofline_known(roofs)) {
        frame_wrap(f, rect_sub(r, 0, 1, r.w, r.h - 1), ROLE_DIM,
                   "no roofs known: `kvscope bench` measures and keeps them, or the view probes at start");
        return;
    }
    const int plot_h = r.h - 2 - LEGEND_H, plot_w = r.w - AXIS_W;
    if (plot_h < 3 || plot_w < 12)
        return;
    const size_t n = session_steps(s);
    const double ridge = roofline_ridge(roofs);

    /* the passes, and the axes that hold them and the ridge */
    double xmin = log10(ridge), xmax = xmin, ymax = log10(roofs->flops_ps), ymin = ymax;
    size_t n_marks = 0, cap = 2 * n;
    Mark *marks = cap ? malloc(cap * sizeof *marks) : NULL;
    for (size_t i = 0; marks && i < n; i++) {
        const StepRecord *rec = session_record(s, i);
        n_marks += place(&marks[n_marks], &rec->ctr, roofs, v->hide_times, 0, i + 1 == n);
        if (!rec->unc_formula && rec->token >= 0)
            n_marks += place(&marks[n_marks], &rec->unc, roofs, v->hide_times, 1, i + 1 == n);
    }
    for (size_t i = 0; i < n_marks; i++) {
        xmin = fmin(xmin, marks[i].lx);
        xmax = fmax(xmax, marks[i].lx);
        ymin = fmin(ymin, marks[i].ly);
        ymax = fmax(ymax, marks[i].ly);
    }
    int x0 = (int)floor(xmin), x1 = (int)ceil(xmax + 1e-9);
    while (x1 - x0 < MIN_DECADES)
        x1 - x0 == MIN_DECADES - 1 && xmin - x0 < x1 - xmax ? x0-- : x1++;
    int y1 = (int)ceil(ymax - 1e-9), y0 = (int)floor(ymin);
    if (y1 - y0 < MIN_DECADES)
        y0 = y1 - MIN_DECADES;
    if (y1 - y0 > MAX_Y_DECADES)
        y0 = y1 - MAX_Y_DECADES; /* slower passes sit on the bottom row */
    const double sx = plot_w / (double)(x1 - x0), sy = plot_h / (double)(y1 - y0);
#define COL(lx) ((int)floor(((lx) - x0) * sx))
#define ROW(ly) (plot_h - 1 - (int)floor(((ly) - y0) * sy))
#define CLAMP_ROW(row) ((row) < 0 ? 0 : (row) >= plot_h ? plot_h - 1 : (row)) /* the top decade's own row */
    const Rect plot = rect_sub(r, AXIS_W, 1, plot_w, plot_h);

    /* axes: a label at each decade of FLOP/s, of FLOP/B under the plot */
    char buf[32];
    for (int d = y0; d <= y1; d++) {
        int row = d == y1 ? 0 : ROW(d + 1e-9);
        if (row >= 0 && row < plot_h)
            frame_print_right(f, r, AXIS_W - 1, 1 + row, ROLE_DIM, "%s", decade_label(buf, sizeof buf, d));
    }
    for (int y = 0; y < plot_h; y++)
        frame_put_glyph(f, r, AXIS_W - 1, 1 + y, G_VLINE, ROLE_DIM);
    int free_x = 0; /* the first column of the label row not yet written */
    for (int d = x0; d <= x1; d++) {
        const char *lab = intensity_label(buf, sizeof buf, d);
        const int w = text_width(lab), col = d == x1 ? plot_w - w : COL(d);
        if (AXIS_W + col < free_x)
            continue;
        frame_text(f, r, AXIS_W + col, 1 + plot_h, ROLE_DIM, lab);
        free_x = AXIS_W + col + w + 1;
    }
    /* the roofs: at each column's middle, the most FLOP/s its intensity allows */
    const int ridge_col = COL(log10(ridge));
    for (int c = 0; c < plot_w; c++) {
        const double lx = x0 + (c + 0.5) / sx;
        int row = ROW(log10(roofline_attainable(roofs, pow(10, lx))));
        if (row >= plot_h)
            continue; /* below the plot: not drawn on its floor */
        row = CLAMP_ROW(row);
        if (c == ridge_col)
            frame_put(f, plot, c, row, '+', ROLE_HEAD);
        else
            frame_put(f, plot, c, row, c < ridge_col ? '/' : frame_glyph(f, G_HLINE), ROLE_DIM);
    }

    /* the passes, oldest first so the newest is drawn on top */
    const Mark *newest = NULL;
    int above = 0;
    for (int pass = 0; pass < 4; pass++) /* older uncached, older cached, newest uncached, newest cached */
        for (size_t i = 0; i < n_marks; i++) {
            const Mark *m = &marks[i];
            if (m->newest != pass / 2 || m->uncached != !(pass % 2))
                continue;
            int col = COL(m->lx);
            col = col < 0 ? 0 : col >= plot_w ? plot_w - 1 : col;
            /* times hidden: on the roof as drawn in its column */
            int row = v->hide_times ? ROW(log10(roofline_attainable(roofs, pow(10, x0 + (col + 0.5) / sx))))
                                    : ROW(m->ly);
            row = CLAMP_ROW(row);
            const char ch = m->uncached ? (m->newest ? 'U' : 'u') : (m->newest ? 'C' : 'c');
            frame_put(f, plot, col, row, (uint32_t)ch, m->newest ? ROLE_NEW : m->uncached ? ROLE_UNCACHED : ROLE_SPARK);
            above |= m->above;
            if (m->newest && !m->uncached) {
                newest = m;
                if (m->above) { /* beside it, where there is room */
                    const char *lab = " from cache";
                    const int w = text_width(lab);
                    frame_text(f, plot, col + 1 + w <= plot_w ? col + 1 : col - w - 1, row, ROLE_WARN,
                               col + 1 + w <= plot_w ? lab : "from cache ");
                }
            }
        }

    /* the legend: the marks, the newest pass in words, then the roofs or a note */
    char line[256];
    const int y_legend = r.h - LEGEND_H;
    snprintf(line, sizeof line, "c cached, u uncached, C U the newest; + ridge %.3g FLOP/B", ridge);
    if (text_width(line) > r.w)
        snprintf(line, sizeof line, "c cached, u uncached, C U newest; + ridge %.3g", ridge);
    if (text_width(line) > r.w)
        snprintf(line, sizeof line, "c cached u uncached, C U newest; + ridge %.3g", ridge);
    if (text_width(line) > r.w)
        snprintf(line, sizeof line, "c cached u uncached C U newest + ridge %.3g", ridge);
    frame_text(f, r, 0, y_legend, ROLE_DIM, line);
    if (newest) {
        const StepRecord *rec = session_record(s, n - 1);
        RoofPoint p;
        roofline_point(&p, &rec->ctr, roofs);
        const int left = p.intensity < ridge;
        snprintf(line, sizeof line, "newest: %s, %.3g FLOP/B: %s-bound", rec->phase == PHASE_PREFILL ? "prefill" : "decode",
                 p.intensity, left ? "memory" : "compute");
        frame_text(f, r, 0, y_legend + 1, left ? ROLE_NORMAL : ROLE_GOOD, line);
    } else {
        frame_text(f, r, 0, y_legend + 1, ROLE_DIM, "no pass yet: Space runs the prefill");
    }
    if (v->hide_times)
        snprintf(line, sizeof line, "times hidden: each pass drawn on its roof");
    else if (above)
        snprintf(line, sizeof line, "above the / roof: from cache, not memory");
    else
        snprintf(line, sizeof line, "/ %.3g GB/s, %s %.3g GFLOP/s", roofs->read_bps / 1e9, f->ascii ? "-" : "\u2500",
                 roofs->flops_ps / 1e9);
    frame_text(f, r, 0, y_legend + 2, above && !v->hide_times ? ROLE_WARN : ROLE_DIM, line);
    free(marks);
#undef COL
#undef ROW
#undef CLAMP_ROW
}
