/* bench_blas.c: GSL's and OpenBLAS's sgemv as BenchMatvecFn. */
#include "kernels/bench_blas.h"

#include <dlfcn.h>
#include <gsl/gsl_cblas.h>
#include <stdio.h>
#include <string.h>

void bench_matvec_gsl(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols)
{
    (void)ctx;
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)rows, (int)cols, 1.0f, w, (int)cols, x, 1, 0.0f, y, 1);
}

int bench_openblas_open(BenchOpenblas *ob, char *why, size_t cap)
{
    memset(ob, 0, sizeof *ob);
    ob->handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!ob->handle) {
        const char *msg = dlerror();
        snprintf(why, cap, "%s", msg ? msg : "libopenblas.so.0 not found");
        return -1;
    }
    *(void **)&ob->sgemv = dlsym(ob->handle, "cblas_sgemv");
    if (!ob->sgemv) {
        snprintf(why, cap, "libopenblas.so.0 has no cblas_sgemv");
        bench_openblas_close(ob);
        return -1;
    }
    void (*set_threads)(int) = NULL;
    *(void **)&set_threads = dlsym(ob->handle, "openblas_set_num_threads");
    if (set_threads)
        set_threads(1); /* one core, as every other figure */
    /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "0.3.21", and the core it chose */
    char *(*get_config)(void) = NULL, *(*get_core)(void) = NULL;
    *(void **)&get_config = dlsym(ob->handle, "openblas_get_config");
    *(void **)&get_core = dlsym(ob->handle, "openblas_get_corename");
    char version[32] = "";
    if (get_config && get_config() && sscanf(get_config(), "OpenBLAS %31s", version) != 1)
        version[0] = '\0';
    snprintf(ob->config, sizeof ob->config, "%s%s%s%s", version, *version ? " " : "",
             get_core && get_core() ? get_core() : "", set_threads ? ", 1 thread" : "");
    return 0;
}

void bench_openblas_close(BenchOpenblas *ob)
{
    if (ob->handle)
        dlclose(ob->handle);
    memset(ob, 0, sizeof *ob);
}

void bench_matvec_openblas(const void *ctx, float *y, const float *w, const float *x, size_t rows, size_t cols)
{
    const BenchOpenblas *ob = ctx;
    /* CBLAS's enum values, the same in every CBLAS: RowMajor 101, NoTrans 111 */
    ob->sgemv(101, 111, (int)rows, (int)cols, 1.0f, w, (int)cols, x, 1, 0.0f, y, 1);
}

