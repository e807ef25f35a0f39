/* machine.h: what this machine has, as far as sizing a buffer goes, and
 * the one rule every buffer sized from it follows.
 *
 * A measurement that must miss the caches (`kvscope bench`, the bandwidth
 * figure) sizes its data as a multiple of the last-level cache (LLC). The
 * LLC a system reports can be far from what this process gets: a virtual
 * machine of 2 cores may report its host socket's whole L3 (508 MiB has
 * been seen), and 8x that is more memory than the machine has. So:
 *   - the LLC is read from KVSCOPE_LLC when set ("32M", "512MiB",
 *     "33554432"), else from sysfs, else from sysconf;
 *   - a reported LLC larger than the CPUs this process may use could have
 *     (MACHINE_LLC_PER_CPU each, MACHINE_LLC_FLOOR at least) is called
 *     implausible and the cap is used instead;
 *   - a buffer sized from it never exceeds a fixed ceiling of the caller's
 *     (which an explicit flag may raise) nor 1/MACHINE_MEM_SHARE of the
 *     memory available now (MemAvailable).
 * Nothing here prints: the caller says what machine_llc_note says. */
#ifndef KVSCOPE_UTIL_MACHINE_H
#define KVSCOPE_UTIL_MACHINE_H

#include <stddef.h>

#include "util/err.h"

#define MACHINE_MIB ((size_t)1 << 20)
#define MACHINE_LLC_ENV "KVSCOPE_LLC"
#define MACHINE_ASSUMED_LLC (32 * MACHINE_MIB)  /* when nothing says */
#define MACHINE_LLC_PER_CPU (16 * MACHINE_MIB)  /* more L3 a core than any CPU sold gives one */
#define MACHINE_LLC_FLOOR (32 * MACHINE_MIB)    /* a plausible LLC for any count of CPUs */
#define MACHINE_MEM_SHARE 8                     /* one buffer: at most an eighth of what is available */

typedef struct {
    size_t llc_reported;    /* bytes the source reports; 0 = no source says */
    const char *llc_source; /* MACHINE_LLC_ENV, "sysfs", "sysconf" or "unknown" */
    size_t llc;             /* bytes kvscope sizes by: the reported LLC, capped when implausible,
                               MACHINE_ASSUMED_LLC when unknown; never 0 */
    int llc_capped;         /* 1: llc_reported exceeded the plausible cap, llc is the cap */
    size_t cpus;            /* CPUs this process may run on (its affinity), at least 1 */
    size_t mem_available;   /* bytes available now (MemAvailable, else physical); 0 = unknown */
} Machine;

/* Fill *m from the environment and the system. Fails (ERR_USAGE) only when
 * KVSCOPE_LLC is set and is not a size; *m is then still filled as if it
 * were unset. */
int machine_read(Machine *m, Err *e);

/* The largest LLC plausible for `cpus` CPUs. */
size_t machine_llc_cap(size_t cpus);

/* The rule: `want` bytes, but at most `ceiling` and at most
 * 1/MACHINE_MEM_SHARE of m->mem_available (when known); at least one MiB. */
size_t machine_buffer_bytes(const Machine *m, size_t want, size_t ceiling);

/* One line for stderr when m->llc_capped ("the last-level cache reported
 * (...) is more than N CPUs have; sizing by ..."), else "". Returns buf. */
const char *machine_llc_note(const Machine *m, char *buf, size_t cap);

/* "300 MiB (sysfs), sized as 32 MiB" or "32 MiB (sysfs)" or
 * "unknown, assumed 32 MiB": the LLC for a report's header. Returns buf. */
const char *machine_llc_text(const Machine *m, char *buf, size_t cap);

#endif
