/* panel_spark.c: FLOPs per pass, with and without the cache, on one scale:
 * the cached run's prefill spike, then flat decode steps, against the
 * uncached run's ramp. */
#include <stdio.h>

#include "ui/fmt.h"
#include "ui/panels.h"

#define LABEL_W 9

static uint64_t cost(const StepRecord *r, int uncached)
{
    const Counters *c = uncached ? &r->unc : &r->ctr;
    /* the formula knows projections only: compare like with like */
    return r->unc_formula ? counters_proj_flops(c) : counters_total_flops(c);
}

void panel_spark(Frame *f, Rect r, const View *v, const Session *s, int focused)
{
    (void)v;
    const size_t n = session_steps(s);
    const int formula = n && session_record(s, 0)->unc_formula;
    frame_rule(f, r, 0, formula ? "projection FLOPs per pass (one scale)" : "FLOPs per pass (one scale)", focused);
    const int cols = r.w - LABEL_W - 10;
    if (cols < 1 || r.h < 3)
        return;
    frame_text(f, r, 0, 1, ROLE_SPARK, "cached");
    frame_text(f, r, 0, 2, ROLE_UNCACHED, "uncached");
    size_t first = n > (size_t)cols ? n - (size_t)cols : 0;
    uint64_t top = 0;
    for (size_t i = first; i < n; i++)
        for (int u = 0; u < 2; u++) {
            uint64_t c = cost(session_record(s, i), u);
            top = c > top ? c : top;
        }
    for (size_t i = first; i < n; i++)
        for (int u = 0; u < 2; u++) {
            const StepRecord *rec = session_record(s, i);
            if (u && rec->token < 0)
                continue; /* a prefill chunk has no uncached twin */
            uint64_t c = cost(rec, u);
            int level = top ? (int)((c * 7 + top - 1) / top) : 0; /* ceil: any work shows */
            if (level > 7)
                level = 7;
            frame_put_glyph(f, r, LABEL_W + (int)(i - first), 1 + u, (Glyph)(G_SPARK0 + level),
                            u ? ROLE_UNCACHED : ROLE_SPARK);
        }
    char buf[32];
    frame_print(f, r, LABEL_W + cols + 1, 1, ROLE_DIM, "max");
    frame_print(f, r, LABEL_W + cols + 1, 2, ROLE_DIM, "%s", fmt_count(buf, sizeof buf, top, 5));
}
