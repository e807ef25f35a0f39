/* pool.h: a few worker threads, made once per process, that run the
 * iterations of a loop side by side.
 *
 * Work is split by whole iterations (each writes only what is its own: a
 * sequence, a cache, a row), never inside a reduction, so a result is the
 * same bytes for every thread count. The pool is the one piece of process
 * state below app/ (DESIGN.md 3.0): its size is set by the app, from
 * --threads, before any work. */
#ifndef KVSCOPE_UTIL_POOL_H
#define KVSCOPE_UTIL_POOL_H

#include <stddef.h>

#include "util/err.h"

#define POOL_MAX_THREADS 64

/* One iteration: fn(ctx, i). */
typedef void (*PoolTaskFn)(void *ctx, size_t i);

/* Use n threads from now on, the caller's included (1: the caller alone; 0:
 * as many as the CPUs this process may use). Call from the main thread
 * while no pool_run is under way. ERR_USAGE past POOL_MAX_THREADS;
 * ERR_RUNTIME when a thread cannot be started (the pool then keeps the
 * threads it has). */
int pool_set_threads(size_t n, Err *e);

/* The threads pool_run uses (1 until pool_set_threads says more). */
size_t pool_threads(void);

/* fn(ctx, i) for every i in [0, n), on up to pool_threads() threads, each
 * i exactly once; returns when all are done. Called again from inside an
 * iteration (or while another thread's run is under way), it runs its
 * loop on the calling thread alone. */
void pool_run(size_t n, PoolTaskFn fn, void *ctx);

/* 1 on a thread running an iteration of pool_run (there a pool_run of its
 * own would run alone): work that would split a sum across the pool
 * (split-K attention) keeps it whole instead, so its result does not
 * depend on whether the outer loop ran on one thread or several. */
int pool_in_job(void);

#endif
