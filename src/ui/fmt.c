#include "ui/fmt.h"

#include <inttypes.h>
#include <stdio.h>

const char *fmt_count(char *buf, size_t cap, uint64_t v, int width)
{
    int n = snprintf(buf, cap, "%" PRIu64, v);
    if (n <= width)
        return buf;
    static const char *const unit[] = { "", "k", "M", "G", "T", "P" };
    double x = (double)v;
    size_t u = 0;
    while (x >= 999.5 && u + 1 < sizeof unit / sizeof unit[0]) {
        x /= 1000.0;
        u++;
    }
    snprintf(buf, cap, x >= 99.95 ? "%.0f %s" : x >= 9.995 ? "%.1f %s" : "%.2f %s", x, unit[u]);
    return buf;
}

const char *fmt_bytes(char *buf, size_t cap, double bytes)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    size_t u = 0;
    while (bytes >= 1024.0 && u + 1 < sizeof unit / sizeof unit[0]) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(buf, cap, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

const char *fmt_ms(char *buf, size_t cap, double seconds, int hidden)
{
    if (hidden)
        snprintf(buf, cap, "-");
    else { /* 4 significant digits: at most 8 columns, the narrowest counters column */
        const double ms = seconds * 1e3;
        if (ms >= 9999.5)
            snprintf(buf, cap, "%.2f s", seconds);
        else
            snprintf(buf, cap, ms >= 999.95 ? "%.0f ms" : ms >= 99.995 ? "%.1f ms" : ms >= 9.9995 ? "%.2f ms"
                                                                                                : "%.3f ms", ms);
    }
    return buf;
}

const char *fmt_ratio(char *buf, size_t cap, double a, double b)
{
    if (b <= 0)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.2fx", a / b);
    return buf;
}

const char *fmt_s(uint64_t n)
{
    return n == 1 ? "" : "s";
}
