/* test_radix.c: the radix prefix tree over a paged pool (kv/radix.h), on a
 * seeded random workload of many operations over a 3-token vocabulary (so
 * prefixes are shared often, edges split inside pages):
 *   - every match equals a brute-force longest common prefix over all the
 *     sequences the tree should hold (inserted, then cut by evictions);
 *   - the pages a match returns hold the rows of those very tokens (each row
 *     carries its token, position and a hash of its whole prefix), also
 *     after the tail page was copied on write for a branch;
 *   - each eviction takes the least recently used leaf among those no
 *     running sequence locks, and the locked sequences' rows survive;
 *     evicting all it may frees exactly the pages radix_evictable counts;
 *   - pages are conserved: free + used = pool, each page's holders are the
 *     tree's holds plus the live sequences' mappings. */
#include "testutil.h"

#include "kv/cache.h"
#include "kv/radix.h"

#define PAGE 4
#define POOL 48
#define MAX_LEN 40
#define N_SEQS 3      /* slot 0 runs the operation; 1, 2 hold locked requests */
#define MAX_CACHED 4096

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t uniform(size_t n)
{
    return (size_t)(next_u64() % n);
}

/* What a row of token tokens[pos] at pos holds: K = (token, pos, prefix
 * hash, 0), V the same; f32, so it reads back exactly. */
static float prefix_hash(const int *tokens, size_t pos)
{
    uint32_t h = 7;
    for (size_t i = 0; i <= pos; i++)
        h = h * 31 + (uint32_t)tokens[i] + 1;
    return (float)(h % 100003);
}

static void row_of(const int *tokens, size_t pos, float *row)
{
    row[0] = (float)tokens[pos], row[1] = (float)pos, row[2] = prefix_hash(tokens, pos), row[3] = 0;
}

/* The brute force: every sequence the tree should spell. */
typedef struct {
    int tok[MAX_LEN];
    size_t n;
} Seq;

static Seq cached[MAX_CACHED];
static size_t n_cached;

static size_t brute_match(const int *q, size_t n)
{
    size_t best = 0;
    for (size_t s = 0; s < n_cached; s++) {
        size_t i = 0;
        while (i < n && i < cached[s].n && cached[s].tok[i] == q[i])
            i++;
        best = i > best ? i : best;
    }
    return best;
}

/* Rows 0 .. n-1 of slot seq hold tokens' rows. */
static void expect_rows(const KvCache *c, size_t seq, const int *tokens, size_t n)
{
    assert_int_equal(kv_length(c, 0, seq), n);
    for (size_t b = 0; b < kv_n_blocks(c, 0, seq); b++) {
        KvBlock blk;
        kv_block(c, 0, seq, 0, b, &blk);
        for (size_t i = 0; i < blk.n; i++) {
            float want[4];
            const float *k = (const float *)(blk.k + i * blk.k_stride);
            row_of(tokens, blk.pos + i, want);
            if (memcmp(k, want, sizeof want) != 0)
                fail_msg("slot %zu row %zu: (%g %g %g), want (%g %g %g)", seq, blk.pos + i, k[0], k[1], k[2], want[0],
                         want[1], want[2]);
        }
    }
}

/* Write rows from .. n-1 of tokens into slot seq. */
static void run_rows(KvCache *c, size_t seq, const int *tokens, size_t from, size_t n)
{
    Err e = { 0 };
    if (n <= from)
        return;
    float rows[MAX_LEN][4];
    for (size_t p = from; p < n; p++)
        row_of(tokens, p, rows[p - from]);
    if (kv_reserve(c, seq, from, tokens + from, n - from, NULL, &e) < 0 ||
        kv_append(c, 0, seq, from, n - from, &rows[0][0], &rows[0][0], NULL, &e) < 0)
        fail_msg("writing rows %zu..%zu: %s", from, n, e.msg);
}

/* A running request: its slot, tokens and the node its match locked. */
typedef struct {
    int live;
    int tok[MAX_LEN];
    size_t n;
    RadixNode *node;
} Running;

static void expect_pages_conserved(const KvCache *c, const RadixTree *t, const Running *run)
{
    KvStats st;
    kv_stats(c, &st);
    assert_int_equal(st.pages_free + st.pages_used, st.pages_total);
    assert_int_equal(st.pages_cached, 0); /* the hash is off: no page waits unheld */
    size_t mapped[POOL] = { 0 }, table[POOL], held = 0;
    for (size_t s = 0; s < N_SEQS; s++) {
        if (s > 0 && !run[s].live)
            continue;
        size_t n = c->ops->page_table(c, s, table, POOL);
        for (size_t k = 0; k < n; k++)
            mapped[table[k]]++;
    }
    for (size_t pg = 0; pg < POOL; pg++) {
        assert_int_equal(c->ops->share->refs(c, pg), radix_page_holds(t, pg) + mapped[pg]);
        held += radix_page_holds(t, pg) > 0;
    }
    RadixStats rs;
    radix_stats(t, &rs);
    assert_int_equal(rs.pages_held, held);
}

/* The leaf eviction must take: unlocked, least recently used, the first in
 * depth-first order among equals; its whole path into path[]. */
static size_t expected_victim(const RadixTree *t, int *path, size_t *start)
{
    static RadixView v[4 * MAX_CACHED];
    const size_t n = radix_view(t, v, 4 * MAX_CACHED);
    assert_true(n <= 4 * MAX_CACHED);
    size_t best = SIZE_MAX;
    for (size_t k = 0; k < n; k++)
        if (v[k].leaf && v[k].lock == 0 && (best == SIZE_MAX || v[k].stamp < v[best].stamp))
            best = k;
    if (best == SIZE_MAX)
        return SIZE_MAX;
    for (size_t k = best; k != SIZE_MAX; k = v[k].parent)
        memcpy(path + v[k].start, v[k].tokens, v[k].n * sizeof *path);
    *start = v[best].start;
    return v[best].id;
}

/* Evict until `want` pages are free, checking each victim, and cut the
 * brute force's sequences that ran through it. */
static void make_room(KvCache *c, RadixTree *t, size_t want, size_t *evictions)
{
    KvStats st;
    for (kv_stats(c, &st); st.pages_free < want; kv_stats(c, &st)) {
        int path[MAX_LEN];
        size_t start = 0, id;
        const size_t want_id = expected_victim(t, path, &start);
        if (!radix_evict_one(t, &id)) {
            assert_int_equal(want_id, SIZE_MAX);
            return;
        }
        assert_int_equal(id, want_id);
        (*evictions)++;
        for (size_t s = 0; s < n_cached; s++)
            if (cached[s].n > start && memcmp(cached[s].tok, path, (start + 1) * sizeof *path) == 0)
                cached[s].n = start;
    }
}

static void test_matches_brute_force_and_conserves_pages(void **state)
{
    (void)state;
    Err e = { 0 };
    KvGeometry g = { .n_layers = 1, .n_seqs = N_SEQS, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = MAX_LEN };
    char spec[64];
    snprintf(spec, sizeof spec, "paged:page=%d,pages=%d", PAGE, POOL);
    KvCache *c = kv_open(spec, &g, &e);
    assert_non_null(c);
    c->ops->share->hash(c, 0);
    RadixTree *t = radix_new(c, &e);
    assert_non_null(t);
    rng_state = 0x9e3779b97f4a7c15ULL;
    n_cached = 0;
    Running run[N_SEQS] = { 0 };
    size_t hits = 0, evictions = 0, splits_in_page = 0, table[POOL];
    for (int op = 0; op < 3000; op++) {
        /* a query: a cached sequence's prefix, perturbed and extended, or fresh */
        int q[MAX_LEN];
        size_t n = 1 + uniform(MAX_LEN - 1), keep = 0;
        if (n_cached && uniform(4)) {
            const Seq *s = &cached[uniform(n_cached)];
            keep = s->n ? uniform(s->n + 1) : 0;
            keep = keep < n ? keep : n;
            memcpy(q, s->tok, keep * sizeof *q);
        }
        for (size_t i = keep; i < n; i++)
            q[i] = (int)uniform(3);
        /* a running request may hand its rows to the tree early, its lock
         * left where it was (as a forked sample's siblings do): those pages
         * are then held by unlocked nodes yet mapped, and evicting them
         * frees nothing */
        for (size_t r = 1; r < N_SEQS; r++)
            if (run[r].live && uniform(8) == 0) {
                c->ops->page_table(c, r, table, POOL);
                assert_int_equal(radix_insert(t, run[r].tok, run[r].n, table, NULL, &e), 0);
                assert_true(n_cached < MAX_CACHED);
                memcpy(cached[n_cached].tok, run[r].tok, run[r].n * sizeof(int));
                cached[n_cached++].n = run[r].n;
            }
        /* a locked request may finish: its rows kept, then its lock goes */
        for (size_t r = 1; r < N_SEQS; r++)
            if (run[r].live && uniform(3) == 0) {
                expect_rows(c, r, run[r].tok, run[r].n);
                c->ops->page_table(c, r, table, POOL);
                assert_int_equal(radix_insert(t, run[r].tok, run[r].n, table, NULL, &e), 0);
                radix_lock(t, run[r].node, -1);
                kv_drop(c, r);
                assert_true(n_cached < MAX_CACHED);
                memcpy(cached[n_cached].tok, run[r].tok, run[r].n * sizeof(int));
                cached[n_cached++].n = run[r].n;
                run[r].live = 0;
            }
        if (op % 200 == 199) { /* now and then, evict all it may: exactly radix_evictable's pages come free */
            KvStats before, after;
            kv_stats(c, &before);
            const size_t ev = radix_evictable(t);
            make_room(c, t, POOL + 1, &evictions);
            kv_stats(c, &after);
            assert_int_equal(after.pages_free, before.pages_free + ev);
            assert_int_equal(radix_evictable(t), 0);
        }
        size_t m = 0;
        RadixNode *node;
        assert_int_equal(radix_match(t, q, n, table, &node, &m, &e), 0);
        assert_int_equal(m, brute_match(q, n));
        hits += m > 0;
        splits_in_page += m % PAGE != 0;
        radix_lock(t, node, 1);
        /* room for the rest and the copy of a partly matched page */
        make_room(c, t, (n + PAGE - 1) / PAGE - m / PAGE + 1, &evictions);
        KvStats st;
        kv_stats(c, &st);
        if (st.pages_free < (n + PAGE - 1) / PAGE - m / PAGE + 1) { /* every leaf locked: skip this one */
            radix_lock(t, node, -1);
            continue;
        }
        /* the matched pages, adopted, hold exactly q's rows; then the rest is run */
        size_t slot = 0;
        for (size_t r = 1; r < N_SEQS && uniform(2); r++)
            if (!run[r].live) {
                slot = r;
                break;
            }
        assert_int_equal(c->ops->share->adopt(c, slot, table, m, q, &e), 0);
        expect_rows(c, slot, q, m);
        run_rows(c, slot, q, m, n);
        expect_rows(c, slot, q, n);
        if (slot) { /* it keeps running, its match locked */
            run[slot].live = 1, run[slot].node = node, run[slot].n = n;
            memcpy(run[slot].tok, q, n * sizeof *q);
        } else {
            c->ops->page_table(c, 0, table, POOL);
            assert_int_equal(radix_insert(t, q, n, table, NULL, &e), 0);
            radix_lock(t, node, -1);
            kv_drop(c, 0);
            assert_true(n_cached < MAX_CACHED);
            memcpy(cached[n_cached].tok, q, n * sizeof *q);
            cached[n_cached++].n = n;
        }
        for (size_t r = 1; r < N_SEQS; r++) /* evictions never touch a running request's rows */
            if (run[r].live)
                expect_rows(c, r, run[r].tok, run[r].n);
        expect_pages_conserved(c, t, run);
    }
    /* the workload exercised what it is for */
    assert_true(hits > 1000);
    assert_true(evictions > 100);
    assert_true(splits_in_page > 100);
    for (size_t r = 1; r < N_SEQS; r++)
        if (run[r].live) {
            radix_lock(t, run[r].node, -1);
            kv_drop(c, r);
        }
    radix_free(t);
    KvStats st;
    kv_stats(c, &st);
    assert_int_equal(st.pages_free, POOL); /* the tree gave every page back */
    kv_free(c);
}

/* A cache without pages cannot hold a tree: refused in words. */
static void test_needs_a_paged_cache(void **state)
{
    (void)state;
    Err e = { 0 };
    KvGeometry g = { .n_layers = 1, .n_seqs = 1, .n_kv_heads = 1, .head_dim = 4, .max_seq_len = 16 };
    KvCache *c = kv_open("contiguous", &g, &e);
    assert_non_null(c);
    assert_null(radix_new(c, &e));
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "paged"));
    kv_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_brute_force_and_conserves_pages),
        cmocka_unit_test(test_needs_a_paged_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
