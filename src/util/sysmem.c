#include "util/sysmem.h"

#include <stdio.h>
#include <unistd.h>

size_t sysmem_physical_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0)
        return 0;
    return (size_t)pages * (size_t)page;
}

size_t sysmem_available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kib = 0;
    int found = 0;
    if (f) {
        char line[128];
        while (!found && fgets(line, sizeof line, f))
            found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
        fclose(f);
    }
    return found ? (size_t)kib << 10 : sysmem_physical_bytes();
}
