/* ckpt/: files that hold weights: kvscope's own format (kvw), read and
 * written here. Uses kernels/ (the f16 conversion) and util/; prints
 * nothing.
 *
 * kvw.h: a file of named tensors with the shape of the model they belong
 * to. Little-endian:
 *
 *   magic "KVSCOPEW", u32 version (1), u32 tensor count
 *   the shape: u32 d_model, n_layers, n_heads, n_kv_heads, head_dim,
 *              ffn_dim, vocab, max_seq_len; f64 rope_theta, norm_eps
 *   a table, one entry per tensor: char name[48] (NUL-padded), u32 dtype
 *     (0 f32, 1 f16, 2 raw bytes), u32 rows, u32 cols, u64 offset, u64 bytes
 *   the data of each tensor at its offset (64-byte aligned)
 *
 * A model's weights are its tensors in the arena's order; a training
 * checkpoint adds the optimizer's state as more tensors. Files are written
 * to NAME.tmp and renamed, so a reader never sees half a file. */
#ifndef KVSCOPE_CKPT_KVW_H
#define KVSCOPE_CKPT_KVW_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

enum { KVW_F32 = 0, KVW_F16 = 1, KVW_BYTES = 2 };

typedef struct {
    uint32_t d_model, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, max_seq_len;
    double rope_theta, norm_eps;
} KvwShape;

/* One tensor to write or read: floats (f32 or f16 on disk) or raw bytes. */
typedef struct {
    char name[48];
    uint32_t dtype;      /* KVW_*: on disk (floats in memory are always f32) */
    uint32_t rows, cols; /* bytes: rows = 1, cols = the byte count */
    void *data;          /* float [rows][cols], or bytes */
} KvwTensor;

/* Write shape and tensors to path (through path.tmp). */
int kvw_write(const char *path, const KvwShape *shape, const KvwTensor *t, size_t n, Err *e);

/* Read path: its shape must equal *want but for max_seq_len (ERR_USAGE
 * naming the first field that differs), and it must hold each of t[0..n) by name with the same
 * rows and cols (ERR_USAGE naming the tensor), read into t[i].data (f16 is
 * widened). Tensors of the file not asked for are skipped; with optional
 * set, a tensor t[i] the file lacks is left alone and t[i].rows set to 0. */
int kvw_read(const char *path, const KvwShape *want, KvwTensor *t, size_t n, int optional, Err *e);

/* 1 when the file at path begins with a weights file's magic; 0 when it
 * does not or cannot be read. */
int kvw_probe(const char *path);

/* The shape path's header records (ERR_USAGE: not a weights file, or a
 * header cut short; ERR_RUNTIME: it cannot be read). */
int kvw_read_shape(const char *path, KvwShape *out, Err *e);

#endif
