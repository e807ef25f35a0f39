/* sysmem.h: how much memory this machine has. */
#ifndef KVSCOPE_UTIL_SYSMEM_H
#define KVSCOPE_UTIL_SYSMEM_H

#include <stddef.h>

/* Physical memory in bytes; 0 when the system will not say. */
size_t sysmem_physical_bytes(void);

/* Memory available to start new work now, in bytes: /proc/meminfo's
 * MemAvailable (what can be had without swapping), else the physical
 * memory; 0 when neither is known. */
size_t sysmem_available_bytes(void);

#endif
