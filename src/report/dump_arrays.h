/* dump_arrays.h: the .npy files `kvscope dump` writes (the weights, the
 * cache after the run, and any array the run hands over), each recorded
 * with its dtype and shape for manifest.json; and the directory they go in. */
#ifndef KVSCOPE_REPORT_DUMP_ARRAYS_H
#define KVSCOPE_REPORT_DUMP_ARRAYS_H

#include <jansson.h>
#include <stddef.h>

#include "kv/cache.h"
#include "model/config.h"
#include "model/model.h"
#include "util/err.h"
#include "util/npy.h"

/* Where a dump goes and what it has written so far. */
typedef struct {
    const char *dir;
    json_t *files; /* [{name, dtype, shape, what}]; the caller owns it */
    size_t n_written;
} Dump;

/* Refuse a DIR that is a file, or a non-empty directory without force
 * (ERR_USAGE). A missing DIR is fine: dump_dir_make creates it later, once
 * the run is known good. Other stat/read failures are ERR_RUNTIME. */
int dump_dir_check(const char *dir, int force, Err *e);

/* mkdir -p: create dir and any missing parents. */
int dump_dir_make(const char *dir, Err *e);

/* Write data ([shape[0]]..[shape[ndim-1]] elements of type) to DIR/name and
 * append its entry, with the description `what`, to d->files. */
int dump_array(Dump *d, const char *name, NpyType type, const size_t *shape, size_t ndim, const void *data,
               const char *what, Err *e);

/* embed, every stored layer's weights (only layer0 with shared_layers),
 * final_norm and unembed, f32, matrices [out, in]. */
int dump_weights(Dump *d, const Model *m, Err *e);

/* The cache after the run, gathered through kv_block: per layer
 * cache.layerL.k.npy and .v.npy of [n_seqs][n_kv_heads][len][head_dim].
 * Every sequence must hold the same len rows at positions 0..len-1 in f32
 * (ERR_USAGE or ERR_RUNTIME otherwise); *len_out gets len. */
int dump_cache(Dump *d, const KvCache *cache, const Config *c, size_t n_seqs, size_t *len_out, Err *e);

#endif
