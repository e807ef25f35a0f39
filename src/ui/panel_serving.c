/* panel_serving.c: many requests served over one page pool, on the
 * simulation screen (`view --serve`), read from the record
 * (sim/serve_replay.h):
 *
 *   what the step did
 *   the pool: one cell per page, the request holding it (a page two
 *   requests map: the shared glyph; free: dim)
 *   the requests: waiting, running (positions held), done
 *   the run so far: preemptions, prefix hits, time to first token
 *   with the radix prefix cache: its tree, a node a line indented by depth
 *   (tokens on its edge, pages it holds, requests running below it) */
#include <stdio.h>

#include "ui/fmt.h"
#include "ui/panels.h"

/* A request's mark in the pool: 0-9, a-z, A-Z, then '#'. */
static char mark_of(int r)
{
    static const char marks[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    return r >= 0 && r < (int)(sizeof marks - 1) ? marks[r] : '#';
}

static void draw_pool(Frame *f, Rect r, const ServeReplay *sr, const int *owner)
{
    const int per_row = r.w >= 8 ? r.w : 8;
    for (size_t p = 0; p < sr->pages_total; p++) {
        const int x = (int)(p % (size_t)per_row), y = (int)(p / (size_t)per_row);
        if (owner[p] == SERVE_PAGE_FREE)
            frame_put_glyph(f, r, x, y, G_SLOT_EMPTY, ROLE_DIM);
        else if (owner[p] == SERVE_PAGE_SHARED)
            frame_put_glyph(f, r, x, y, G_SLOT_SHARED, ROLE_SHARED);
        else if (owner[p] == SERVE_PAGE_CACHED)
            frame_put_glyph(f, r, x, y, G_SLOT_EXACT, ROLE_DIM);
        else
            frame_put(f, r, x, y, (uint32_t)mark_of(owner[p]), owner[p] % 2 ? ROLE_HEAT2 : ROLE_HEAT3);
    }
}

/* The requests in one state, as marks (with positions held when running). */
static int draw_requests(Frame *f, Rect r, int y, const char *label, const ServeReplay *sr,
                         const unsigned char *state, const size_t *held, int want)
{
    int x = frame_text(f, r, 0, y, ROLE_DIM, label) + 1, n = 0;
    for (size_t q = 0; q < sr->n_requests; q++) {
        if (state[q] != want)
            continue;
        char item[32];
        if (want == SERVE_RUNNING)
            snprintf(item, sizeof item, "%c:%zu", mark_of((int)q), held[q]);
        else
            snprintf(item, sizeof item, "%c", mark_of((int)q));
        if (x + (int)text_width(item) + frame_ellipsis_w(f) > r.w) {
            frame_ellipsis(f, r, x, y, ROLE_DIM);
            break;
        }
        x = frame_text(f, r, x, y, want == SERVE_RUNNING ? ROLE_NORMAL : ROLE_DIM, item) + 1;
        n++;
    }
    if (n == 0)
        frame_text(f, r, x, y, ROLE_DIM, "none");
    return y + 1;
}

/* The radix tree after the step, from row y down to the panel's bottom:
 * a node a line, indented two columns a level (deeper than 8 levels drawn
 * at 8), what does not fit summed up on the last line. */
static void draw_tree(Frame *f, Rect b, int y, const ServeReplay *sr, size_t step)
{
    const RadixView *t = sr->tree + sr->tree_at[step - 1];
    const size_t n = sr->tree_at[step] - sr->tree_at[step - 1];
    size_t tokens = 0;
    for (size_t k = 0; k < n; k++)
        tokens += t[k].n;
    char title[160];
    snprintf(title, sizeof title, "the radix tree: %zu node%s, %zu tokens (a node: its tokens, pages, requests "
             "running below)", n, fmt_s(n), tokens);
    frame_rule(f, rect_sub(b, 0, y++, b.w, 1), 0, title, 0);
    if (n == 0) {
        frame_text(f, b, 0, y, ROLE_DIM, "empty: no request has finished its prompt yet");
        return;
    }
    for (size_t k = 0; k < n && y < b.h; k++, y++) {
        if (y == b.h - 1 && k + 1 < n) {
            frame_print(f, b, 0, y, ROLE_DIM, "... %zu more node%s", n - k, fmt_s(n - k));
            break;
        }
        const int indent = 2 * (int)(t[k].depth < 8 ? t[k].depth - 1 : 7);
        char item[96];
        int len = snprintf(item, sizeof item, "%s %zu tok, %zu pg (pos %zu..%zu)", t[k].leaf ? "-" : "+", t[k].n,
                           t[k].n_pages, t[k].start, t[k].start + t[k].n - 1);
        if (t[k].lock && len > 0 && (size_t)len < sizeof item)
            snprintf(item + len, sizeof item - (size_t)len, ", %zu running", t[k].lock);
        frame_text(f, b, indent, y, t[k].lock ? ROLE_NORMAL : ROLE_DIM, item);
    }
}

void panel_serving(Frame *f, Rect b, const View *v)
{
    const ServeReplay *sr = v->serving;
    const ServeResult *res = &sr->result;
    const size_t step = v->replay_step;
    const ServeOptions *o = &sr->o;
    char title[256];
    if (step == 0) {
        frame_print(f, b, 0, 0, ROLE_NORMAL, "Step 0: %zu requests will arrive (%.3g a step); Space runs the "
                    "first engine step", sr->n_requests, o->rate);
    } else {
        const ServeStep *st = &res->steps[step - 1];
        frame_print(f, b, 0, 0, ROLE_NORMAL, "Step %zu: %zu token%s decoded, %zu prompt token%s prefilled%s%zu "
                    "preempted", st->step, st->decode_tokens, fmt_s(st->decode_tokens), st->prefill_tokens,
                    fmt_s(st->prefill_tokens), st->preempted ? "; " : ", ", st->preempted);
    }
    snprintf(title, sizeof title, "model %s serving %zu requests: %zu slots, %zu tokens a step, cache %s",
             sr->model, sr->n_requests, sr->slots, o->token_budget, sr->cache);
    frame_rule(f, rect_sub(b, 0, 1, b.w, 1), 0, title, 0);
    snprintf(title, sizeof title, "the pool: %zu pages of %zu rows (a mark: the request holding the page%s)",
             sr->pages_total, sr->page_rows, sr->o.prefix == SERVE_PREFIX_RADIX ? "; dim filled: the tree's" : "");
    frame_rule(f, rect_sub(b, 0, 2, b.w, 1), 0, title, 0);
    const int pool_h = (int)((sr->pages_total + (size_t)b.w - 1) / (size_t)(b.w > 8 ? b.w : 8));
    if (step == 0) {
        frame_text(f, b, 0, 3, ROLE_DIM, "every page free; no request has arrived");
        return;
    }
    const KvStats *pool = &res->steps[step - 1].pool;
    const int *owner = sr->owner + (step - 1) * sr->pages_total;
    const unsigned char *state = sr->state + (step - 1) * sr->n_requests;
    const size_t *held = sr->held + (step - 1) * sr->n_requests;
    draw_pool(f, rect_sub(b, 0, 3, b.w, pool_h), sr, owner);
    int y = 3 + pool_h;
    const ServeStep *now = &res->steps[step - 1];
    if (o->prefix == SERVE_PREFIX_RADIX)
        frame_print(f, b, 0, y++, ROLE_NORMAL, "used %zu  shared %zu  free %zu  kept by the tree %zu  evicted %zu  "
                    "rows empty in mapped pages %zu", pool->pages_used, pool->pages_shared,
                    pool->pages_free + pool->pages_cached, now->prefix_pages, now->prefix_evicted, pool->waste_rows);
    else
        frame_print(f, b, 0, y++, ROLE_NORMAL, "used %zu  shared %zu  free %zu  prefix hits %zu  rows empty in "
                    "mapped pages %zu", pool->pages_used, pool->pages_shared, pool->pages_free + pool->pages_cached,
                    pool->prefix_hits, pool->waste_rows);
    frame_rule(f, rect_sub(b, 0, y++, b.w, 1), 0, "the requests (running ones: positions held)", 0);
    y = draw_requests(f, b, y, "running", sr, state, held, SERVE_RUNNING);
    y = draw_requests(f, b, y, "waiting", sr, state, held, SERVE_WAITING);
    y = draw_requests(f, b, y, "done   ", sr, state, held, SERVE_DONE);
    size_t preempted = 0, generated = 0, first = 0;
    for (size_t i = 0; i < step; i++)
        preempted += res->steps[i].preempted, generated += res->steps[i].decode_tokens;
    for (size_t q = 0; q < sr->n_requests; q++)
        first += res->req[q].n_output > 0 && res->req[q].first_token < step;
    frame_print(f, b, 0, y + 1, ROLE_NORMAL, "so far: %zu preemption%s, %zu of %zu requests have their first "
                "token, %zu decode tokens", preempted, fmt_s(preempted), first, sr->n_requests, generated);
    if (sr->o.prefix == SERVE_PREFIX_RADIX && sr->tree_at && y + 3 < b.h)
        draw_tree(f, b, y + 2, sr, step);
}
