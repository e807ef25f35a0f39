/* isa_random.h: what the same-bits tests of kernels/ share: a seeded
 * generator (an LCG: the same numbers on every machine, set rng_state to
 * seed it) and a comparison of floats by their bits, so -0 differs from +0
 * and a NaN equals its own bits. */
#ifndef KVSCOPE_TESTS_ISA_RANDOM_H
#define KVSCOPE_TESTS_ISA_RANDOM_H

#include <stdint.h>
#include <string.h>

static uint64_t rng_state;

static inline uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

/* Uniform in [lo, hi). */
static inline float rnd_in(float lo, float hi)
{
    return lo + (hi - lo) * (float)(rnd() >> 8) * 0x1p-24f;
}

static inline int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

#endif
