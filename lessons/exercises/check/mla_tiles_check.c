/* mla_tiles_check.c: checks lessons/exercises/mla_tiles.c (lesson 14).
 *
 * The learner's tile_counts must give, for each of several generations,
 * the counts kvscope's own tile LRU and prefetch queue kept (MlaStats, read
 * after the last pass) when mla-tiny ran them on the decompress path
 * through a contiguous cache: short prompts whose tiles stay held, prompts
 * that cross a tile's edge, contexts of more tiles than the LRU holds, and
 * LRUs of 1 to 8 tiles. */
#include <string.h>

#include "harness.h"
#include "mla_tiles.h"
#include "model/mla.h"

typedef struct {
    MlaStats st;
    int seen;
} Last;

static int keep_stats(void *user, const StepReport *r)
{
    Last *l = user;
    const MlaStats *st = r->state ? mla_state_stats(r->state->mla) : NULL;
    if (st) {
        l->st = *st;
        l->seen = 1;
    }
    return 0;
}

/* The engine's counts of one generation; 0, or -1 after printing why. */
static int engine_counts(Model *m, size_t plen, size_t n_tokens, size_t capacity, TileCounts *out)
{
    m->mla_path = MLA_DECOMPRESS;
    m->mla_tiles = capacity;
    KvGeometry geo = model_kv_geometry(m, 1);
    Err e = { 0 };
    KvCache *cache = kv_open("contiguous", &geo, &e);
    int prompt[256], gen[256];
    for (size_t i = 0; i < plen; i++)
        prompt[i] = (int)((7 * i + 3) % 256);
    GenOptions go = { .n_generate = n_tokens };
    Last last = { .seen = 0 };
    int rc = cache ? generate(m, cache, prompt, 1, plen, &go, gen, keep_stats, &last, &e) : -1;
    kv_free(cache);
    if (rc < 0 || !last.seen) {
        printf("the reference run failed: %s\n", rc < 0 ? e.msg : "no MLA statistics");
        return -1;
    }
    const MlaTileStats *t = &last.st.tiles;
    const MlaPrefetchStats *p = &last.st.prefetch;
    *out = (TileCounts){ t->lookups, t->hits,        t->misses,    t->evictions,
                         t->rows_reused, t->rows_decompressed, p->queued, p->skipped };
    return 0;
}

/* The eight counts in the order of TileCounts. */
static void as_list(const TileCounts *c, unsigned long long v[8])
{
    v[0] = c->lookups, v[1] = c->hits, v[2] = c->misses, v[3] = c->evictions;
    v[4] = c->rows_reused, v[5] = c->rows_decompressed, v[6] = c->prefetch_queued, v[7] = c->prefetch_skipped;
}

int main(void)
{
    static const struct {
        size_t plen, tokens, capacity;
    } runs[] = { { 8, 16, 4 }, { 60, 10, 4 }, { 127, 4, 4 }, { 130, 6, 4 }, { 200, 16, 4 },
                 { 100, 20, 8 }, { 70, 5, 1 }, { 190, 12, 3 }, { 1, 40, 2 } };
    static const char *const what[8] = { "lookups",   "hits",          "misses",          "evictions",
                                         "rows_reused", "rows_decompressed", "prefetch_queued", "prefetch_skipped" };
    static const char *const why[8] = {
        "one per chunk, per layer, per pass",
        "a tile of the same layer and first position still held",
        "lookups that found no tile",
        "misses that found no empty slot: the least recently used tile goes",
        "the rows a held tile already had: a growing last tile keeps its old ones",
        "the rows a tile did not have yet",
        "one per chunk except the last layer's last; none to the next layer in the prefill",
        "the requested tile already held with every row of its chunk",
    };
    Model m;
    if (harness_model(&m, "mla-tiny") < 0)
        return 1;
    const size_t n_layers = m.cfg.n_layers;
    printf("reference: kvscope's tile LRU and prefetch queue (mla-tiny, %zu layers, decompress, tiles of %d "
           "rows) on %zu generations\n",
           n_layers, MLA_TILE_ROWS, sizeof runs / sizeof runs[0]);
    Tally t = { 0, 0 };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        TileCounts want, got;
        if (engine_counts(&m, runs[r].plen, runs[r].tokens, runs[r].capacity, &want) < 0)
            return 1;
        memset(&got, 0, sizeof got);
        tile_counts(n_layers, runs[r].plen, runs[r].tokens, runs[r].capacity, MLA_TILE_ROWS, &got);
        unsigned long long w[8], g[8];
        as_list(&want, w);
        as_list(&got, g);
        int ok = memcmp(w, g, sizeof w) == 0;
        if (tally(&t, ok)) {
            printf("prompt %zu, %zu tokens, LRU of %zu tiles: the counts differ\n", runs[r].plen, runs[r].tokens,
                   runs[r].capacity);
            for (int i = 0; i < 8; i++)
                if (w[i] != g[i])
                    printf("  %-17s expected %llu, got %llu (%s)\n", what[i], w[i], g[i], why[i]);
        }
    }
    model_free(&m);
    return verdict(&t, "generations");
}
