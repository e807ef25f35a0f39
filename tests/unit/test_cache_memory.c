/* test_cache_memory.c: the memory a cache reports is the memory it holds.
 *
 * Reserved: the heap's growth when the cache opens, as the C library's
 * allocator counts it (mallinfo2), against kv_bytes_reserved (for a paged
 * cache, against its pool: its reserved bytes are the pages mapped). Used: the
 * bytes of the rows attention can reach, walked block by block, against
 * kv_bytes_used. Neither side comes from the cache's own arithmetic. */
#include "testutil.h"

#include <malloc.h>

#include "kv/cache.h"

static size_t heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd; /* small chunks in use + mmapped ones */
}

/* Bytes of every row (and per-channel scales) the blocks of c describe. */
static size_t block_bytes(const KvCache *c)
{
    const KvGeometry *g = &c->geo;
    size_t bytes = 0;
    for (size_t l = 0; l < g->n_layers; l++)
        for (size_t s = 0; s < g->n_seqs; s++)
            for (size_t h = 0; h < g->n_kv_heads; h++)
                for (size_t b = 0; b < kv_n_blocks(c, l, s); b++) {
                    KvBlock blk;
                    kv_block(c, l, s, h, b, &blk);
                    bytes += blk.n * (format_row_bytes(blk.k_fmt, g->head_dim) +
                                      (g->k_only ? 0 : format_row_bytes(blk.v_fmt, g->head_dim)));
                    if (blk.k_chan)
                        bytes += 2 * g->head_dim * sizeof *blk.k_chan;
                }
    return bytes;
}

static void fill(KvCache *c, size_t n)
{
    const KvGeometry *g = &c->geo;
    float *row = calloc(g->n_kv_heads * g->head_dim, sizeof(float));
    Err e = { 0 };
    int tok = 3;
    for (size_t pos = 0; pos < n; pos++) {
        for (size_t i = 0; i < g->n_kv_heads * g->head_dim; i++)
            row[i] = (float)((pos + i) % 13) - 6.0f;
        for (size_t s = 0; s < g->n_seqs; s++)
            if (kv_reserve(c, s, pos, &tok, 1, NULL, &e) < 0)
                fail_msg("%s: reserve: %s", c->spec, e.msg);
        for (size_t l = 0; l < g->n_layers; l++)
            for (size_t s = 0; s < g->n_seqs; s++)
                if (kv_append(c, l, s, pos - kv_pos_shift(c, s), 1, row, row, NULL, &e) < 0) /* a shift cache's own */
                    fail_msg("%s: append: %s", c->spec, e.msg);
    }
    free(row);
}

static void test_reported_is_held(void **state)
{
    (void)state;
    static const char *specs[] = { "contiguous", "contiguous+quant:k=q8_0,v=q4_0", "ring:window=64,sinks=4",
                                   "mixed:hot=32,group=16", "mixed:hot=32,group=16,warm=q8_0,warm_rows=64",
                                   "h2o:budget=96,recent=32", "snapkv:budget=96,window=16",
                                   "paged:page=16", "shift:ctx=128,keep=4" };
    KvGeometry g = { .n_layers = 4, .n_seqs = 2, .n_kv_heads = 4, .head_dim = 64, .max_seq_len = 512,
                     .rope_theta = 10000.0 };
    g.codec = kernels_select("ref", NULL)->codec;
    const int heap_counted = heap_bytes() > 0; /* 0 under AddressSanitizer, whose allocator it does not see */
    if (!heap_counted)
        printf("  (the heap is not counted by this allocator: reserved bytes not checked)\n");
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        Err e = { 0 };
        size_t before = heap_bytes();
        KvCache *c = kv_open(specs[i], &g, &e);
        if (!c)
            fail_msg("%s: %s", specs[i], e.msg);
        KvStats st;
        kv_stats(c, &st);
        const size_t page_rows = 16, row_pair = 2 * g.head_dim * sizeof(float); /* paged:page=16, f32 */
        size_t grown = heap_bytes() - before, reserved = st.pages_total
                                                            ? st.pages_total * page_rows * g.n_layers * g.n_kv_heads *
                                                                  row_pair
                                                            : kv_bytes_reserved(c);
        /* allocator headers, page rounding and the cache's own bookkeeping */
        size_t slack = 64 * 1024 + reserved / 50;
        printf("  %-44s %s %8zu B, heap grew %8zu B\n", specs[i], st.pages_total ? "pool    " : "reserved",
               reserved, grown);
        if (heap_counted && (grown + slack < reserved || grown > reserved + slack))
            fail_msg("%s: reports %zu bytes reserved, the heap grew by %zu", specs[i], reserved, grown);
        static const size_t lengths[] = { 1, 33, 200 };
        for (size_t k = 0; k < 3; k++) {
            const size_t n = lengths[k];
            fill(c, n);
            if (kv_bytes_used(c) != block_bytes(c))
                fail_msg("%s after %zu positions: reports %zu bytes used, its blocks hold %zu", specs[i], n,
                         kv_bytes_used(c), block_bytes(c));
            kv_reset(c);
        }
        kv_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_reported_is_held) };
    return cmocka_run_group_tests_name("cache memory", tests, NULL, NULL);
}
