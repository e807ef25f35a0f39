/* mla_tiles.c: the MLA notes' LRU of decompressed tiles and its prefetch queue.
 *
 * The MLA notes' CompressedKVCacheMLA keeps threadgroup_cache_size (4) tiles of
 * decompressed K/V, checked before decompressing a block again; and a queue
 * of prefetches of the next block, issued while the current one is worked
 * on. Here a tile is MLA_TILE_ROWS positions of one layer and sequence, all
 * heads' K_nope and V plus the RoPE key; the prefetch is a real
 * __builtin_prefetch over the latent rows' cache lines, its requests
 * counted as the MLA notes' queue statistics. */
#include <stdlib.h>
#include <string.h>

#include "model/mla_state.h"
#include "util/lines.h" /* CACHE_LINE */

static size_t tile_floats(const MlaState *st)
{
    return MLA_TILE_ROWS * (st->H * (st->dn + st->dv) + st->p);
}

int mla_tiles_reserve(MlaState *st, size_t capacity, Err *e)
{
    if (st->reserved && st->capacity == capacity)
        return 0;
    size_t slots = capacity ? capacity : 1, per = tile_floats(st);
    MlaTile *tiles = calloc(slots, sizeof *tiles);
    float *mem = malloc(slots * per * sizeof(float));
    if (!tiles || !mem) {
        free(tiles);
        free(mem);
        return err_set(e, ERR_RUNTIME, "MLA: out of memory for %zu decompressed tiles of %zu bytes", slots,
                       per * sizeof(float));
    }
    free(st->tiles);
    free(st->tile_mem);
    for (size_t i = 0; i < slots; i++) {
        float *t = mem + i * per;
        tiles[i].k_nope = t;
        tiles[i].v = t + MLA_TILE_ROWS * st->H * st->dn;
        tiles[i].k_rope = t + MLA_TILE_ROWS * st->H * (st->dn + st->dv);
    }
    st->tiles = tiles;
    st->tile_mem = mem;
    st->tiles_alloc = slots;
    st->capacity = capacity;
    st->reserved = 1;
    st->stats.tiles.capacity = capacity;
    st->stats.tiles.tile_rows = MLA_TILE_ROWS;
    return 0;
}

static int same_key(const MlaTile *t, size_t layer, size_t seq, size_t pos, Format fmt)
{
    return t->valid && t->layer == layer && t->seq == seq && t->pos == pos && t->fmt == fmt;
}

MlaTile *mla_tiles_get(MlaState *st, int use_lru, size_t layer, size_t seq, size_t pos, Format fmt)
{
    MlaTileStats *ts = &st->stats.tiles;
    if (!use_lru || st->capacity == 0) {
        MlaTile *t = &st->tiles[0];
        t->valid = 0;
        t->rows = 0;
        return t;
    }
    ts->lookups++;
    st->clock++;
    MlaTile *victim = NULL;
    for (size_t i = 0; i < st->capacity; i++) {
        MlaTile *t = &st->tiles[i];
        if (same_key(t, layer, seq, pos, fmt)) {
            ts->hits++;
            t->stamp = st->clock;
            return t;
        }
        if (!victim || (victim->valid && (!t->valid || t->stamp < victim->stamp)))
            victim = t;
    }
    ts->misses++;
    if (victim->valid)
        ts->evictions++;
    *victim = (MlaTile){ .valid = 1, .layer = layer, .seq = seq, .pos = pos, .fmt = fmt, .rows = 0,
                         .stamp = st->clock, .k_nope = victim->k_nope, .v = victim->v, .k_rope = victim->k_rope };
    return victim;
}

int mla_tiles_holds(const MlaState *st, size_t layer, size_t seq, size_t pos, Format fmt, size_t rows)
{
    for (size_t i = 0; i < st->capacity; i++)
        if (same_key(&st->tiles[i], layer, seq, pos, fmt) && st->tiles[i].rows >= rows)
            return 1;
    return 0;
}

void mla_tiles_forget_seq(MlaState *st, size_t seq)
{
    for (size_t i = 0; i < st->tiles_alloc; i++)
        if (st->tiles[i].seq == seq)
            st->tiles[i].valid = 0;
}

void mla_prefetch_request(MlaState *st, const void *addr, size_t bytes, int skip)
{
    MlaPrefetchStats *ps = &st->stats.prefetch;
    ps->queued++;
    if (skip) {
        ps->skipped++;
        return;
    }
    const char *p = addr;
    for (size_t off = 0; off < bytes; off += CACHE_LINE)
        __builtin_prefetch(p + off, 0, 3); /* a read, kept in every cache level */
    ps->issued++;
    ps->lines += (bytes + CACHE_LINE - 1) / CACHE_LINE;
    if (st->n_in_flight == MLA_PREFETCH_DEPTH) { /* the oldest is retired unread */
        memmove(st->in_flight, st->in_flight + 1, (MLA_PREFETCH_DEPTH - 1) * sizeof st->in_flight[0]);
        st->n_in_flight--;
        ps->expired++;
    }
    st->in_flight[st->n_in_flight++] = (uintptr_t)addr;
    ps->in_flight = st->n_in_flight;
}

void mla_prefetch_arrive(MlaState *st, const void *addr)
{
    MlaPrefetchStats *ps = &st->stats.prefetch;
    for (size_t i = 0; i < st->n_in_flight; i++)
        if (st->in_flight[i] == (uintptr_t)addr) {
            memmove(st->in_flight + i, st->in_flight + i + 1,
                    (st->n_in_flight - i - 1) * sizeof st->in_flight[0]);
            st->n_in_flight--;
            ps->used++;
            break;
        }
    ps->in_flight = st->n_in_flight;
}
