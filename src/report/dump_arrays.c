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
#include <unistd.h>

#include "kernels/codec.h"
#include "kernels/format.h"
#include "util/tempfiles.h"

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

/* Strip trailing slashes from out into buf: "a/b/" -> "a/b". */
static int clean_out(const char *out, char *buf, size_t cap, Err *e)
{
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/')
        n--;
    if (n + sizeof ".tmp-XXXXXX" + 64 > cap) /* room for the sibling and a file name */
        return err_set(e, ERR_USAGE, "--out: path too long");
    memcpy(buf, out, n);
    buf[n] = '\0';
    return 0;
}

int dump_dir_begin(Dump *d, const char *out, Err *e)
{
    char clean[sizeof d->tmp], parent[sizeof d->tmp];
    if (clean_out(out, clean, sizeof clean, e) < 0)
        return -1;
    d->made_len = 0;
    d->temp_mark = tempfiles_mark() + 1; /* a signal removes what is made from here on */
    /* mkdir -p the parent, remembering the first folder made here */
    snprintf(parent, sizeof parent, "%s", clean);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        snprintf(d->parent, sizeof d->parent, "%s", parent);
        for (char *p = parent + 1;; p++) {
            if (*p != '/' && *p != '\0')
                continue;
            char saved = *p;
            *p = '\0';
            const int made = mkdir(parent, 0777) == 0, err = errno;
            struct stat st;
            if (made && !d->made_len)
                d->made_len = strlen(parent);
            if (made)
                tempfiles_add(TEMP_DIR, parent, NULL);
            if (!made && err != EEXIST && (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))) {
                dump_dir_abort(d);
                return err_set(e, ERR_RUNTIME, "--out %s: cannot create %s: %s", out, parent, strerror(err));
            }
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    /* a sibling of DIR, so that the last step is a rename on one file system */
    if (snprintf(d->tmp, sizeof d->tmp, "%s.tmp-XXXXXX", clean) >= (int)sizeof d->tmp || !mkdtemp(d->tmp)) {
        int err = errno;
        d->tmp[0] = '\0';
        dump_dir_abort(d);
        return err_set(e, ERR_RUNTIME, "--out %s: cannot create a folder beside it: %s", out, strerror(err));
    }
    tempfiles_add(TEMP_TREE, d->tmp, NULL); /* the arrays in it, then it */
    /* mkdtemp makes it 0700; DIR, when this folder becomes it, is made as
     * mkdir would make it: 0777 less the umask */
    mode_t mask = umask(0);
    umask(mask);
    if (chmod(d->tmp, 0777 & ~mask) != 0) {
        int err = errno;
        dump_dir_abort(d);
        return err_set(e, ERR_RUNTIME, "--out %s: cannot set the mode of %s: %s", out, d->tmp, strerror(err));
    }
    d->dir = d->tmp;
    return 0;
}

/* The folders dump_dir_begin registered are done with. */
static void forget_temps(Dump *d)
{
    if (d->temp_mark)
        tempfiles_forget_from(d->temp_mark - 1);
    d->temp_mark = 0;
}

/* Remove every file of the folder dir (it holds no folders), then dir. */
static void remove_tree(const char *dir)
{
    DIR *dd = opendir(dir);
    if (dd) {
        char path[4200];
        for (struct dirent *ent; (ent = readdir(dd));) {
            if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
                continue;
            if (snprintf(path, sizeof path, "%s/%s", dir, ent->d_name) < (int)sizeof path)
                remove(path);
        }
        closedir(dd);
    }
    rmdir(dir);
}

void dump_dir_abort(Dump *d)
{
    if (d->tmp[0])
        remove_tree(d->tmp);
    d->tmp[0] = '\0';
    /* the parents made by dump_dir_begin, deepest first */
    while (d->made_len && strlen(d->parent) >= d->made_len) {
        rmdir(d->parent);
        char *slash = strrchr(d->parent, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
    d->made_len = 0;
    forget_temps(d);
}

int dump_dir_commit(Dump *d, const char *out, Err *e)
{
    char clean[sizeof d->tmp];
    if (clean_out(out, clean, sizeof clean, e) < 0)
        return -1;
    struct stat st;
    if (stat(clean, &st) != 0 || !S_ISDIR(st.st_mode)) { /* DIR is not there: ours becomes it */
        if (rename(d->tmp, clean) != 0)
            return err_set(e, ERR_RUNTIME, "--out %s: cannot move %s there: %s", out, d->tmp, strerror(errno));
        d->tmp[0] = '\0';
        forget_temps(d);
        return 0;
    }
    /* a folder that is there (empty, or --force) stays, with its owner and
     * mode: ours are moved in one by one */
    DIR *dd = opendir(d->tmp);
    if (!dd)
        return err_set(e, ERR_RUNTIME, "cannot read %s: %s", d->tmp, strerror(errno));
    int rc = 0;
    for (struct dirent *ent; rc == 0 && (ent = readdir(dd));) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        char from[4200], to[4200];
        if (snprintf(from, sizeof from, "%s/%s", d->tmp, ent->d_name) >= (int)sizeof from ||
            snprintf(to, sizeof to, "%s/%s", clean, ent->d_name) >= (int)sizeof to)
            rc = err_set(e, ERR_RUNTIME, "--out %s: path too long", out);
        else if (rename(from, to) != 0)
            rc = err_set(e, ERR_RUNTIME, "cannot move %s to %s: %s", from, to, strerror(errno));
    }
    closedir(dd);
    if (rc == 0) {
        rmdir(d->tmp);
        d->tmp[0] = '\0';
        forget_temps(d);
    }
    return rc;
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
        char name[64];
        const size_t heads[1] = { c->n_heads };
        snprintf(name, sizeof name, "layer%zu.attn_sink.npy", l);
        if (w->attn_sink && dump_array(d, name, NPY_F32, heads, 1, w->attn_sink, "learnt sink logit of each query "
                                       "head, on the scaled scores (the softmax's extra term)", e) < 0)
            return -1;
    }
    if (dump_array(d, "final_norm.npy", NPY_F32, norm_shape, 1, m->final_norm, "RMSNorm gain before unembedding",
                   e) < 0)
        return -1;
    return dump_array(d, "unembed.npy", NPY_F32, embed_shape, 2, m->unembed,
                      "unembedding: logits = unembed @ final_norm(x)", e);
}

/* ---- the cache: decoded f32 rows, and the stored bytes ---- */

/* A run of positions [p0, p1) that one side (K or V) of one layer stores in
 * one format, in every sequence and KV head: one raw file. */
typedef struct {
    size_t p0, p1;
    Format fmt;
    size_t group;         /* per-channel codes: rows per group (one k_chan each); else 0 */
    size_t row_bytes;     /* format_row_bytes(fmt, head_dim) */
    unsigned char *raw;   /* [n_seqs][H][p1 - p0][row_bytes] */
    unsigned short *chan; /* per-channel: [n_seqs][H][groups][2 * head_dim] fp16 scales, then mins */
} Segment;

/* One side of a block: its rows, their stride and format, its group's
 * per-channel scales (keys only). */
typedef struct {
    const unsigned char *rows;
    size_t stride;
    Format fmt;
    const unsigned short *chan;
} Side;

static Side block_side(const KvBlock *blk, int is_v)
{
    return is_v ? (Side){ blk->v, blk->v_stride, blk->v_fmt, NULL }
                : (Side){ blk->k, blk->k_stride, blk->k_fmt, blk->k_chan };
}

/* The segments of (layer l, side) as sequence 0, KV head 0 stores them;
 * every position 0..len-1 in order, or ERR_RUNTIME. *n_segs gets their count
 * (at most the blocks there). */
static int find_segments(const KvCache *cache, size_t l, int is_v, size_t len, Segment *segs, size_t *n_segs,
                         Err *e)
{
    const size_t hd = cache->geo.head_dim;
    size_t n = 0, next = 0;
    for (size_t i = 0; i < kv_n_blocks(cache, l, 0); i++) {
        KvBlock blk;
        kv_block(cache, l, 0, 0, i, &blk);
        const Side sd = block_side(&blk, is_v);
        if (blk.pos != next || blk.pos + blk.n > len)
            return err_set(e, ERR_RUNTIME, "cache '%s' does not hold positions 0..%zu in order; dump writes full "
                           "caches only", cache->spec, len - 1);
        const int per_channel = format_is_per_channel(sd.fmt);
        if (n == 0 || segs[n - 1].fmt != sd.fmt)
            segs[n++] = (Segment){ .p0 = blk.pos, .fmt = sd.fmt, .group = per_channel ? blk.n : 0,
                                   .row_bytes = format_row_bytes(sd.fmt, hd) };
        if (per_channel && (blk.n != segs[n - 1].group || !sd.chan))
            return err_set(e, ERR_RUNTIME, "cache '%s': layer %zu holds per-channel groups of unequal size",
                           cache->spec, l);
        segs[n - 1].p1 = next = blk.pos + blk.n;
    }
    if (next != len)
        return err_set(e, ERR_RUNTIME, "cache '%s' holds %zu of %zu positions; dump writes full caches only",
                       cache->spec, next, len);
    *n_segs = n;
    return 0;
}

/* Copy (layer l, seq b, KV head h)'s side into the segments' raw bytes and
 * decode it into dec ([len][head_dim] f32) with the reference codecs. */
static int gather_head(const KvCache *cache, size_t l, size_t b, size_t h, int is_v, size_t len, Segment *segs,
                       size_t n_segs, float *dec, Err *e)
{
    const size_t hd = cache->geo.head_dim, H = cache->geo.n_kv_heads;
    size_t next = 0;
    for (size_t i = 0; i < kv_n_blocks(cache, l, b); i++) {
        KvBlock blk;
        kv_block(cache, l, b, h, i, &blk);
        const Side sd = block_side(&blk, is_v);
        Segment *sg = NULL;
        for (size_t j = 0; j < n_segs && !sg; j++)
            if (blk.pos >= segs[j].p0 && blk.pos < segs[j].p1)
                sg = &segs[j];
        if (blk.pos != next || !sg || blk.pos + blk.n > sg->p1 || sd.fmt != sg->fmt ||
            (sg->group && (blk.n != sg->group || (blk.pos - sg->p0) % sg->group)))
            return err_set(e, ERR_RUNTIME, "cache '%s': layer %zu sequence %zu KV head %zu stores its rows "
                           "unlike sequence 0 head 0; dump cannot write them as one array", cache->spec, l, b, h);
        const size_t seg_rows = sg->p1 - sg->p0;
        for (size_t r = 0; r < blk.n; r++) {
            const unsigned char *row = sd.rows + r * sd.stride;
            const size_t p = blk.pos + r;
            memcpy(sg->raw + ((b * H + h) * seg_rows + p - sg->p0) * sg->row_bytes, row, sg->row_bytes);
            float *out = dec + p * hd;
            codec_ref[sd.fmt].dequantize(out, row, hd);
            for (size_t c = 0; sd.chan && c < hd; c++) /* key = scale * code + min */
                out[c] = out[c] * fp16_to_f32(sd.chan[c]) + fp16_to_f32(sd.chan[hd + c]);
        }
        if (sg->group) {
            const size_t groups = seg_rows / sg->group, g = (blk.pos - sg->p0) / sg->group;
            memcpy(sg->chan + ((b * H + h) * groups + g) * 2 * hd, sd.chan, 2 * hd * sizeof *sd.chan);
        }
        next = blk.pos + blk.n;
    }
    if (next != len)
        return err_set(e, ERR_RUNTIME, "cache '%s': layer %zu sequence %zu holds %zu of %zu positions",
                       cache->spec, l, b, next, len);
    return 0;
}

/* One segment's entry in the manifest's cache_storage. */
static json_t *segment_json(const Segment *sg, const char *file, const char *chan_file)
{
    json_t *o = json_pack("{s:[I, I], s:s, s:I, s:I, s:I, s:I, s:s}", "positions", (json_int_t)sg->p0,
                          (json_int_t)sg->p1, "format", format_name(sg->fmt), "block_values",
                          (json_int_t)format_block_values(sg->fmt), "block_bytes",
                          (json_int_t)format_block_bytes(sg->fmt), "row_extra",
                          (json_int_t)format_row_extra(sg->fmt), "row_bytes", (json_int_t)sg->row_bytes, "file",
                          file);
    if (o && chan_file) {
        json_object_set_new(o, "group_rows", json_integer((json_int_t)sg->group));
        json_object_set_new(o, "chan_file", json_string(chan_file));
    }
    return o;
}

/* Layer l's side (K or V): the decoded rows as cache.layerL.X.npy, and when
 * any row is stored in another format than f32, each segment's stored bytes
 * as cache.layerL.X.rawS.npy; their descriptions into *storage. */
static int dump_side(Dump *d, const KvCache *cache, size_t l, int is_v, size_t n_seqs, size_t len, json_t **storage,
                     Err *e)
{
    const size_t hd = cache->geo.head_dim, H = cache->geo.n_kv_heads;
    const char *x = is_v ? "v" : "k";
    const size_t max_segs = kv_n_blocks(cache, l, 0) + 1;
    Segment *segs = calloc(max_segs, sizeof *segs);
    float *dec = malloc(n_seqs * H * len * hd * sizeof(float) + 1); /* [n_seqs][H][len][hd] */
    size_t n_segs = 0;
    int rc = 0, all_f32 = 1;
    if (!segs || !dec)
        rc = err_set(e, ERR_RUNTIME, "out of memory gathering the cache");
    if (rc == 0)
        rc = find_segments(cache, l, is_v, len, segs, &n_segs, e);
    for (size_t i = 0; i < n_segs && rc == 0; i++) {
        Segment *sg = &segs[i];
        all_f32 &= sg->fmt == FMT_F32;
        sg->raw = malloc(n_seqs * H * (sg->p1 - sg->p0) * sg->row_bytes + 1);
        if (sg->group)
            sg->chan = malloc(n_seqs * H * (sg->p1 - sg->p0) / sg->group * 2 * hd * sizeof *sg->chan + 1);
        if (!sg->raw || (sg->group && !sg->chan))
            rc = err_set(e, ERR_RUNTIME, "out of memory gathering the cache");
    }
    for (size_t b = 0; b < n_seqs && rc == 0; b++)
        for (size_t h = 0; h < H && rc == 0; h++)
            rc = gather_head(cache, l, b, h, is_v, len, segs, n_segs, dec + (b * H + h) * len * hd, e);

    char name[64];
    snprintf(name, sizeof name, "cache.layer%zu.%s.npy", l, x);
    const size_t shape[4] = { n_seqs, H, len, hd };
    if (rc == 0)
        rc = dump_array(d, name, NPY_F32, shape, 4, dec,
                        is_v ? "cached values after the run (no RoPE), decoded to f32"
                             : "cached keys after the run, RoPE applied, decoded to f32", e);
    json_t *list = json_array();
    for (size_t i = 0; i < n_segs && rc == 0; i++) {
        const Segment *sg = &segs[i];
        char raw[64] = "", chan[64] = "";
        if (all_f32) { /* the decoded rows are the stored bytes */
            snprintf(raw, sizeof raw, "%s", name);
        } else {
            snprintf(raw, sizeof raw, "cache.layer%zu.%s.raw%zu.npy", l, x, i);
            const size_t rshape[4] = { n_seqs, H, sg->p1 - sg->p0, sg->row_bytes };
            rc = dump_array(d, raw, NPY_U8, rshape, 4, sg->raw, "stored rows as bytes, one segment of "
                            "cache_storage: [n_seqs, n_kv_heads, rows, row_bytes]", e);
            if (rc == 0 && sg->group) {
                snprintf(chan, sizeof chan, "cache.layer%zu.%s.raw%zu.chan.npy", l, x, i);
                const size_t cshape[4] = { n_seqs, H, (sg->p1 - sg->p0) / sg->group, 2 * hd };
                rc = dump_array(d, chan, NPY_F16, cshape, 4, sg->chan, "per-channel scales then minimums of "
                                "each group of rows: [n_seqs, n_kv_heads, groups, 2 * head_dim]", e);
            }
        }
        if (rc == 0)
            json_array_append_new(list, segment_json(sg, raw, chan[0] ? chan : NULL));
    }
    if (rc == 0)
        *storage = list;
    else
        json_decref(list);
    for (size_t i = 0; i < n_segs; i++) {
        free(segs[i].raw);
        free(segs[i].chan);
    }
    free(segs);
    free(dec);
    return rc;
}

int dump_cache(Dump *d, const KvCache *cache, const Config *c, size_t n_seqs, size_t *len_out, Err *e)
{
    const size_t len = kv_length(cache, 0, 0);
    *len_out = len;
    json_t *layers = json_array();
    int rc = 0;
    for (size_t l = 0; l < c->n_layers && rc == 0; l++) {
        for (size_t b = 0; b < n_seqs && rc == 0; b++)
            if (kv_length(cache, l, b) != len)
                rc = err_set(e, ERR_RUNTIME, "cache '%s': layer %zu sequence %zu holds %zu rows, not %zu",
                             cache->spec, l, b, kv_length(cache, l, b), len);
        json_t *k = NULL, *v = NULL;
        if (rc == 0)
            rc = dump_side(d, cache, l, 0, n_seqs, len, &k, e);
        if (rc == 0)
            rc = dump_side(d, cache, l, 1, n_seqs, len, &v, e);
        if (rc == 0)
            json_array_append_new(layers, json_pack("{s:I, s:o, s:o}", "layer", (json_int_t)l, "k", k, "v", v));
        else
            json_decref(k);
    }
    if (rc == 0) {
        json_decref(d->storage);
        d->storage = layers;
    } else {
        json_decref(layers);
    }
    return rc;
}
