/* fmt.h: numbers as the panels print them, into a caller's buffer. */
#ifndef KVSCOPE_UI_FMT_H
#define KVSCOPE_UI_FMT_H

#include <stddef.h>
#include <stdint.h>

/* Exact digits when they fit in `width` columns, else 3 significant
 * digits with k, M, G, T ("1.53 G"): an engine count is shown exactly
 * whenever there is room. */
const char *fmt_count(char *buf, size_t cap, uint64_t v, int width);
/* Bytes with a binary unit: "512 B", "5.50 KiB", "1.25 GiB". */
const char *fmt_bytes(char *buf, size_t cap, double bytes);
/* Milliseconds to 4 significant digits ("0.915 ms", "32.75 ms", "107.2 ms"),
 * seconds from 10 s, or "-" when times are hidden: at most 8 columns below
 * 1000 s. */
const char *fmt_ms(char *buf, size_t cap, double seconds, int hidden);
/* "a/b" as "8.7x" (or "-" when b is 0). */
const char *fmt_ratio(char *buf, size_t cap, double a, double b);
/* The plural ending of a count: "" for 1, else "s" ("1 layer", "2 layers"). */
const char *fmt_s(uint64_t n);

#endif
