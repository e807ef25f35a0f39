#include "util/human.h"

#include <stdio.h>

const char *human_bytes(char *buf, size_t cap, double bytes)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    size_t u = 0;
    while (bytes >= 1024.0 && u + 1 < sizeof unit / sizeof unit[0]) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(buf, cap, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}
