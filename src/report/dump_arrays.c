/* dump_arrays.c: the .npy files of `kvscope dump`, and their directory.
 * Each array is written with util/npy.h and recorded in the Dump's file
 * list, which dump_manifest.c puts into manifest.json. */
#include "report/dump_arrays.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "kernels/format.h"

/* ---- the output directory ---- */

int dump_dir_check(const char *dir, int force, Err *e)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        return err_set(e, ERR_RUNTIME, "--out %s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return err_set(e, ERR_USAGE, "--out %s: exists and is not a directory", dir);
    if (force)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return err_set(e, ERR_RUNTIME, "--out %s: %s", dir, strerror(errno));
    int empty = 1;
    for (struct dirent *ent; empty && (ent = readdir(d));)
        empty = strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0;
    closedir(d);
    if (!empty)
        return err_set(e, ERR_USAGE, "--out %s: directory is not empty (add --force to write into it)", dir);
    return 0;
}

int dump_dir_make(const char *dir, Err *e)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return err_set(e, ERR_USAGE, "--out: path too long");
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return err_set(e, ERR_RUNTIME, "cannot create %s: %s", path, strerror(errno));
        *p = saved;
        if (saved == '\0')
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(e, ERR_RUNTIME, "cannot create directory %s", dir);
    return 0;
}

/* ---- writing arrays and recording them in the manifest ---- */

int dump_array(Dump *d, const char *name, NpyType type, const size_t *shape, size_t ndim, const void *data,
               const char *what, Err *e)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", d->dir, name) >= (int)sizeof path)
        return err_set(e, ERR_USAGE, "--out: path too long");
    if (npy_write(path, type, shape, ndim, data, e) < 0)
        return -1;
    json_t *dims = json_array();
    for (size_t i = 0; i < ndim; i++)
        json_array_append_new(dims, json_integer((json_int_t)shape[i]));
    json_array_append_new(d->files, json_pack("{s:s, s:s, s:o, s:s}", "name", name, "dtype", npy_descr(type),
                                              "shape", dims, "what", what));
    d->n_written++;
    return 0;
}

int dump_weights(Dump *d, const Model *m, Err *e)
{
    const Config *c = &m->cfg;
    const size_t dm = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim;
    const size_t embed_shape[2] = { c->vocab, dm };
    const size_t norm_shape[1] = { dm };
    if (dump_array(d, "embed.npy", NPY_F32, embed_shape, 2, m->embed, "token embeddings: row t is token t", e) < 0)
        return -1;

    size_t stored = c->shared_layers ? 1 : c->n_layers;
    for (size_t l = 0; l < stored; l++) {
        const LayerWeights *w = model_layer(m, l);
        const struct {
            const char *name;
            const float *data;
            size_t rows, cols; /* cols 0: a vector of rows */
            const char *what;
        } t[] = {
            { "attn_norm", w->attn_norm, dm, 0, "RMSNorm gain before attention" },
            { "wq", w->wq, q, dm, "query projection [n_heads*head_dim, d_model]" },
            { "wk", w->wk, kv, dm, "key projection [n_kv_heads*head_dim, d_model]" },
            { "wv", w->wv, kv, dm, "value projection [n_kv_heads*head_dim, d_model]" },
            { "wo", w->wo, dm, q, "output projection [d_model, n_heads*head_dim]" },
            { "ffn_norm", w->ffn_norm, dm, 0, "RMSNorm gain before the FFN" },
            { "w_gate", w->w_gate, f, dm, "SwiGLU gate [ffn_dim, d_model]" },
            { "w_up", w->w_up, f, dm, "SwiGLU up [ffn_dim, d_model]" },
            { "w_down", w->w_down, dm, f, "SwiGLU down [d_model, ffn_dim]" },
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            char name[64];
            snprintf(name, sizeof name, "layer%zu.%s.npy", l, t[i].name);
            const size_t shape[2] = { t[i].rows, t[i].cols };
            if (dump_array(d, name, NPY_F32, shape, t[i].cols ? 2 : 1, t[i].data, t[i].what, e) < 0)
                return -1;
        }
    }
    if (dump_array(d, "final_norm.npy", NPY_F32, norm_shape, 1, m->final_norm, "RMSNorm gain before unembedding",
                   e) < 0)
        return -1;
    return dump_array(d, "unembed.npy", NPY_F32, embed_shape, 2, m->unembed,
                      "unembedding: logits = unembed @ final_norm(x)", e);
}

/* Copy the rows of (layer, seq, kv head h) into k and v, each [len][head_dim]
 * with row p at position p, walking the cache's blocks. */
static int gather_head(const KvCache *cache, size_t l, size_t b, size_t h, size_t len, float *k, float *v, Err *e)
{
    const size_t hd = cache->geo.head_dim, row_bytes = hd * sizeof(float);
    size_t next = 0; /* the position the next block must start at */
    for (size_t i = 0; i < kv_n_blocks(cache, l, b); i++) {
        KvBlock blk;
        kv_block(cache, l, b, h, i, &blk);
        if (blk.k_fmt != FMT_F32 || blk.v_fmt != FMT_F32)
            return err_set(e, ERR_USAGE, "cache '%s' stores %s/%s rows; dump writes f32 caches only", cache->spec,
                           format_name(blk.k_fmt), format_name(blk.v_fmt));
        if (blk.pos != next || blk.pos + blk.n > len)
            return err_set(e, ERR_USAGE, "cache '%s' does not hold positions 0..%zu in order; dump writes full "
                           "caches only", cache->spec, len - 1);
        for (size_t r = 0; r < blk.n; r++) {
            memcpy(k + (blk.pos + r) * hd, (const char *)blk.k + r * blk.k_stride, row_bytes);
            memcpy(v + (blk.pos + r) * hd, (const char *)blk.v + r * blk.v_stride, row_bytes);
        }
        next = blk.pos + blk.n;
    }
    if (next != len)
        return err_set(e, ERR_USAGE, "cache '%s' holds %zu of %zu positions; dump writes full caches only",
                       cache->spec, next, len);
    return 0;
}

int dump_cache(Dump *d, const KvCache *cache, const Config *c, size_t n_seqs, size_t *len_out, Err *e)
{
    const size_t hd = c->head_dim, H = c->n_kv_heads;
    const size_t len = kv_length(cache, 0, 0);
    *len_out = len;
    float *k = malloc(n_seqs * H * len * hd * sizeof(float) + 1); /* [n_seqs][H][len][hd] */
    float *v = malloc(n_seqs * H * len * hd * sizeof(float) + 1);
    if (!k || !v) {
        free(k);
        free(v);
        return err_set(e, ERR_RUNTIME, "out of memory gathering the cache");
    }
    int rc = 0;
    for (size_t l = 0; l < c->n_layers && rc == 0; l++) {
        for (size_t b = 0; b < n_seqs && rc == 0; b++) {
            if (kv_length(cache, l, b) != len)
                rc = err_set(e, ERR_RUNTIME, "cache '%s': layer %zu sequence %zu holds %zu rows, not %zu",
                             cache->spec, l, b, kv_length(cache, l, b), len);
            for (size_t h = 0; h < H && rc == 0; h++)
                rc = gather_head(cache, l, b, h, len, k + (b * H + h) * len * hd, v + (b * H + h) * len * hd, e);
        }
        if (rc < 0)
            break;
        char kname[64], vname[64];
        snprintf(kname, sizeof kname, "cache.layer%zu.k.npy", l);
        snprintf(vname, sizeof vname, "cache.layer%zu.v.npy", l);
        const size_t shape[4] = { n_seqs, H, len, hd };
        rc = dump_array(d, kname, NPY_F32, shape, 4, k, "cached keys after the run, RoPE applied", e);
        if (rc == 0)
            rc = dump_array(d, vname, NPY_F32, shape, 4, v, "cached values after the run (no RoPE)", e);
    }
    free(k);
    free(v);
    return rc;
}
