/* mla_tiles.c: count what the MLA notes' tile LRU and prefetch queue do in one
 * generation (lesson 14). Fill in the TODOs; check it with
 * `kvscope lesson check 14 --file THIS_FILE`: your counts are compared with
 * the ones kvscope's own LRU kept when mla-tiny ran the same generations.
 * mla_tiles.h says, step by step, what happens at each chunk. */
#include <string.h>

#include "mla_tiles.h"

typedef struct {
    int valid;
    size_t layer, pos, rows;  /* the tile of (layer, first position), rows decompressed so far */
    unsigned long long stamp; /* when it was last used */
} Tile;

/* The held tile of (layer, pos), or NULL. */
static Tile *find(Tile *lru, size_t cap, size_t layer, size_t pos)
{
    for (size_t i = 0; i < cap; i++)
        if (lru[i].valid && lru[i].layer == layer && lru[i].pos == pos)
            return &lru[i];
    return NULL;
}

void tile_counts(size_t n_layers, size_t prompt_len, size_t n_tokens, size_t capacity, size_t tile_rows,
                 TileCounts *out)
{
    Tile lru[16];
    memset(lru, 0, sizeof lru);
    memset(out, 0, sizeof *out);
    unsigned long long clock = 0;
    (void)clock;
    (void)find;
    (void)capacity;
    for (size_t k = 0; k < n_tokens; k++) {
        const size_t len = prompt_len + k; /* positions pass k sees */
        /* TODO: how many rows each layer held before this pass (for the
         * prefetch of the next layer's first chunk) */
        const size_t n_chunks = (len + tile_rows - 1) / tile_rows;
        for (size_t layer = 0; layer < n_layers; layer++)
            for (size_t c = 0; c < n_chunks; c++) {
                /* TODO 1: the prefetch: which chunk is next, how many rows it
                 * holds now, and is its tile already held with all of them
                 * (skipped)? */

                /* TODO 2: the lookup: a hit, or a miss that takes an empty
                 * slot or evicts the least recently used tile; then the rows
                 * reused and the rows decompressed */
                out->lookups++;
            }
    }
}
