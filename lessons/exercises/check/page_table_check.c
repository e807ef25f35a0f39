/* page_table_check.c: checks lessons/exercises/page_table.c (lesson 6).
 *
 * The rows are real: the K rows (layer 0, KV head 0) the tiny model leaves
 * in an exact contiguous cache after a short generation. The checker puts
 * them in a pool page by page, the pages in a shuffled order with spare
 * pages between, and asks the learner for every position at several page
 * sizes; a wrong row is named by the mistake it matches. The page and
 * waste counts are compared with a real paged cache (paged:page=P) holding
 * the same positions: its kv_stats. */
#include <string.h>

#include "harness.h"
#include "page_table.h"

#define PROMPT 7
#define GENERATE 14

/* Why a row came back wrong, when it matches a known mistake. */
static const char *mistake(const PagedSeq *s, const float *got, size_t pos)
{
    const size_t P = s->page_rows, d = s->dim;
    if (got == s->pool + pos * d)
        return "the row where a contiguous cache would keep it: the block table was not used";
    if (got == s->pool + ((size_t)s->table[pos / P] + pos % P) * d)
        return "the page's index taken as a row index: a page is page_rows rows";
    const size_t pages = (s->len + P - 1) / P;
    if (pos % P < pages && got == s->pool + ((size_t)s->table[pos % P] * P + pos / P) * d)
        return "page and row swapped: the page is pos / page_rows, the row pos % page_rows";
    return NULL;
}

/* The engine's own count: a paged cache holding n positions of m. */
static int engine_stats(const Model *m, size_t P, size_t n, KvStats *st)
{
    char spec[32];
    snprintf(spec, sizeof spec, "paged:page=%zu", P);
    KvGeometry geo = model_kv_geometry(m, 1);
    Err e = { 0 };
    KvCache *c = kv_open(spec, &geo, &e);
    int prompt[PROMPT + GENERATE];
    for (size_t i = 0; i < n; i++)
        prompt[i] = (int)(i * 7 % m->cfg.vocab);
    GenOptions go = { .n_generate = 1 };
    int out;
    if (!c || generate(m, c, prompt, 1, n, &go, &out, NULL, NULL, &e) < 0) { /* n positions cached */
        printf("the engine's paged run failed: %s\n", e.msg);
        kv_free(c);
        return -1;
    }
    kv_stats(c, st);
    kv_free(c);
    return 0;
}

int main(void)
{
    Model m;
    if (harness_model(&m, "tiny") < 0)
        return 2;
    const int prompt[PROMPT] = { 2, 71, 82, 81, 82, 84, 59 };
    KvCache *cache;
    KvBlock b;
    if (harness_reference_rows(&m, prompt, PROMPT, GENERATE, &cache, &b) < 0)
        return 2;
    const size_t n = b.n, d = m.cfg.head_dim;
    printf("reference: %zu K rows of %zu values (tiny model, layer 0, KV head 0)\n", n, d);

    static const size_t page_sizes[] = { 1, 3, 4, 16, 32 };
    Tally t = { 0, 0 };
    for (size_t pi = 0; pi < sizeof page_sizes / sizeof page_sizes[0]; pi++) {
        const size_t P = page_sizes[pi], pages = (n + P - 1) / P, pool_pages = 2 * pages + 1;
        float *pool = calloc(pool_pages * P * d, sizeof(float));
        int *table = malloc(pages * sizeof(int));
        if (!pool || !table)
            return 2;
        for (size_t i = 0; i < pages; i++) /* scattered, backwards, every other page */
            table[i] = (int)(pool_pages - 1 - 2 * i);
        for (size_t pos = 0; pos < n; pos++)
            memcpy(pool + ((size_t)table[pos / P] * P + pos % P) * d, harness_row(b.k, b.k_stride, pos),
                   d * sizeof(float));
        PagedSeq s = { .page_rows = P, .dim = d, .pool = pool, .table = table, .len = n };
        for (size_t pos = 0; pos < n; pos++) {
            const float *got = paged_row(&s, pos), *want = pool + ((size_t)table[pos / P] * P + pos % P) * d;
            if (tally(&t, got == want)) {
                const char *why = mistake(&s, got, pos);
                printf("page size %zu, position %zu: expected the row of pool page %d, row %zu%s%s\n", P, pos,
                       table[pos / P], pos % P, why ? ": got " : "", why ? why : "");
            }
        }
        KvStats st;
        if (engine_stats(&m, P, n, &st) < 0)
            return 2;
        size_t got_pages = paged_pages(&s), got_waste = paged_tail_waste(&s);
        if (tally(&t, got_pages == st.pages_used))
            printf("page size %zu, %zu positions: the engine's paged cache maps %zu pages, you count %zu\n", P, n,
                   st.pages_used, got_pages);
        if (tally(&t, got_waste == st.waste_rows))
            printf("page size %zu, %zu positions: the engine's paged cache leaves %zu empty rows, you count %zu\n",
                   P, n, st.waste_rows, got_waste);
        free(pool);
        free(table);
    }
    kv_free(cache);
    model_free(&m);
    return verdict(&t, "rows and counts");
}
