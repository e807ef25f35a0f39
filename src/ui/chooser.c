/* chooser.c: the list behind c (choose a cache) and m (choose a model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/cache.h"
#include "model/generate.h"
#include "model/structure.h"
#include "ui/fmt.h"
#include "ui/keys.h"
#include "ui/screens.h"

/* Caches offered, when the engine accepts them for the model on screen: a
 * spec the kv layer does not know yet is simply not listed, so the list
 * grows as layouts and policies land. */
static const char *const cache_candidates[] = {
    "contiguous",
    "dynamic",
    "contiguous+quant:k=f16,v=f16",
    "contiguous+quant:k=q8_0,v=q8_0",
    "contiguous+quant:k=q8_0,v=q4_0",
    "contiguous+quant:k=q4_0,v=q4_0",
    "contiguous+quant:k=int4,v=int4",
    "contiguous+quant:k=fp4,v=fp4",
    "paged:page=16",
    "paged:page=4",
    "paged:page=4+sparse:threshold=16,keep=0.5",
    "paged:page=16+quant:k=q8_0,v=q8_0",
    "ring:window=32,sinks=4",
    "ring:window=8,sinks=2",
    "shift:ctx=32,keep=4",
    "mixed:hot=32,group=16,cold=q4_0",
    "mixed:hot=8,group=4,cold=q4_0",
    "kivi:bits=4,group=32",
    "kivi:bits=2,group=8",
    "h2o:budget=32,recent=16",
    "snapkv:budget=32,window=8,pool=7",
    "marlin",
    "mla",
    "teaching",
    "encdec",
    "mixed",
};

static Session *cache_target(const View *v, int *side)
{
    *side = 0;
    if (v->screen == SCR_EXAMPLE)
        return v->ex;
    if (v->screen == SCR_SIM)
        return v->sim;
    *side = v->focus[SCR_COMPARE] == 1 ? 1 : 0;
    return v->cmp[*side];
}

static void add(Chooser *c, const char *item, const char *note, int current)
{
    if (c->n == CHOOSER_MAX)
        return;
    snprintf(c->items[c->n], sizeof c->items[0], "%s", item);
    snprintf(c->notes[c->n], sizeof c->notes[0], "%s", note);
    if (current)
        c->sel = c->n;
    c->n++;
}

static int open_caches(const View *v, Chooser *c, const char **why)
{
    Session *s = cache_target(v, &c->side);
    if (!s) {
        *why = "no session to choose a cache for";
        return -1;
    }
    const char *cur = session_cache_spec(s);
    KvGeometry geo = model_kv_geometry(session_model(s), 1);
    int listed = 0;
    for (size_t i = 0; i < sizeof cache_candidates / sizeof cache_candidates[0]; i++) {
        Err e = { 0 };
        KvCache *k = kv_open(cache_candidates[i], &geo, &e);
        if (!k)
            continue;
        char fmts[40], note[48];
        kv_formats(k, fmts, sizeof fmts);
        snprintf(note, sizeof note, "stores %s", fmts);
        kv_free(k);
        int is_cur = strcmp(cur, cache_candidates[i]) == 0;
        listed |= is_cur;
        add(c, cache_candidates[i], note, is_cur);
    }
    if (!listed)
        add(c, cur, "(given on the command line)", 1);
    return 0;
}

/* Why a model is not offered. */
enum { RUNS = 0, NO_LOAD, NO_DECODER, NO_MLA_STRUCTURE, NO_FIT, N_WHY };

/* Would the simulation run model `name` with the options it was started
 * with: loadable in the view, decoder-only, the prompt and the tokens asked
 * for within its positions. RUNS, or why not. */
static int model_runs(const View *v, const char *name, Config *cfg)
{
    Err e = { 0 };
    const Kernels *kern;
    if (config_load(cfg, name, &e) == 0 && cfg->architecture != ARCH_DECODER)
        return NO_DECODER; /* asked first: the loader may refuse it for another reason */
    if (!v->hooks.load_model || !v->hooks.make_prompt || v->hooks.load_model(v->hooks.ctx, name, cfg, &kern, &e) < 0)
        return NO_LOAD; /* too large without --shared (or not loadable at all) */
    if (cfg->architecture != ARCH_DECODER)
        return NO_DECODER;
    SessionSpec sp;
    session_spec(v->sim, &sp);
    if (sp.structure && structure_on(sp.structure) && cfg->attention == ATTN_MLA)
        return NO_MLA_STRUCTURE;
    int *ids = NULL;
    size_t len = 0;
    int ok = v->hooks.make_prompt(v->hooks.ctx, cfg, &ids, &len, &e) == 0 &&
             generate_positions(len, sp.go.n_generate) <= cfg->max_seq_len;
    for (size_t i = 0; ok && i < len; i++)
        ok = ids[i] >= 0 && (size_t)ids[i] < cfg->vocab;
    free(ids);
    return ok ? RUNS : NO_FIT;
}

/* The models the simulation can switch to; what is left out, and why, goes
 * to c->left_out for the footer. */
static int open_models(const View *v, Chooser *c, const char **why)
{
    char list[2048];
    config_list(list, sizeof list);
    const char *cur = session_model(v->sim)->cfg.name;
    size_t skipped[N_WHY] = { 0 }, n_skipped = 0;
    for (char *save = NULL, *name = strtok_r(list, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        Config cfg;
        const int is_cur = strcmp(name, cur) == 0;
        int no = is_cur ? RUNS : model_runs(v, name, &cfg);
        if (no != RUNS) {
            skipped[no]++, n_skipped++;
            continue;
        }
        char note[48] = "", size[24];
        Err e = { 0 };
        if (!is_cur || config_load(&cfg, name, &e) == 0)
            snprintf(note, sizeof note, "%zu layer%s, d_model %zu, %s", cfg.n_layers, fmt_s(cfg.n_layers),
                     cfg.d_model, fmt_bytes(size, sizeof size, (double)model_param_floats(&cfg) * sizeof(float)));
        add(c, name, note, is_cur);
    }
    if (c->n == 0) {
        *why = "no models found in data/models (is KVSCOPE_DATA right?)";
        return -1;
    }
    static const char *const says[N_WHY] = {
        [NO_LOAD] = "too large to load (see --shared)", [NO_DECODER] = "not decoder-only",
        [NO_MLA_STRUCTURE] = "MLA (not with --structure)", [NO_FIT] = "too short for the prompt and --tokens",
    };
    char parts[120] = "";
    size_t used = 0;
    for (int k = 1; k < N_WHY; k++)
        if (skipped[k] && used < sizeof parts)
            used += (size_t)snprintf(parts + used, sizeof parts - used, "%s%zu %s", used ? ", " : "", skipped[k],
                                     says[k]);
    if (n_skipped)
        snprintf(c->left_out, sizeof c->left_out, "%zu model%s not listed: %.119s", n_skipped, fmt_s(n_skipped),
                 parts);
    return 0;
}

int chooser_open(Chooser *c, const View *v, ChooseKind kind, const char **why)
{
    memset(c, 0, sizeof *c);
    int rc = kind == CHOOSE_CACHE ? open_caches(v, c, why) : open_models(v, c, why);
    c->kind = rc == 0 ? kind : CHOOSE_NONE;
    return rc;
}

unsigned chooser_key(Chooser *c, int key, ChooseKind *chosen)
{
    *chosen = CHOOSE_NONE;
    switch (key) {
    case VK_UP:
    case 'k':
        if (c->sel > 0)
            c->sel--;
        break;
    case VK_DOWN:
    case 'j':
        if (c->sel + 1 < c->n)
            c->sel++;
        break;
    case VK_PGUP:
    case VK_HOME:
        c->sel = 0;
        break;
    case VK_PGDN:
    case VK_END:
        c->sel = c->n ? c->n - 1 : 0;
        break;
    case VK_ENTER:
    case ' ':
        *chosen = c->kind;
        c->kind = CHOOSE_NONE;
        break;
    case VK_ESC:
    case 'q':
        c->kind = CHOOSE_NONE;
        break;
    default:
        return KR_HANDLED; /* a list swallows other keys */
    }
    return KR_HANDLED | KR_CHANGED;
}

void chooser_draw(Frame *f, const View *v)
{
    const Chooser *c = &v->chooser;
    int item_w = 0, note_w = 0;
    for (size_t i = 0; i < c->n; i++) {
        int a = text_width(c->items[i]), b = text_width(c->notes[i]);
        item_w = a > item_w ? a : item_w;
        note_w = b > note_w ? b : note_w;
    }
    static const char hint[] = "Up/Down, Enter applies (replays to this pass), Esc";
    int w = item_w + note_w + 8, h = (int)c->n + 4;
    if (w < text_width(hint) + 4)
        w = text_width(hint) + 4;
    if (w > f->w - 4)
        w = f->w - 4;
    if (h > f->h - 2)
        h = f->h - 2;
    Rect box = { (f->w - w) / 2, (f->h - h) / 2, w, h };
    char title[96];
    if (c->kind == CHOOSE_MODEL)
        snprintf(title, sizeof title, "choose a model");
    else if (v->screen == SCR_COMPARE)
        snprintf(title, sizeof title, "choose cache %c", 'A' + c->side);
    else
        snprintf(title, sizeof title, "choose a cache");
    frame_box(f, box, title, ROLE_HEAD);
    Rect in = rect_sub(box, 2, 1, w - 4, h - 2);
    int rows = in.h - 1;
    size_t first = (int)c->sel >= rows ? c->sel - (size_t)rows + 1 : 0;
    for (int r = 0; r < rows && first + (size_t)r < c->n; r++) {
        size_t i = first + (size_t)r;
        int sel = i == c->sel;
        frame_put_glyph(f, in, 0, r, sel ? G_FOCUS : G_SHADE0, sel ? ROLE_SEL : ROLE_NORMAL);
        frame_text(f, in, 2, r, sel ? ROLE_SEL : ROLE_NORMAL, c->items[i]);
        frame_text(f, in, item_w + 4, r, ROLE_DIM, c->notes[i]);
        if (sel)
            frame_role(f, (Rect){ in.x, in.y + r, in.w, 1 }, ROLE_SEL);
    }
    frame_text(f, in, 0, in.h - 1, ROLE_DIM, hint);
}
