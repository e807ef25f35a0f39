/* panel_counters.c: what the newest pass cost, what the run has cost, and
 * what the same run would have cost without a cache; under them the
 * bandwidth each achieved, its FLOPs per byte, and its share of the
 * machine's two roofs (stats/roofline.h), with where the roofs come from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "sim/roofs.h"
#include "ui/fmt.h"
#include "ui/panels.h"

#define LABEL_W 17
#define RATIO_W 8
/* Wall times below this are of the order of the timer's noise and of what
 * else the machine did: a cached run of a tiny model may read slower than
 * the uncached one. The counts above them are exact. */
#define TIMER_NOISE_S 1e-3

typedef enum { V_COUNT, V_NONE, V_TIME } Kind;

typedef struct {
    const char *label;
    int optional;        /* dropped first when rows run short */
    Kind kind;
    int has_step, has_unc;
    uint64_t step, run, unc;
    double step_s, run_s, unc_s; /* V_TIME */
    int ratio;
} Row;

/* Slots a policy has evicted, over every layer (sequence 0). */
static uint64_t evicted_slots(const Session *s)
{
    const KvCache *c = session_cache(s);
    size_t P = session_positions(s);
    KvCell *cells = calloc(P, sizeof *cells);
    uint64_t n = 0;
    if (!cells)
        return 0;
    for (size_t l = 0; l < c->geo.n_layers; l++) {
        kv_cells(c, l, 0, cells, P);
        for (size_t j = 0; j < P; j++)
            n += cells[j].state == CELL_EVICTED;
    }
    free(cells);
    return n;
}

static void value(Frame *f, Rect r, int x_end, int y, int role, const Row *row, int which, int width, int hide)
{
    char buf[48];
    if (row->kind == V_TIME) {
        double s = which == 0 ? row->step_s : which == 1 ? row->run_s : row->unc_s;
        fmt_ms(buf, sizeof buf, s, hide);
    } else if (row->kind == V_NONE) {
        snprintf(buf, sizeof buf, "-");
    } else {
        fmt_count(buf, sizeof buf, which == 0 ? row->step : which == 1 ? row->run : row->unc, width);
    }
    frame_print_right(f, r, x_end, y, role, "%s", buf);
}

/* The rows under the counts, from the roofline of each column. */
enum { R_GBS, R_INTENSITY, R_BW, R_PEAK, R_COUNT };
static const char *const roof_labels[R_COUNT] = { "GB/s", "FLOP/B", "% DRAM read", "% compute peak" };

/* One cell of roof row `row` for point p ("-" when the figure needs a time
 * the frame hides, or roofs that are not known). */
static const char *roof_cell(char *buf, size_t cap, int row, const RoofPoint *p, int known, int hide)
{
    const int timed = !hide && p->seconds > 0;
    switch (row) {
    case R_GBS:
        if (!timed || !p->bytes)
            return "-";
        snprintf(buf, cap, "%.3g", p->bps / 1e9);
        return buf;
    case R_INTENSITY:
        if (!p->bytes)
            return "-";
        snprintf(buf, cap, "%.3g", p->intensity);
        return buf;
    default: {
        if (!timed || !known || !p->bytes)
            return "-";
        if (row == R_BW && p->from_cache)
            return "cache"; /* above the DRAM roof: the note under says so */
        const double share = 100 * (row == R_BW ? p->bw_share : p->peak_share);
        snprintf(buf, cap, share < 10 ? "%.1f%%" : "%.0f%%", share);
        return buf;
    }
    }
}

void panel_counters(Frame *f, Rect r, const View *v, const Session *s, int focused)
{
    const size_t n = session_steps(s);
    const StepRecord *last = n ? session_record(s, n - 1) : NULL;
    Counters run, unc, step = { 0 };
    int formula;
    session_totals(s, &run, &unc, &formula);
    if (last)
        step = last->ctr;
    const int measured = session_uncached_measured(s);
    char title[128], batch[32] = "";
    if (session_batch(s) > 1) /* every sequence's work, cached and uncached */
        snprintf(batch, sizeof batch, ", %zu sequences", session_batch(s));
    snprintf(title, sizeof title, "counters%s; uncached: %s", batch,
             measured ? "measured" : "formula (rows, projections)");
    frame_rule(f, r, 0, title, focused);

    const Row rows[] = {
        { "tokens projected", 0, V_COUNT, 1, 1, step.tokens_projected, run.tokens_projected, unc.tokens_projected,
          0, 0, 0, 1 },
        { "FLOPs", 0, V_COUNT, 1, measured, counters_total_flops(&step),
          counters_total_flops(&run), counters_total_flops(&unc), 0, 0, 0, measured },
        { "  projections", 0, V_COUNT, 1, 1, counters_proj_flops(&step), counters_proj_flops(&run),
          counters_proj_flops(&unc), 0, 0, 0, 1 },
        { "  attention", 0, V_COUNT, 1, measured, counters_attn_flops(&step), counters_attn_flops(&run),
          counters_attn_flops(&unc), 0, 0, 0, measured },
        { "  FFN", 1, V_COUNT, 1, measured, step.flops_ffn, run.flops_ffn, unc.flops_ffn, 0, 0, 0, measured },
        { "weights read B", 0, V_COUNT, 1, measured, step.weight_bytes_read, run.weight_bytes_read,
          unc.weight_bytes_read, 0, 0, 0, 0 },
        { "K/V read B", 0, V_COUNT, 1, measured, step.kv_bytes_read, run.kv_bytes_read, unc.kv_bytes_read, 0, 0, 0,
          0 },
        { "K/V written B", 0, V_COUNT, 1, 0, step.kv_bytes_written, run.kv_bytes_written, 0, 0, 0, 0, 0 },
        { "cache used B", 0, V_COUNT, 0, 0, 0, run.cache_bytes_used, 0, 0, 0, 0, 0 },
        { "cache reserved B", 0, V_COUNT, 0, 0, 0, run.cache_bytes_reserved, 0, 0, 0, 0, 0 },
        { "allocations", 1, V_COUNT, 1, 0, step.allocations, run.allocations, 0, 0, 0, 0, 0 },
        { "copied B", 1, V_COUNT, 1, 0, step.bytes_copied, run.bytes_copied, 0, 0, 0, 0, 0 },
        { "evicted slots", 1, V_COUNT, 0, 0, 0, evicted_slots(s), 0, 0, 0, 0, 0 },
        { "time", 0, V_TIME, 1, measured, 0, 0, 0, step.seconds, run.seconds, unc.seconds, 0 },
    };
    const int n_rows = (int)(sizeof rows / sizeof rows[0]);
    const Row *t = &rows[n_rows - 1];
    const int noisy = !v->hide_times && n &&
                      (t->step_s < TIMER_NOISE_S || t->run_s < TIMER_NOISE_S || (measured && t->unc_s < TIMER_NOISE_S));
    /* the roofline of each column: this pass, the run, the uncached run */
    RoofPoint pt[3];
    roofline_point(&pt[0], &step, &v->roofs);
    roofline_point(&pt[1], &run, &v->roofs);
    roofline_point(&pt[2], &unc, &v->roofs);
    const int known = roofline_known(&v->roofs);
    int above = 0; /* a column above the DRAM roof, and its factor */
    double factor = 0;
    for (int i = 0; i < 3; i++)
        if (n && !v->hide_times && (i < 2 || measured) && pt[i].from_cache) {
            above = 1;
            factor = pt[i].bw_share > factor ? pt[i].bw_share : factor;
        }
    /* rows that do not fit go in this order: the roofs' line, the optional
     * counts, then the two shares */
    int drop = n_rows + R_COUNT + 1 + above + noisy - (r.h - 2);
    const int show_roofs = drop <= 0;
    drop -= !show_roofs;
    int n_optional = 0;
    for (int i = 0; i < n_rows; i++)
        n_optional += rows[i].optional;
    const int show_shares = drop <= n_optional;
    if (!show_shares)
        drop -= 2;

    int ratio_w = r.w >= LABEL_W + 3 * 9 + RATIO_W ? RATIO_W : 0;
    int val_w = (r.w - LABEL_W - ratio_w) / 3;
    if (val_w > 14)
        val_w = 14;
    int x1 = LABEL_W + val_w, x2 = x1 + val_w, x3 = x2 + val_w, x4 = x3 + ratio_w;
    frame_print_right(f, r, x1, 1, ROLE_HEAD, "this pass");
    frame_print_right(f, r, x2, 1, ROLE_HEAD, "run");
    frame_print_right(f, r, x3, 1, ROLE_HEAD, "uncached");
    if (ratio_w)
        frame_print_right(f, r, x4, 1, ROLE_HEAD, "ratio");
    int y = 2;
    for (int i = 0; i < n_rows && y < r.h; i++) {
        if (rows[i].optional && drop > 0) {
            drop--;
            continue;
        }
        const Row *row = &rows[i];
        frame_text(f, r, 0, y, ROLE_NORMAL, row->label);
        if (row->has_step)
            value(f, r, x1, y, ROLE_NORMAL, row, 0, val_w - 1, v->hide_times);
        value(f, r, x2, y, ROLE_NORMAL, row, 1, val_w - 1, v->hide_times);
        if (row->has_unc)
            value(f, r, x3, y, ROLE_UNCACHED, row, 2, val_w - 1, v->hide_times);
        else
            frame_print_right(f, r, x3, y, ROLE_DIM, "-");
        if (ratio_w && row->ratio && row->has_unc) {
            char buf[24];
            double a = row->kind == V_TIME ? row->unc_s : (double)row->unc;
            double b = row->kind == V_TIME ? row->run_s : (double)row->run;
            frame_print_right(f, r, x4, y, ROLE_NORMAL, "%s", fmt_ratio(buf, sizeof buf, a, b));
        }
        y++;
    }
    for (int i = 0; i < (show_shares ? R_COUNT : R_BW) && y < r.h; i++, y++) {
        char buf[32];
        char label[LABEL_W + 8];
        if (known && i == R_BW) /* the roof in the label: "% of 12.3 GB/s" */
            snprintf(label, sizeof label, "%% of %.3g GB/s", v->roofs.read_bps / 1e9);
        else if (known && i == R_PEAK)
            snprintf(label, sizeof label, "%% of %.3g GFLOP/s", v->roofs.flops_ps / 1e9);
        else
            snprintf(label, sizeof label, "%s", roof_labels[i]);
        frame_text(f, r, 0, y, ROLE_NORMAL, label);
        if (n)
            frame_print_right(f, r, x1, y, ROLE_NORMAL, "%s", roof_cell(buf, sizeof buf, i, &pt[0], known, v->hide_times));
        frame_print_right(f, r, x2, y, ROLE_NORMAL, "%s", roof_cell(buf, sizeof buf, i, &pt[1], known, v->hide_times));
        if (measured)
            frame_print_right(f, r, x3, y, ROLE_UNCACHED, "%s",
                              roof_cell(buf, sizeof buf, i, &pt[2], known, v->hide_times));
        else
            frame_print_right(f, r, x3, y, ROLE_DIM, "-");
    }
    if (above && y < r.h) {
        char note[160];
        snprintf(note, sizeof note, "from cache: %.1fx the DRAM roof (the weights fit in cache)", factor);
        if (text_width(note) > r.w)
            snprintf(note, sizeof note, "from cache: %.1fx the DRAM roof", factor);
        frame_text(f, r, 0, y++, ROLE_WARN, note);
    }
    if (show_roofs && y < r.h) {
        char origin[96], line[192];
        if (known) {
            snprintf(line, sizeof line, "roofs: %s: %.3g GB/s, %.3g GFLOP/s", roofs_origin(&v->roofs, origin, sizeof origin),
                     v->roofs.read_bps / 1e9, v->roofs.flops_ps / 1e9);
            char *utc = strstr(line, " UTC");
            if (text_width(line) > r.w && utc) /* narrow: the time without its zone */
                memmove(utc, utc + 4, strlen(utc + 4) + 1);
        } else
            snprintf(line, sizeof line, "roofs: none known (kvscope bench measures them)");
        frame_text(f, r, 0, y++, ROLE_DIM, line);
    }
    static const char *const notes[] = { "times under 1 ms are timer-noise scale; the counts are exact",
                                         "times under 1 ms are timer-noise scale", "< 1 ms: timer noise" };
    for (size_t i = 0; noisy && y < r.h && i < sizeof notes / sizeof notes[0]; i++)
        if (text_width(notes[i]) <= r.w || i + 1 == sizeof notes / sizeof notes[0]) {
            frame_text(f, r, 0, y, ROLE_DIM, notes[i]);
            break;
        }
}
