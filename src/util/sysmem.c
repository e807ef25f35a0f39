#include "util/sysmem.h"

#include <unistd.h>

size_t sysmem_physical_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0)
        return 0;
    return (size_t)pages * (size_t)page;
}
