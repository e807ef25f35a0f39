/* roof_probe.c: the two roofs measured in about a tenth of a second
 * (roofs.h): the bench's read loops over a buffer past the LLC, and the
 * kernels' matmul on a block in cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/bench.h"
#include "sim/roofs.h"
#include "util/clock.h"
#include "util/machine.h"

/* The compute block: y[N][OUT] = x[N][IN] . W[OUT][IN]^T, W 128 KiB: it
 * stays in L2, so the matmul is limited by arithmetic, not memory. */
#define PROBE_GEMM_N 16
#define PROBE_GEMM_IN 256
#define PROBE_GEMM_OUT 128
#define PROBE_BATCHES 5

double roofs_probe_compute(const Kernels *k, double seconds)
{
    const size_t nx = PROBE_GEMM_N * PROBE_GEMM_IN, nw = PROBE_GEMM_OUT * PROBE_GEMM_IN;
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w),
          *y = malloc(PROBE_GEMM_N * PROBE_GEMM_OUT * sizeof *y);
    double best = 0;
    if (!x || !w || !y)
        goto done;
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)((int)(i % 7) - 3) * 0.125f;
    for (size_t i = 0; i < nw; i++)
        w[i] = (float)((int)(i % 5) - 2) * 0.25f;
    const double flops = 2.0 * PROBE_GEMM_N * PROBE_GEMM_IN * PROBE_GEMM_OUT;
    uint64_t ignored = 0;
    k->matmul(y, x, w, PROBE_GEMM_N, PROBE_GEMM_IN, PROBE_GEMM_OUT, &ignored, NULL); /* warm: W into cache */
    /* batches of calls long enough for the clock; the fastest batch is the roof */
    size_t calls = 1;
    for (double t = 0; t < 2e-3 && calls < ((size_t)1 << 24); calls *= 2) {
        const double t0 = clock_seconds();
        for (size_t c = 0; c < calls; c++)
            k->matmul(y, x, w, PROBE_GEMM_N, PROBE_GEMM_IN, PROBE_GEMM_OUT, &ignored, NULL);
        t = clock_seconds() - t0;
        if (t > 0)
            best = fmax(best, flops * (double)calls / t);
    }
    const double end = clock_seconds() + seconds;
    for (int b = 0; b < PROBE_BATCHES && clock_seconds() < end; b++) {
        const double t0 = clock_seconds();
        for (size_t c = 0; c < calls; c++)
            k->matmul(y, x, w, PROBE_GEMM_N, PROBE_GEMM_IN, PROBE_GEMM_OUT, &ignored, NULL);
        const double t = clock_seconds() - t0;
        if (t > 0)
            best = fmax(best, flops * (double)calls / t);
    }
done:
    free(x);
    free(w);
    free(y);
    return best;
}

int roofs_probe(Roofs *r, const Kernels *k, Err *e)
{
    memset(r, 0, sizeof *r);
    Machine m;
    if (machine_read(&m, e) < 0)
        return -1;
    const double t0 = clock_seconds(), read_end = t0 + PROBE_SECONDS * 0.6;
    BenchRead b;
    if (bench_read_init(&b, machine_buffer_bytes(&m, 2 * m.llc, PROBE_READ_CEILING), e) < 0)
        return -1;
    BenchLoop loops[BENCH_MAX_LOOPS];
    const size_t n = bench_read_loops(k, loops);
    double best = 0;
    /* the widest ISA's loops come last and read fastest: take them first */
    for (size_t i = n; i-- > 0;) {
        BenchResult res;
        bench_read(k, &loops[i], &b, &res);
        if (res.seconds > 0 && res.max_rel_diff <= BENCH_TOLERANCE)
            best = fmax(best, (double)res.bytes / res.seconds);
        if (n - i >= 2 && clock_seconds() > read_end)
            break;
    }
    bench_read_free(&b);
    const double left = PROBE_SECONDS - (clock_seconds() - t0);
    r->read_bps = best;
    r->flops_ps = roofs_probe_compute(k, left > 0.02 ? left : 0.02);
    r->source = ROOFS_PROBE;
    r->when = (int64_t)time(NULL);
    snprintf(r->isa, sizeof r->isa, "%s", k->isa);
    if (!roofline_known(r))
        return err_set(e, ERR_RUNTIME, "the roofline probe measured nothing (read %g B/s, compute %g FLOP/s)",
                       r->read_bps, r->flops_ps);
    return 0;
}
