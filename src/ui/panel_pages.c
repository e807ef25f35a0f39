/* panel_pages.c: a paged cache's page table (logical page -> physical page
 * of sequence 0) and its pool: used, free, cached, shared, prefix hits,
 * copies on write, evictions, the block-sparse policy's savings. */
#include <stdio.h>
#include <stdlib.h>

#include "kv/cache.h"
#include "ui/fmt.h"
#include "ui/panels.h"

#define PAGES_H 5

int panel_pages_height(const Session *s)
{
    KvStats st;
    kv_stats(session_cache(s), &st);
    return st.page_rows ? PAGES_H : 0;
}

/* Lay "text" items left to right from (*x, *y), wrapping inside r. */
static void flow(Frame *f, Rect r, int *x, int *y, int role, const char *text)
{
    int w = text_width(text);
    if (*x > 0 && *x + w > r.w)
        *x = 0, (*y)++;
    *x = frame_text(f, r, *x, *y, role, text) + 2;
}

void panel_pages(Frame *f, Rect r, const Session *s, int focused)
{
    const KvCache *c = session_cache(s);
    KvStats st;
    kv_stats(c, &st);
    if (!st.page_rows || r.h < 2)
        return;
    char title[96], item[96];
    snprintf(title, sizeof title, "page table: %zu row%s a page, pool of %zu", st.page_rows, fmt_s(st.page_rows),
             st.pages_total);
    frame_rule(f, r, 0, title, focused);
    /* logical -> physical, as far as the width allows */
    size_t cap = session_positions(s) / st.page_rows + 2;
    size_t *phys = malloc(cap * sizeof *phys);
    size_t n = phys && c->ops->page_table ? c->ops->page_table(c, 0, phys, cap) : 0;
    int x = frame_text(f, r, 0, 1, ROLE_DIM, "pages") + 1;
    if (n > cap)
        n = cap;
    if (n == 0)
        frame_text(f, r, x, 1, ROLE_DIM, "none yet");
    /* the newest pages matter most: keep as many from the end as fit */
    size_t first = n;
    int need = 0;
    while (first > 0) {
        size_t i = first - 1;
        int w = phys[i] < st.pages_total ? snprintf(item, sizeof item, "%zu>%zu", i, phys[i])
                                         : snprintf(item, sizeof item, "%zu>x", i);
        if (x + need + w + 1 + 2 > r.w)
            break;
        need += w + 1;
        first--;
    }
    if (first > 0) {
        frame_put_glyph(f, r, x, 1, G_ELLIPSIS, ROLE_DIM);
        x += 2;
    }
    for (size_t i = first; i < n; i++) {
        /* a page a policy gave back maps to nothing: x */
        if (phys[i] < st.pages_total)
            snprintf(item, sizeof item, "%zu%s%zu", i, "\u2192", phys[i]);
        else
            snprintf(item, sizeof item, "%zu%s%s", i, "\u2192", "\u00d7");
        x = frame_text(f, r, x, 1, phys[i] < st.pages_total ? (i + 1 == n ? ROLE_NEW : ROLE_NORMAL) : ROLE_EVICTED,
                       item) + 1;
    }
    free(phys);
    int y = 2;
    x = 0;
    snprintf(item, sizeof item, "used %zu", st.pages_used);
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "free %zu", st.pages_free);
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "cached %zu", st.pages_cached);
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "shared %zu", st.pages_shared);
    flow(f, r, &x, &y, st.pages_shared ? ROLE_SHARED : ROLE_NORMAL, item);
    snprintf(item, sizeof item, "waste %zu row%s", st.waste_rows, fmt_s(st.waste_rows));
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "prefix hits %zu", st.prefix_hits);
    flow(f, r, &x, &y, ROLE_NORMAL, item);
    snprintf(item, sizeof item, "copy-on-write %zu", st.cow_copies);
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
