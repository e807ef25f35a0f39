/* human.h: numbers as people read them in kvscope's output. */
#ifndef KVSCOPE_UTIL_HUMAN_H
#define KVSCOPE_UTIL_HUMAN_H

#include <stddef.h>

/* A numeric macro's value as a string literal, for text that must say what
 * the engine uses (STR_OF(ATTEND_TILE) -> "1024"). */
#define STR_OF_(x) #x
#define STR_OF(x) STR_OF_(x)

/* A byte count in binary units ("1.50 MiB", "512 B") into buf; returns buf. */
const char *human_bytes(char *buf, size_t cap, double bytes);

#endif
