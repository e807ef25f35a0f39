/* clock.h: one monotonic clock for every timing kvscope prints. */
#ifndef KVSCOPE_UTIL_CLOCK_H
#define KVSCOPE_UTIL_CLOCK_H

/* Seconds on CLOCK_MONOTONIC: only differences mean anything. */
double clock_seconds(void);

#endif
