/* roofline.h: where a pass sits against this machine's two roofs.
 *
 * A pass moves bytes (weights read, K/V read and written, a materialized
 * view written and read back) and does FLOPs in some wall time. Its
 * arithmetic intensity is FLOPs per byte moved; its achieved bandwidth is
 * bytes over time. The machine has two roofs: the bandwidth it reads memory
 * at (DRAM, data far larger than the last-level cache) and the FLOP rate
 * its kernels reach on data in cache. Below the ridge intensity (peak over
 * bandwidth) a pass can go no faster than memory feeds it: memory-bound;
 * above it, compute-bound.
 *
 * A pass can beat the DRAM roof: the tiny models' weights fit in cache, so
 * they are read from it, not from memory. RoofPoint.from_cache says so, and
 * callers print those words beside the share, never a bare share over 100%.
 *
 * Plain data and arithmetic, nothing measured here: sim/roofs.h measures
 * and keeps the roofs. */
#ifndef KVSCOPE_STATS_ROOFLINE_H
#define KVSCOPE_STATS_ROOFLINE_H

#include <stdint.h>

#include "stats/counters.h"

/* A figure more than this factor above a roof is called above it (the
 * bench's margin: a roof is itself a measurement). */
#define ROOF_MARGIN 1.05

typedef enum {
    ROOFS_NONE = 0, /* unknown: shares are not computed */
    ROOFS_GIVEN,    /* KVSCOPE_ROOFS */
    ROOFS_BENCH,    /* the last `kvscope bench`, kept in the state folder */
    ROOFS_PROBE,    /* a short probe when the command started */
} RoofSource;

typedef struct {
    double read_bps;  /* bytes per second read from memory (the DRAM roof) */
    double flops_ps;  /* FLOPs per second of the kernels' matmul on data in cache (the compute roof) */
    RoofSource source;
    int64_t when;     /* Unix seconds of the measurement; 0 unknown */
    char isa[16];     /* the kernels the compute roof was measured with ("" unknown) */
} Roofs;

typedef struct {
    uint64_t flops, bytes; /* counted: every FLOP; bytes read and written */
    double seconds;        /* the pass's wall time */
    double intensity;      /* flops / bytes (FLOP/B); 0 when no bytes moved */
    double bps;            /* bytes / seconds; 0 without a time */
    double flops_ps;       /* flops / seconds; 0 without a time */
    double bw_share;       /* bps over the DRAM roof; 0 without roofs or time */
    double peak_share;     /* flops_ps over the compute roof; 0 without roofs or time */
    int from_cache;        /* bps above the DRAM roof (ROOF_MARGIN): part of the bytes came from cache */
} RoofPoint;

/* Bytes a pass moved: weights read, K/V read and written, a view's bytes. */
uint64_t roofline_bytes(const Counters *c);

/* The point of counters c against roofs r (r NULL or ROOFS_NONE: no shares). */
void roofline_point(RoofPoint *p, const Counters *c, const Roofs *r);

/* The ridge: the intensity (FLOP/B) where the two roofs meet; 0 without roofs. */
double roofline_ridge(const Roofs *r);

/* The most FLOP/s a pass of this intensity can reach: min(peak, bw x I). */
double roofline_attainable(const Roofs *r, double intensity);

/* 1 when r holds two positive, finite roofs. */
int roofline_known(const Roofs *r);

/* "KVSCOPE_ROOFS", "kvscope bench", "probe at start" or "none". */
const char *roofline_source_name(RoofSource s);

#endif
