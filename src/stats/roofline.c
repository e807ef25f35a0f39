/* roofline.c: a pass's bandwidth and intensity against two roofs (roofline.h). */
#include "stats/roofline.h"

#include <math.h>

uint64_t roofline_bytes(const Counters *c)
{
    return c->weight_bytes_read + c->kv_bytes_read + c->kv_bytes_written + c->view_bytes;
}

int roofline_known(const Roofs *r)
{
    return r && r->source != ROOFS_NONE && isfinite(r->read_bps) && isfinite(r->flops_ps) && r->read_bps > 0 &&
           r->flops_ps > 0;
}

void roofline_point(RoofPoint *p, const Counters *c, const Roofs *r)
{
    *p = (RoofPoint){ .flops = counters_total_flops(c), .bytes = roofline_bytes(c), .seconds = c->seconds };
    if (p->bytes)
        p->intensity = (double)p->flops / (double)p->bytes;
    if (!(p->seconds > 0))
        return;
    p->bps = (double)p->bytes / p->seconds;
    p->flops_ps = (double)p->flops / p->seconds;
    if (!roofline_known(r))
        return;
    p->bw_share = p->bps / r->read_bps;
    p->peak_share = p->flops_ps / r->flops_ps;
    p->from_cache = p->bw_share > ROOF_MARGIN;
}

double roofline_ridge(const Roofs *r)
{
    return roofline_known(r) ? r->flops_ps / r->read_bps : 0;
}

double roofline_attainable(const Roofs *r, double intensity)
{
    if (!roofline_known(r))
        return 0;
    const double mem = r->read_bps * intensity;
    return mem < r->flops_ps ? mem : r->flops_ps;
}

const char *roofline_source_name(RoofSource s)
{
    switch (s) {
    case ROOFS_GIVEN:
        return "KVSCOPE_ROOFS";
    case ROOFS_BENCH:
        return "kvscope bench";
    case ROOFS_PROBE:
        return "probe at start";
    default:
        return "none";
    }
}
