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
    json_t *files;   /* [{name, dtype, shape, what}]; the caller owns it */
    json_t *storage; /* dump_cache's [{layer, k, v}] segments; the caller owns it (NULL before) */
    size_t n_written;
    char tmp[4096];    /* the folder being written, beside DIR ("" when none) */
    char parent[4096]; /* DIR's parent, and how much of it dump_dir_begin made (0: none) */
    size_t made_len;
    int temp_mark;     /* tempfiles_mark() + 1 when dump_dir_begin ran: the folders it registered */
} Dump;

/* Refuse a DIR that is a file, or a non-empty directory without force
 * (ERR_USAGE). A missing DIR is fine: dump_dir_begin and dump_dir_commit
 * make it later, once the run is known good. Other stat/read failures are
 * ERR_RUNTIME. */
int dump_dir_check(const char *dir, int force, Err *e);

/* Make the parents of out (mkdir -p) and a new folder beside out to write
 * into (d->dir points at it), so that a failed dump leaves nothing behind.
 * ERR_RUNTIME when either cannot be made. */
int dump_dir_begin(Dump *d, const char *out, Err *e);

/* The dump is complete: rename the folder to out (a missing or empty out),
 * or with --force move its files into out, replacing those of the same
 * name. ERR_RUNTIME when a rename fails (call dump_dir_abort then). */
int dump_dir_commit(Dump *d, const char *out, Err *e);

/* The dump failed: remove the folder being written and the parents that
 * dump_dir_begin made. Safe to call twice, or after a failed begin. */
void dump_dir_abort(Dump *d);

/* Write data ([shape[0]]..[shape[ndim-1]] elements of type) to DIR/name and
 * append its entry, with the description `what`, to d->files. */
int dump_array(Dump *d, const char *name, NpyType type, const size_t *shape, size_t ndim, const void *data,
               const char *what, Err *e);

/* embed, every stored layer's weights (only layer0 with shared_layers),
 * final_norm and unembed, f32, matrices [out, in]. */
int dump_weights(Dump *d, const Model *m, Err *e);

/* The cache after the run, gathered through kv_block: per layer
 * cache.layerL.k.npy and .v.npy, f32 [n_seqs][n_kv_heads][len][head_dim]
 * decoded with the reference codecs; and when a side stores rows in another
 * format (+quant, mixed, kivi), its stored bytes: per run of positions in one
 * format (a segment) cache.layerL.k.rawS.npy, uint8 [n_seqs][n_kv_heads]
 * [rows][row_bytes], plus .rawS.chan.npy for per-channel keys. d->storage
 * gets the segments (positions, format, block layout, files). Every
 * sequence must hold positions 0..len-1, stored alike (ERR_RUNTIME
 * otherwise); *len_out gets len. */
int dump_cache(Dump *d, const KvCache *cache, const Config *c, size_t n_seqs, size_t *len_out, Err *e);

#endif
