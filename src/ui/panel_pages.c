/* panel_pages.c: a paged cache's block tables (logical page -> physical
 * page, one line per sequence; a page more than one sequence maps is marked
 * shared) and its pool: used, free, cached, shared, prefix hits, copies on
 * write, evictions, the block-sparse policy's savings. */
#include <stdio.h>
#include <stdlib.h>

#include "kv/cache.h"
#include "ui/fmt.h"
#include "ui/panels.h"

#define PAGES_H 5 /* rule, one block table, three lines of counters */

int panel_pages_height(const Session *s)
{
    KvStats st;
    kv_stats(session_cache(s), &st);
    return st.page_rows ? PAGES_H + (int)session_batch(s) - 1 : 0;
}

/* Lay "text" items left to right from (*x, *y), wrapping inside r. */
static void flow(Frame *f, Rect r, int *x, int *y, int role, const char *text)
{
    int w = text_width(text);
    if (*x > 0 && *x + w > r.w)
        *x = 0, (*y)++;
    *x = frame_text(f, r, *x, *y, role, text) + 2;
}

/* Whether physical page pg is in the block table of a sequence other than seq. */
static int mapped_elsewhere(const size_t *tables, const size_t *n, size_t batch, size_t cap, size_t seq, size_t pg)
{
    for (size_t b = 0; b < batch; b++)
        for (size_t i = 0; b != seq && i < n[b]; i++)
            if (tables[b * cap + i] == pg)
                return 1;
    return 0;
}

/* Sequence seq's block table on line y: as many pages from the end as fit
 * (the newest matter most), a shared page followed by the shared glyph. */
static void block_table(Frame *f, Rect r, int y, const size_t *tables, const size_t *n, size_t batch, size_t cap,
                        size_t seq, size_t total)
{
    char item[64], label[32];
    const size_t *phys = tables + seq * cap;
    const int narrow = r.w < 40;
    if (batch == 1)
        snprintf(label, sizeof label, "pages");
    else if (narrow)
        snprintf(label, sizeof label, seq + 1 == batch ? "%zuf" : "%zu", seq);
    else
        snprintf(label, sizeof label, seq + 1 == batch ? "seq %zu fork" : "seq %zu", seq);
    int x = frame_text(f, r, 0, y, ROLE_DIM, label) + 1;
    if (batch > 1 && x < (narrow ? 3 : 12))
        x = narrow ? 3 : 12; /* the tables line up */
    if (n[seq] == 0) {
        frame_text(f, r, x, y, ROLE_DIM, seq + 1 == batch && batch > 1 ? "forked after the prefill" : "none yet");
        return;
    }
    size_t first = n[seq];
    int need = 0;
    while (first > 0) {
        size_t i = first - 1;
        int w = phys[i] < total ? snprintf(item, sizeof item, "%zu>%zu", i, phys[i])
                                : snprintf(item, sizeof item, "%zu>x", i);
        w += mapped_elsewhere(tables, n, batch, cap, seq, phys[i]); /* the shared glyph */
        if (x + need + w + 1 + frame_ellipsis_w(f) + 1 > r.w)
            break;
        need += w + 1;
        first--;
    }
    if (first > 0)
        x = frame_ellipsis(f, r, x, y, ROLE_DIM) + 1;
    for (size_t i = first; i < n[seq]; i++) {
        if (phys[i] >= total) { /* a page a policy gave back maps to nothing: x */
            snprintf(item, sizeof item, "%zu%s%s", i, "\u2192", "\u00d7");
            x = frame_text(f, r, x, y, ROLE_EVICTED, item) + 1;
            continue;
        }
        int shared = mapped_elsewhere(tables, n, batch, cap, seq, phys[i]);
        snprintf(item, sizeof item, "%zu%s%zu", i, "\u2192", phys[i]);
        x = frame_text(f, r, x, y, shared ? ROLE_SHARED : i + 1 == n[seq] ? ROLE_NEW : ROLE_NORMAL, item);
        if (shared)
            frame_put_glyph(f, r, x++, y, G_SLOT_SHARED, ROLE_SHARED);
        x++;
    }
}

void panel_pages(Frame *f, Rect r, const Session *s, int focused)
{
    const KvCache *c = session_cache(s);
    KvStats st;
    kv_stats(c, &st);
    if (!st.page_rows || r.h < 2)
        return;
    char title[96], item[96];
    const size_t batch = session_batch(s);
    if (batch > 1)
        snprintf(title, sizeof title, "block tables of %zu sequences: %zu row%s a page, pool of %zu", batch,
                 st.page_rows, fmt_s(st.page_rows), st.pages_total);
    else
        snprintf(title, sizeof title, "page table: %zu row%s a page, pool of %zu", st.page_rows,
                 fmt_s(st.page_rows), st.pages_total);
    frame_rule(f, r, 0, title, focused);
    /* logical -> physical of every sequence */
    const size_t cap = session_positions(s) / st.page_rows + 2;
    size_t *tables = malloc(batch * cap * sizeof *tables), *n = calloc(batch, sizeof *n);
    for (size_t b = 0; tables && n && b < batch; b++) {
        n[b] = c->ops->page_table ? c->ops->page_table(c, b, tables + b * cap, cap) : 0;
        if (n[b] > cap)
            n[b] = cap;
    }
    for (size_t b = 0; tables && n && b < batch; b++)
        block_table(f, r, 1 + (int)b, tables, n, batch, cap, b, st.pages_total);
    free(tables);
    free(n);
    int y = 1 + (int)batch, x = 0;
    /* what sharing did first: a narrow panel cuts the last lines */
    snprintf(item, sizeof item, "used %zu", st.pages_used);
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "shared %zu", st.pages_shared);
    flow(f, r, &x, &y, st.pages_shared ? ROLE_SHARED : ROLE_NORMAL, item);
    snprintf(item, sizeof item, "prefix hits %zu", st.prefix_hits);
    flow(f, r, &x, &y, st.prefix_hits ? ROLE_SHARED : ROLE_NORMAL, item);
    snprintf(item, sizeof item, "copy-on-write %zu", st.cow_copies);
    flow(f, r, &x, &y, st.cow_copies ? ROLE_SHARED : ROLE_NORMAL, item);
    snprintf(item, sizeof item, "free %zu", st.pages_free);
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "cached %zu", st.pages_cached);
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "waste %zu row%s", st.waste_rows, fmt_s(st.waste_rows));
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "evictions %zu", st.evictions);
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    if (st.sparse_on || st.pages_dropped) {
        char saved[32];
        snprintf(item, sizeof item, "block-sparse: %zu dropped, %zu active, %s saved", st.pages_dropped,
                 st.pages_active, fmt_bytes(saved, sizeof saved, (double)st.bytes_saved));
        flow(f, r, &x, &y, ROLE_WARN, item);
    }
}
