/* machine.c: the LLC, the CPUs and the memory a buffer is sized from. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "util/machine.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/human.h"
#include "util/parse.h"
#include "util/sysmem.h"

/* sysfs's "32768K", "32M", "33554432" -> bytes; 0 when unreadable. */
static size_t parse_sysfs_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return 0;
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    return (size_t)v;
}

/* The highest cache level sysfs lists for cpu0 (level 2 or more); 0 when none. */
static size_t sysfs_llc(void)
{
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], text[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int level = 0;
        if (fscanf(f, "%d", &level) != 1)
            level = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (!f)
            continue;
        size_t size = fgets(text, sizeof text, f) ? parse_sysfs_size(text) : 0;
        fclose(f);
        if (size && level >= best_level) {
            best = size;
            best_level = level;
        }
    }
    return best_level >= 2 ? best : 0;
}

/* What the system reports, sysfs first: under some hypervisors sysconf
 * reports the whole host's cache. */
static size_t system_llc(const char **source)
{
    size_t llc = sysfs_llc();
    if (llc) {
        *source = "sysfs";
        return llc;
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) {
        *source = "sysconf";
        return (size_t)l3;
    }
#endif
    *source = "unknown";
    return 0;
}

static size_t usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (size_t)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
}

size_t machine_llc_cap(size_t cpus)
{
    size_t cap = cpus * MACHINE_LLC_PER_CPU;
    return cpus && cap / cpus == MACHINE_LLC_PER_CPU && cap > MACHINE_LLC_FLOOR ? cap : MACHINE_LLC_FLOOR;
}

int machine_read(Machine *m, Err *e)
{
    *m = (Machine){ .cpus = usable_cpus(), .mem_available = sysmem_available_bytes() };
    int rc = 0;
    const char *env = getenv(MACHINE_LLC_ENV);
    if (env && *env) {
        rc = parse_bytes(env, MACHINE_LLC_ENV, &m->llc_reported, e);
        m->llc_source = MACHINE_LLC_ENV;
    }
    if (!env || !*env || rc < 0)
        m->llc_reported = system_llc(&m->llc_source);
    const size_t cap = machine_llc_cap(m->cpus);
    m->llc_capped = m->llc_reported > cap;
    m->llc = m->llc_capped ? cap : m->llc_reported ? m->llc_reported : MACHINE_ASSUMED_LLC;
    return rc;
}

size_t machine_buffer_bytes(const Machine *m, size_t want, size_t ceiling)
{
    size_t bytes = want < ceiling ? want : ceiling;
    const size_t share = m->mem_available / MACHINE_MEM_SHARE;
    if (m->mem_available && bytes > share)
        bytes = share;
    return bytes > MACHINE_MIB ? bytes : MACHINE_MIB;
}

const char *machine_llc_note(const Machine *m, char *buf, size_t cap)
{
    char rep[32], used[32];
    if (!m->llc_capped) {
        if (cap)
            buf[0] = '\0';
        return buf;
    }
    const int from_env = m->llc_source && strcmp(m->llc_source, MACHINE_LLC_ENV) == 0;
    snprintf(buf, cap, "the last-level cache read from %s, %s, is more than the %zu CPU%s this process may use could "
             "have; sizing by %s%s", m->llc_source, human_bytes(rep, sizeof rep, (double)m->llc_reported), m->cpus,
             m->cpus == 1 ? "" : "s", human_bytes(used, sizeof used, (double)m->llc),
             from_env ? "" : " (a virtual machine may be shown its host's whole cache; " MACHINE_LLC_ENV
                             " sets the figure)");
    return buf;
}

const char *machine_llc_text(const Machine *m, char *buf, size_t cap)
{
    char rep[32], used[32];
    if (!m->llc_reported)
        snprintf(buf, cap, "unknown (the system does not say), assumed %s",
                 human_bytes(used, sizeof used, (double)m->llc));
    else if (m->llc_capped)
        snprintf(buf, cap, "%s (%s; implausible for %zu CPU%s), sized as %s",
                 human_bytes(rep, sizeof rep, (double)m->llc_reported), m->llc_source, m->cpus,
                 m->cpus == 1 ? "" : "s", human_bytes(used, sizeof used, (double)m->llc));
    else
        snprintf(buf, cap, "%s (%s)", human_bytes(rep, sizeof rep, (double)m->llc_reported), m->llc_source);
    return buf;
}
