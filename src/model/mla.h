/* mla.h: multi-head latent attention (DeepSeek-V2; the MLA notes' compressed
 * latent cache), with its two read paths, the MLA notes' LRU of decompressed
 * tiles and its prefetch of the next block.
 *
 * Per layer and token x (H heads; r = kv_lora_rank, p = qk_rope_dim,
 * dn = qk_nope_dim, dv = v_head_dim; no query compression):
 *
 *   c_kv   = RMSNorm(W_dkv x)                 [r]    the compressed latent
 *   k_rope = RoPE(W_kr x)                     [p]    one RoPE key for every head
 *   q_h    = [q_nope_h | RoPE(q_rope_h)]      [dn+p] from W_q (the layer's wq)
 *
 * The cache holds, per token and layer, only the latent row [c_kv | k_rope]:
 * r + p values (the MLA notes: 512 + 64 = 576), stored as the K row of a k_only
 * geometry (one "KV head" of r + p values, no V; model_kv_geometry). Any
 * layout and format serves: contiguous, dynamic, paged, ring, mixed, +quant.
 * c_kv is cached after its RMSNorm (as vLLM does); the MLA notes caches it before
 * and applies kv_a_layernorm at every decompression: the same numbers, the
 * norm paid once per token instead of once per read.
 *
 * Score and output of head h over cached rows j (scale = 1/sqrt(dn + p)):
 *   s_hj  = scale * (q_nope_h . W_uk_h c_j + q_rope_h . k_rope_j)
 *   out_h = sum_j softmax(s_h)_j W_uv_h c_j                   [dv]
 * and x += W_o [out_1 .. out_H]. Two ways to compute it, equal up to float
 * rounding (model.h's MlaPath):
 *
 * decompress (the MLA notes' decompress_kv): every row read is up-projected,
 *   K_nope_hj = W_uk_h c_j and V_hj = W_uv_h c_j for every head, then
 *   ordinary attention over [K_nope_hj | k_rope_j] and V_hj. The rows are
 *   decompressed a tile at a time (MLA_TILE_ROWS positions of one block, all
 *   heads); an LRU of model->mla_tiles such tiles (the MLA notes' threadgroup
 *   cache, default 4) keeps them, so a tile met again (the same layer,
 *   sequence and positions, as the growing last tile is at every decode
 *   step) is reused and only its new rows are decompressed.
 * absorbed: W_uk is folded into the query and W_uv into the output,
 *   q_lat_h = W_uk_h^T q_nope_h  [r],  s_hj = scale * (q_lat_h . c_j + q_rope_h . k_rope_j),
 *   out_h = W_uv_h (sum_j p_hj c_j): one dot of r + p values per row and head
 *   straight on the stored latent (fused dequantization), K and V never built.
 *
 * Where the work is counted (Counters; a multiply-add is 2 FLOPs):
 *   flops_q   W_q; absorbed also W_uk folded into the query (2 H dn r per query)
 *   flops_k   W_dkv and W_kr (2 d (r+p) per token); decompress also W_uk (2 r H dn per row up-projected)
 *   flops_v   decompress: W_uv (2 r H dv per row up-projected); absorbed: 0
 *   flops_o   W_o; absorbed also W_uv after attention (2 H r dv per query)
 *   flops_qk  per visible row and head: decompress 2 (dn + p), absorbed 2 (r + p)
 *   flops_av  per visible row and head: decompress 2 dv, absorbed 2 r
 *   flops_softmax  5 per score (the same named estimate as attend())
 *   kv_bytes_read  latent bytes read from the cache: absorbed, every visible
 *             row once per query; decompress, each row when it is decompressed
 *   view_bytes  decompress only: the f32 K/V tile written (H (dn + dv) + p values
 *             per row decompressed), and read back by every query, per visible
 *             row, hit or miss. The tiles are not the cache, so they are not in
 *             kv_bytes_read: what the decompress path moves is the sum of the
 *             two (`kvscope run --format json` prints both, per step and in all)
 *   weight_bytes_read  by the kernels: W_uk and W_uv once per pass (absorbed) or
 *             once per tile decompressed (decompress)
 * mla_flops() gives the same figures in closed form.
 *
 * The tile LRU and the prefetch queue live in the ForwardState (a
 * Generator's scratch), so their statistics cover one generation. */
#ifndef KVSCOPE_MODEL_MLA_H
#define KVSCOPE_MODEL_MLA_H

#include <stddef.h>
#include <stdint.h>

#include "model/mla_shape.h"
#include "model/model.h"
#include "model/sublayers.h"
#include "util/err.h"

#define MLA_TILE_ROWS 64      /* positions per decompressed tile (a block of more is cut at multiples) */
#define MLA_PREFETCH_DEPTH 8  /* prefetches in flight at most; the oldest is retired past it */

/* The MLA notes' LRU of decompressed tiles (decompress path). A lookup is one
 * tile needed by one pass of one layer and sequence; it hits when the LRU
 * holds that tile, whose rows are then reused (only rows added since are
 * decompressed). */
typedef struct {
    size_t capacity;             /* tiles held (Model.mla_tiles); 0 = no LRU */
    size_t tile_rows;            /* positions per tile */
    uint64_t lookups, hits, misses;
    uint64_t evictions;          /* valid tiles pushed out to make room */
    uint64_t rows_reused;        /* rows served from a held tile */
    uint64_t rows_decompressed;  /* rows up-projected (W_uk and W_uv) */
} MlaTileStats;

/* The prefetch of the next block: while a block of latent rows is read, the
 * next one (or the next layer's first) is requested; a request is issued as
 * __builtin_prefetch over the block's cache lines, unless its tile is already
 * decompressed in the LRU (skipped); it is in flight until that block is
 * read (used) or MLA_PREFETCH_DEPTH newer ones push it out (expired). */
typedef struct {
    uint64_t queued;     /* requests made */
    uint64_t skipped;    /* not issued: the block's tile is in the LRU, its latent will not be read */
    uint64_t issued;     /* issued as __builtin_prefetch */
    uint64_t lines;      /* 64-byte lines prefetched */
    uint64_t used;       /* issued, then read */
    uint64_t expired;    /* issued, pushed out of the queue before being read */
    size_t in_flight;    /* gauge: issued, not yet read */
} MlaPrefetchStats;

typedef struct {
    MlaPath path;         /* of the last pass */
    uint64_t passes;      /* layer passes run (layers x forward passes) */
    MlaTileStats tiles;
    MlaPrefetchStats prefetch;
} MlaStats;

/* Hit rate of the tile LRU, 0 when nothing was looked up. */
double mla_tile_hit_rate(const MlaTileStats *t);

typedef struct MlaState MlaState;

/* Scratch for passes of up to max_rows token rows of config c (attention =
 * mla), plus the tile LRU and prefetch queue (sized at first use from the
 * model's mla_tiles). *out is NULL on failure (ERR_RUNTIME). */
int mla_state_init(MlaState **out, const Config *c, size_t max_rows, Err *e);
void mla_state_free(MlaState *st);
/* Cumulative statistics; NULL when st is NULL. */
const MlaStats *mla_state_stats(const MlaState *st);

/* The MLA counterpart of sublayer_self_attention: x += W_o . MLA(rmsnorm(x)),
 * the new latent rows appended to p->cache (layer `layer`) when there is
 * one, read by m->mla_path. Needs s->mla (forward_state_init makes it for an
 * MLA config). The pitfalls (m->bugs) are not modelled on MLA: ERR_USAGE. */
int sublayer_mla_attention(const Model *m, ForwardState *s, size_t layer, const AttnPass *p, Counters *ctr,
                           Err *e);

#endif
