/* roofs.h: this machine's two roofs (stats/roofline.h), from where they
 * are known, in this order:
 *
 *   1. KVSCOPE_ROOFS="READ_GB/s,GFLOP/s" (e.g. "20,150"): given, for tests
 *      and for a machine whose figures are known;
 *   2. the file `roofs` in the user's state folder (util/state_dir.h),
 *      written by `kvscope bench` (roofs_save) with the time it measured;
 *   3. a short probe (roofs_probe), when the caller allows it.
 *
 * The probe measures, on the calling thread: the read bandwidth as the
 * fastest of the bench's plain read loops over a buffer sized by the
 * machine rule (util/machine.h: twice the LLC, at most PROBE_READ_CEILING
 * and an eighth of the memory available), each read once, widest ISA first,
 * until its time is spent; and the compute roof as the kernels' matmul on a
 * block that stays in cache (PROBE_GEMM_*), the best of a few batches.
 * It takes about a tenth of a second. Nothing here prints. */
#ifndef KVSCOPE_SIM_ROOFS_H
#define KVSCOPE_SIM_ROOFS_H

#include "kernels/kernels.h"
#include "stats/roofline.h"
#include "util/err.h"

#define ROOFS_ENV "KVSCOPE_ROOFS"
#define ROOFS_FILE "roofs"
#define PROBE_READ_CEILING ((size_t)64 << 20)
#define PROBE_SECONDS 0.15 /* the probe's whole time, about */

/* Fill *r from KVSCOPE_ROOFS, else the kept file, else (probe nonzero) a
 * probe with kernels k; with none of them r->source is ROOFS_NONE. Fails
 * (ERR_USAGE) only when KVSCOPE_ROOFS is set and malformed; ERR_RUNTIME
 * when the probe cannot allocate its buffer. */
int roofs_get(Roofs *r, const Kernels *k, int probe, Err *e);

/* Measure the two roofs now (see above); r->source ROOFS_PROBE. */
int roofs_probe(Roofs *r, const Kernels *k, Err *e);

/* The compute roof alone: the kernels' matmul on a cached block, FLOP/s. */
double roofs_probe_compute(const Kernels *k, double seconds);

/* Keep r (a bench's measurement) in the state folder; the path written
 * into path (cap bytes). ERR_RUNTIME when there is no state folder or it
 * cannot be written. */
int roofs_save(const Roofs *r, char *path, size_t cap, Err *e);

/* Read the kept file at path into *r (source ROOFS_BENCH); 0, or -1 when
 * it is missing or malformed (r then ROOFS_NONE). */
int roofs_read_file(const char *path, Roofs *r);

/* One line naming r: "roofs: kvscope bench 2026-11-29 06:40 UTC (avx2):
 * DRAM read 12.3 GB/s, compute 45.6 GFLOP/s, ridge 3.71 FLOP/B", or
 * "roofs: none". Returns buf. */
const char *roofs_describe(const Roofs *r, char *buf, size_t cap);

/* The source and time alone: "kvscope bench, 2026-11-29 06:40 UTC" or
 * "probe at start, 06:40:12 UTC". Returns buf. */
const char *roofs_origin(const Roofs *r, char *buf, size_t cap);

#endif
