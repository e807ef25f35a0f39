/* plot_progress.c: a figure's runs counted from the pool's threads, told
 * to the caller from its own (plot.h). */
#include "plot/plot.h"

static void tell(PlotRuns *r, size_t done)
{
    if (r->ctx->progress && pthread_equal(pthread_self(), r->owner))
        r->ctx->progress(r->ctx->progress_user, r->unit, done, r->total);
}

void plot_runs_begin(PlotRuns *r, const PlotCtx *ctx, const char *unit, size_t total)
{
    r->ctx = ctx;
    r->unit = unit;
    r->total = total;
    atomic_init(&r->done, 0);
    r->owner = pthread_self();
    tell(r, 0);
}

void plot_runs_done(PlotRuns *r)
{
    tell(r, atomic_fetch_add(&r->done, 1) + 1);
}
