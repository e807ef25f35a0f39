/* pool.c: the worker threads behind pool_run (pool.h).
 *
 * One job at a time: the caller publishes it under the lock and bumps the
 * generation; every thread, the caller too, takes iterations from a shared
 * counter until none is left; the last to finish one wakes the caller. A
 * worker counts itself active while it takes, and the caller waits for no
 * active worker before it returns or publishes again, so a worker late to
 * one job can never take a number of the next. */
#include "util/pool.h"

#include <pthread.h>
#include <stdatomic.h>

#include "util/machine.h"

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t work;        /* a new generation is published */
    pthread_cond_t done;        /* the job's last iteration finished */
    size_t n_threads;           /* pool_set_threads' count, the caller included */
    size_t n_workers;           /* threads started (n_threads - 1 at most) */
    size_t active;              /* workers inside take_iterations (under the lock) */
    unsigned long generation;   /* bumped per job */
    PoolTaskFn fn;
    void *ctx;
    size_t n;
    atomic_size_t next;         /* the next iteration to take */
    atomic_size_t finished;     /* iterations done */
    atomic_flag busy;           /* a job is under way: nested or concurrent runs go serial */
} Pool;

static Pool pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .n_threads = 1,
    .busy = ATOMIC_FLAG_INIT,
};

/* How many iterations this thread is inside (pool_in_job). */
static _Thread_local size_t depth;

static void run_one(PoolTaskFn fn, void *ctx, size_t i)
{
    depth++;
    fn(ctx, i);
    depth--;
}

int pool_in_job(void)
{
    return depth > 0;
}

/* Take and run iterations of the current job until none is left. */
static void take_iterations(void)
{
    for (;;) {
        size_t i = atomic_fetch_add(&pool.next, 1);
        if (i >= pool.n)
            return;
        run_one(pool.fn, pool.ctx, i);
        if (atomic_fetch_add(&pool.finished, 1) + 1 == pool.n) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
}

static void *worker(void *arg)
{
    (void)arg;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool.lock);
        while (pool.generation == seen)
            pthread_cond_wait(&pool.work, &pool.lock);
        seen = pool.generation;
        pool.active++;
        pthread_mutex_unlock(&pool.lock);
        take_iterations();
        pthread_mutex_lock(&pool.lock);
        if (--pool.active == 0)
            pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.lock);
    }
    return NULL;
}

int pool_set_threads(size_t n, Err *e)
{
    if (n == 0) {
        Machine m;
        machine_read(&m, NULL);
        n = m.cpus;
    }
    if (n > POOL_MAX_THREADS)
        return err_set(e, ERR_USAGE, "--threads: at most %d, got %zu", POOL_MAX_THREADS, n);
    while (pool.n_workers + 1 < n) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0)
            return err_set(e, ERR_RUNTIME, "cannot start thread %zu of %zu", pool.n_workers + 2, n);
        pthread_detach(t);
        pool.n_workers++;
    }
    pool.n_threads = n;
    return 0;
}

size_t pool_threads(void)
{
    return pool.n_threads;
}

void pool_run(size_t n, PoolTaskFn fn, void *ctx)
{
    if (pool.n_threads < 2 || n < 2 || atomic_flag_test_and_set(&pool.busy)) {
        for (size_t i = 0; i < n; i++)
            run_one(fn, ctx, i);
        return;
    }
    pthread_mutex_lock(&pool.lock);
    while (pool.active > 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    atomic_store(&pool.next, 0);
    atomic_store(&pool.finished, 0);
    pool.generation++;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.lock);

    take_iterations();
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.finished) < n || pool.active > 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    atomic_flag_clear(&pool.busy);
}
