/* scr_compare.c: two caches on the same model and prompt, side by side,
 * stepped together with an exact run (contiguous, f32) as the reference:
 * memory of each, and how far each one's logits and tokens are from the
 * exact run's (as `kvscope run --compare` measures them).
 *
 *   what the pass did
 *   A: map, memory, quality    | B: map, memory, quality
 *   tokens: exact, A, B (differences marked) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kv/cache.h"
#include "ui/fmt.h"
#include "ui/panels.h"
#include "ui/screens.h"

enum { P_A, P_B, P_TOKENS, P_COUNT };
static const char *const panel_names[P_COUNT] = { "cache A", "cache B", "tokens" };

#define MAP_ROWS_MAX 4
#define TOKEN_COLS_MAX 10   /* a token's label on the tokens rows, at most */
#define TOKENS_SHOWN_MAX 256 /* tokens on those rows, at most (a wide terminal) */

/* How one run's tokens and logits stand against the exact run's. */
typedef struct {
    size_t generated;  /* tokens generated so far */
    size_t first_diff; /* first generated token that differs, or generated */
    size_t comparable; /* steps fed the same tokens (logits comparable) */
    double rel_now, abs_now; /* this pass's logit error (-1: not comparable) */
    double rel_max, abs_max; /* over the comparable steps */
} Quality;

static void logit_error(const float *a, const float *b, size_t n, double *rel, double *abs_d)
{
    double scale = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(b[i]));
        d = fmax(d, fabs((double)a[i] - b[i]));
    }
    *abs_d = d;
    *rel = scale > 0 ? d / scale : d;
}

static Quality quality(const Session *x, const Session *exact)
{
    Quality q = { 0 };
    size_t len, len_e;
    const int *tx = session_tokens(x, &len), *te = session_tokens(exact, &len_e);
    const size_t plen = session_prompt_len(x), vocab = session_model(x)->cfg.vocab;
    q.generated = len - plen;
    q.first_diff = q.generated;
    for (size_t g = 0; g < q.generated && g + plen < len_e; g++)
        if (tx[plen + g] != te[plen + g]) {
            q.first_diff = g;
            break;
        }
    q.comparable = q.first_diff < q.generated ? q.first_diff + 1 : q.generated;
    q.rel_now = q.abs_now = -1;
    for (size_t g = 0; g < q.comparable; g++) {
        const float *a = session_logits(x, g), *b = session_logits(exact, g);
        if (!a || !b)
            continue;
        double rel, ad;
        logit_error(a, b, vocab, &rel, &ad);
        q.rel_max = fmax(q.rel_max, rel);
        q.abs_max = fmax(q.abs_max, ad);
        if (g + 1 == q.generated)
            q.rel_now = rel, q.abs_now = ad;
    }
    return q;
}

static void side(Frame *f, Rect r, const View *v, int which)
{
    const Session *s = v->cmp[which], *exact = v->cmp[2];
    const Config *c = &session_model(s)->cfg;
    const KvCache *kv = session_cache(s);
    int map_rows = (int)c->n_layers < MAP_ROWS_MAX ? (int)c->n_layers : MAP_ROWS_MAX;
    char title[128];
    snprintf(title, sizeof title, "%c: %s", 'A' + which, session_cache_spec(s));
    panel_map(f, rect_sub(r, 0, 0, r.w, 2 + map_rows), v, s, 0, title, v->focus[SCR_COMPARE] == which);

    Counters run, unc;
    int formula;
    session_totals(s, &run, &unc, &formula);
    const size_t per_token = kv_row_pair_bytes(&kv->geo, kv->k_fmt, kv->v_fmt) * c->n_layers;
    const int xv = r.w - 12 > 24 ? 24 : r.w - 12; /* values end here; human units after */
    char a[32], b[32];
    int y = 2 + map_rows;
    frame_text(f, r, 1, y, ROLE_NORMAL, "cache used B");
    frame_print_right(f, r, xv, y, ROLE_NORMAL, "%s", fmt_count(a, sizeof a, run.cache_bytes_used, 10));
    frame_print(f, r, xv + 2, y++, ROLE_DIM, "%s", fmt_bytes(b, sizeof b, (double)run.cache_bytes_used));
    frame_text(f, r, 1, y, ROLE_NORMAL, "reserved B");
    frame_print_right(f, r, xv, y, ROLE_NORMAL, "%s", fmt_count(a, sizeof a, run.cache_bytes_reserved, 10));
    frame_print(f, r, xv + 2, y++, ROLE_DIM, "%s", fmt_bytes(b, sizeof b, (double)run.cache_bytes_reserved));
    frame_text(f, r, 1, y, ROLE_NORMAL, "per token B");
    frame_print_right(f, r, xv, y, ROLE_NORMAL, "%zu", per_token);
    char fmts[64];
    kv_formats(kv, fmts, sizeof fmts);
    frame_print(f, r, xv + 2, y++, ROLE_DIM, "%s", fmts);
    frame_text(f, r, 1, y, ROLE_NORMAL, "K/V read B");
    frame_print_right(f, r, xv, y, ROLE_NORMAL, "%s", fmt_count(a, sizeof a, run.kv_bytes_read, 10));
    frame_print(f, r, xv + 2, y++, ROLE_DIM, "in the run");

    frame_text(f, r, 1, y++, ROLE_HEAD, "vs the exact run (contiguous, f32):");
    Quality q = quality(s, exact);
    const int xq = 15;
    frame_text(f, r, 1, y, ROLE_NORMAL, "logit err now");
    if (q.rel_now >= 0)
        frame_print(f, r, xq, y++, q.rel_now > 0 ? ROLE_WARN : ROLE_GOOD, "%.3g rel, %.3g abs", q.rel_now,
                    q.abs_now);
    else
        frame_text(f, r, xq, y++, ROLE_DIM, q.generated ? "n/a: inputs differ" : "-");
    frame_text(f, r, 1, y, ROLE_NORMAL, "logit err max");
    frame_print(f, r, xq, y++, q.rel_max > 0 ? ROLE_WARN : ROLE_GOOD, "%.3g rel, %zu step%s", q.rel_max,
                q.comparable, q.comparable == 1 ? "" : "s");
    frame_text(f, r, 1, y, ROLE_NORMAL, "tokens");
    if (q.generated == 0)
        frame_text(f, r, xq, y, ROLE_DIM, "-");
    else if (q.first_diff == q.generated)
        frame_print(f, r, xq, y, ROLE_GOOD, "= exact (all %zu)", q.generated);
    else
        frame_print(f, r, xq, y, ROLE_WARN, "%s exact from token %zu", "\u2260", q.first_diff);
    y += 2;
    /* what the format does to attention, when there is room for it */
    if (r.h - y >= 4)
        panel_heat(f, rect_sub(r, 0, y, r.w, r.h - y), v, s, 0);
}

/* Generated token g of run i (0 exact, 1 A, 2 B), or -1 when it has none. */
static int token_id(const View *v, int i, size_t g)
{
    static const int order[3] = { 2, 0, 1 };
    size_t len;
    const int *t = session_tokens(v->cmp[order[i]], &len);
    const size_t at = session_prompt_len(v->cmp[2]) + g;
    return at < len ? t[at] : -1;
}

/* A token as the panels show it (its piece with a tokenizer, else its id),
 * at most TOKEN_COLS_MAX columns; "" for none. */
static const char *token_label(const View *v, int id, char *buf, size_t cap)
{
    buf[0] = '\0';
    return id < 0 ? buf
                  : panel_clip((char *)panel_token_label(session_tokenizer(v->cmp[2]), id, buf, cap), TOKEN_COLS_MAX);
}

static void tokens(Frame *f, Rect r, const View *v)
{
    char title[128]; /* the model too: the two caches run the same one */
    snprintf(title, sizeof title, "tokens generated by model %s (* differs from the exact run)",
             session_model(v->cmp[2])->cfg.name);
    frame_rule(f, r, 0, title, v->focus[SCR_COMPARE] == P_TOKENS);
    static const char *const names[3] = { "exact", "A", "B" };
    size_t len_e;
    (void)session_tokens(v->cmp[2], &len_e);
    const size_t gen = len_e - session_prompt_len(v->cmp[2]);
    const int x0 = 7;
    /* a column per token, as wide as its widest label, a '*' and a blank: the newest that fit */
    int width[TOKENS_SHOWN_MAX], used = 0;
    size_t first = gen;
    while (first > 0 && gen - first < TOKENS_SHOWN_MAX) {
        char buf[64];
        int w = 0;
        for (int i = 0; i < 3; i++) {
            const int wi = text_width(token_label(v, token_id(v, i, first - 1), buf, sizeof buf));
            w = wi > w ? wi : w;
        }
        if (x0 + used + w + 1 > r.w)
            break;
        width[gen - first] = w + 2;
        used += w + 2;
        first--;
    }
    for (int i = 0; i < 3 && 1 + i < r.h; i++) {
        frame_text(f, r, 0, 1 + i, ROLE_HEAD, names[i]);
        int x = x0;
        for (size_t g = first; g < gen; g++) {
            char buf[64];
            const int id = token_id(v, i, g), diff = id != token_id(v, 0, g);
            frame_print(f, r, x, 1 + i, diff ? ROLE_WARN : ROLE_NORMAL, "%s%s", token_label(v, id, buf, sizeof buf),
                        diff && id >= 0 ? "*" : "");
            x += width[gen - 1 - g];
        }
    }
}

static void draw(Frame *f, Rect b, const View *v)
{
    if (!v->cmp[0]) {
        frame_text(f, b, 1, 1, ROLE_WARN, "compare could not start; the footer says why (press 2 to go back)");
        return;
    }
    panel_what(f, rect_sub(b, 0, 0, b.w, 1), v->cmp[0]);
    const int tok_h = 4, cw = (b.w - 1) / 2;
    Rect cols = rect_sub(b, 0, 1, b.w, b.h - 1 - tok_h);
    side(f, rect_sub(cols, 0, 0, cw, cols.h), v, 0);
    side(f, rect_sub(cols, cw + 1, 0, cw, cols.h), v, 1);
    tokens(f, rect_sub(b, 0, b.h - tok_h, b.w, tok_h), v);
}

static unsigned key(View *v, int k)
{
    (void)v;
    (void)k;
    return KR_NONE;
}

const Screen screen_compare = { "compare", P_COUNT, panel_names, draw, key };
