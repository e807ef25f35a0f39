/* mla_tiles.h: the MLA notes' tile LRU and prefetch queue, counted (lesson 14).
 *
 * An MLA model on the decompress path (`--mla decompress`) reads each
 * layer's cached latent rows in chunks of tile_rows positions: chunk c of a
 * context of len positions holds positions [c * tile_rows, min((c + 1) *
 * tile_rows, len)). A generation runs n_tokens passes: the prefill of
 * prompt_len positions, then n_tokens - 1 decode steps of one position each
 * (pass k sees prompt_len + k positions). Each pass runs layer 0, then 1,
 * ..., and each layer its chunks in order. For each chunk:
 *
 *   1. the prefetch: the next chunk is requested (queued): chunk c + 1 of
 *      this layer; after the last chunk, chunk 0 of the next layer as its
 *      cache holds it now, that is, the rows it holds from the earlier
 *      passes (none in the prefill: no request then); after the last
 *      layer's last chunk, nothing. A request is skipped when the LRU holds
 *      that tile (same layer and first position) with at least as many rows
 *      decompressed as the chunk has; otherwise it is issued.
 *   2. the lookup: the LRU of `capacity` tiles, shared by all layers, holds
 *      the tile of (layer, first position)? A hit reuses its decompressed
 *      rows (the tile is now the most recently used); a miss takes an empty
 *      slot, or else evicts the least recently used tile (an eviction), and
 *      starts with no rows. Then the chunk's rows the tile does not hold
 *      yet are decompressed (a growing last tile reuses its old rows and
 *      decompresses only the new ones).
 */
#ifndef KVSCOPE_EXERCISE_MLA_TILES_H
#define KVSCOPE_EXERCISE_MLA_TILES_H

#include <stddef.h>

typedef struct {
    unsigned long long lookups, hits, misses, evictions;
    unsigned long long rows_reused;       /* rows served from a held tile */
    unsigned long long rows_decompressed; /* rows up-projected */
    unsigned long long prefetch_queued, prefetch_skipped;
} TileCounts;

/* The counts of one generation (capacity >= 1, at most 16). */
void tile_counts(size_t n_layers, size_t prompt_len, size_t n_tokens, size_t capacity, size_t tile_rows,
                 TileCounts *out);

#endif
