/* mla_state.h: the scratch, tile LRU and prefetch queue behind MLA
 * attention (private to mla.c and mla_tiles.c). */
#ifndef KVSCOPE_MODEL_MLA_STATE_H
#define KVSCOPE_MODEL_MLA_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/format.h"
#include "model/mla.h"

/* One decompressed tile: up to MLA_TILE_ROWS positions of one (layer,
 * sequence), starting at `pos`, read from rows stored in `fmt`. Rows are
 * immutable once a position is cached (positions are never reused within a
 * sequence, and a format change gives a different key), so a held tile stays
 * right until its sequence restarts (mla_tiles_forget_seq). */
typedef struct {
    int valid;
    size_t layer, seq, pos;
    Format fmt;
    size_t rows;     /* rows decompressed so far */
    uint64_t stamp;  /* last use (LRU) */
    float *k_nope;   /* [MLA_TILE_ROWS][H][dn] = W_uk c_j */
    float *v;        /* [MLA_TILE_ROWS][H][dv] = W_uv c_j */
    float *k_rope;   /* [MLA_TILE_ROWS][p] the shared RoPE key, decoded */
} MlaTile;

/* A run of latent rows of one block that lies inside one tile window
 * [k * MLA_TILE_ROWS, (k + 1) * MLA_TILE_ROWS) of positions. */
typedef struct {
    size_t pos, n;
    const unsigned char *k; /* row i at k + i * stride */
    size_t stride;
    Format fmt;
} MlaChunk;

struct MlaState {
    size_t H, r, p, dn, dv, lat, max_rows; /* lat = r + p */
    float *lat_rows; /* [max_rows][lat] this pass's latent rows: normed c_kv, then roped k_rope */
    float *qx;       /* [max_rows][H][max(lat, dn + p)] the scaled queries of the path */
    float *tmp;      /* [H][max_rows][r] absorbed: W_uk^T q_nope, then the attended latent */
    float *acc;      /* [max_rows][H][max(r, dv)] running weighted sums */
    float *m, *l;    /* [max_rows][H] running max and sum of the online softmax */
    float *sc;       /* [H][MLA_TILE_ROWS] scores of one query over one chunk */
    float *dots;     /* [max(H, max_rows)] */
    float *row;      /* [lat] one dequantized latent row */
    float *cbuf;     /* [MLA_TILE_ROWS][r] c_kv of the rows being up-projected */
    float *att;      /* [max_rows][H * dv] attention outputs, packed for W_o */
    size_t *seen;    /* [max_rows] rows each query has seen so far */
    MlaChunk *chunks;
    size_t chunks_cap;

    MlaTile *tiles;      /* [tiles_alloc] */
    size_t tiles_alloc;  /* max(1, capacity): slot 0 is the scratch tile when the LRU is off */
    size_t capacity;     /* the LRU's size, as last reserved */
    int reserved;
    float *tile_mem;
    uint64_t clock;

    uintptr_t in_flight[MLA_PREFETCH_DEPTH]; /* addresses of issued prefetches, oldest first */
    size_t n_in_flight;

    MlaStats stats;
};

/* Size the LRU for `capacity` tiles (0: no LRU, one scratch tile). Keeps the
 * held tiles when the capacity is unchanged. */
int mla_tiles_reserve(MlaState *st, size_t capacity, Err *e);

/* The tile for (layer, seq, pos, fmt). With use_lru and a capacity: a held
 * tile (a hit; its rows are reused) or the least recently used slot, emptied
 * (a miss). Without: the scratch tile, emptied, not counted as a lookup. */
MlaTile *mla_tiles_get(MlaState *st, int use_lru, size_t layer, size_t seq, size_t pos, Format fmt);

/* 1 when the LRU holds at least `rows` rows of that tile. */
int mla_tiles_holds(const MlaState *st, size_t layer, size_t seq, size_t pos, Format fmt, size_t rows);

/* Drop every tile of sequence seq (its cache restarted at position 0). */
void mla_tiles_forget_seq(MlaState *st, size_t seq);

/* The prefetch queue: request the block at [addr, addr + bytes) (issued
 * unless skip), and note that the block at addr is being read now. */
void mla_prefetch_request(MlaState *st, const void *addr, size_t bytes, int skip);
void mla_prefetch_arrive(MlaState *st, const void *addr);

#endif
