/* mla_tiles.c, solved: the MLA notes' tile LRU and prefetch queue, counted
 * (lesson 14). */
#include <string.h>

#include "mla_tiles.h"

typedef struct {
    int valid;
    size_t layer, pos, rows;
    unsigned long long stamp; /* when it was last used */
} Tile;

static Tile *find(Tile *lru, size_t cap, size_t layer, size_t pos)
{
    for (size_t i = 0; i < cap; i++)
        if (lru[i].valid && lru[i].layer == layer && lru[i].pos == pos)
            return &lru[i];
    return NULL;
}

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

void tile_counts(size_t n_layers, size_t prompt_len, size_t n_tokens, size_t capacity, size_t tile_rows,
                 TileCounts *out)
{
    Tile lru[16];
    memset(lru, 0, sizeof lru);
    memset(out, 0, sizeof *out);
    unsigned long long clock = 0;
    for (size_t k = 0; k < n_tokens; k++) {
        const size_t len = prompt_len + k;                  /* positions this pass sees */
        const size_t before = k == 0 ? 0 : len - 1;         /* rows each layer held before it */
        const size_t n_chunks = (len + tile_rows - 1) / tile_rows;
        for (size_t layer = 0; layer < n_layers; layer++)
            for (size_t c = 0; c < n_chunks; c++) {
                /* 1. the prefetch of the next chunk */
                size_t nl = layer, npos = 0, nn = 0;
                if (c + 1 < n_chunks) {
                    npos = (c + 1) * tile_rows;
                    nn = min_sz(tile_rows, len - npos);
                } else if (layer + 1 < n_layers && before > 0) {
                    nl = layer + 1;
                    nn = min_sz(tile_rows, before);
                }
                if (nn) {
                    out->prefetch_queued++;
                    const Tile *h = find(lru, capacity, nl, npos);
                    if (h && h->rows >= nn)
                        out->prefetch_skipped++;
                }
                /* 2. the lookup */
                const size_t pos = c * tile_rows, n = min_sz(tile_rows, len - pos);
                out->lookups++;
                clock++;
                Tile *t = find(lru, capacity, layer, pos);
                if (t) {
                    out->hits++;
                } else {
                    out->misses++;
                    for (size_t i = 0; i < capacity; i++)
                        if (!t || (t->valid && (!lru[i].valid || lru[i].stamp < t->stamp)))
                            t = &lru[i];
                    if (t->valid)
                        out->evictions++;
                    *t = (Tile){ .valid = 1, .layer = layer, .pos = pos, .rows = 0 };
                }
                t->stamp = clock;
                const size_t reuse = min_sz(t->rows, n);
                out->rows_reused += reuse;
                out->rows_decompressed += n - reuse;
                if (t->rows < n)
                    t->rows = n;
            }
    }
}
