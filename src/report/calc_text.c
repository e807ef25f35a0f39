/* calc_text.c: numbers, byte counts, formulas and configs as `kvscope
 * calc` writes them, for people and for programs. */
#include "report/calc_text.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/human.h"

/* --- for people ------------------------------------------------------------ */

CalcText calc_num(size_t v)
{
    char raw[32];
    CalcText t;
    snprintf(raw, sizeof raw, "%zu", v);
    size_t len = strlen(raw), o = 0;
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            t.s[o++] = ',';
        t.s[o++] = raw[i];
    }
    t.s[o] = '\0';
    return t;
}

CalcText calc_human(size_t bytes)
{
    CalcText t;
    human_bytes(t.s, sizeof t.s, (double)bytes);
    return t;
}

/* One row of `label` values in format f: "128 head_dim x 2 bytes" for plain
 * formats; for block formats the bytes of a row and how they add up. */
static void row_text(char *buf, size_t cap, Format f, size_t n, const char *label)
{
    size_t bv = format_block_values(f), bb = format_block_bytes(f), extra = format_row_extra(f);
    size_t blocks = (n + bv - 1) / bv;
    if (bv == 1 && extra == 0)
        snprintf(buf, cap, "%s x %zu bytes", label, bb);
    else if (extra == 0)
        snprintf(buf, cap, "%zu B per row of %s (%zu blocks of %zu values x %zu B)", format_row_bytes(f, n),
                 label, blocks, bv, bb);
    else
        snprintf(buf, cap, "%zu B per row of %s (%zu words of %zu values x %zu B + %zu B scale)",
                 format_row_bytes(f, n), label, blocks, bv, bb, extra);
}

void calc_shape_formula(char *buf, size_t cap, const Config *c, const KvShape *s, Format f, size_t layers)
{
    char lay[48] = "", row[192], label[96];
    if (layers)
        snprintf(lay, sizeof lay, "%s layers x ", calc_num(layers).s);
    switch (s->kind) {
    case KV_SHAPE_GQA:
    case KV_SHAPE_MHA:
        snprintf(label, sizeof label, "%zu head_dim", s->k_len);
        row_text(row, sizeof row, f, s->k_len, label);
        snprintf(buf, cap, "2 (K,V) x %s%zu KV heads%s x %s", lay, s->k_rows,
                 s->kind == KV_SHAPE_MHA ? " (= query heads)" : "", row);
        return;
    case KV_SHAPE_MLA_LATENT:
        snprintf(label, sizeof label, "(%zu kv_lora_rank + %zu qk_rope_dim)", c->kv_lora_rank, c->qk_rope_dim);
        row_text(row, sizeof row, f, s->k_len, label);
        snprintf(buf, cap, "%s%s", lay, row);
        return;
    case KV_SHAPE_MLA_DECOMPRESSED:
        if (format_block_values(f) == 1 && format_row_extra(f) == 0) {
            snprintf(buf, cap, "%s%zu heads x (%zu qk_nope_dim + %zu qk_rope_dim + %zu v_head_dim) x %zu bytes", lay,
                     s->k_rows, c->qk_nope_dim, c->qk_rope_dim, s->v_len, format_block_bytes(f));
        } else {
            char vrow[192];
            snprintf(label, sizeof label, "(%zu qk_nope_dim + %zu qk_rope_dim)", c->qk_nope_dim, c->qk_rope_dim);
            row_text(row, sizeof row, f, s->k_len, label);
            snprintf(label, sizeof label, "%zu v_head_dim", s->v_len);
            row_text(vrow, sizeof vrow, f, s->v_len, label);
            snprintf(buf, cap, "%s%zu heads x (K: %s + V: %s)", lay, s->k_rows, row, vrow);
        }
        return;
    }
    snprintf(buf, cap, "?");
}

/* --- for programs ---------------------------------------------------------- */

/* A byte no name or formula holds; jansson writes it as \u0001. */
#define BIG_MARK "\x01"
#define BIG_MARK_OUT "\"\\u0001"

json_t *calc_json_size(size_t v)
{
    if (v <= (size_t)LLONG_MAX)
        return json_integer((json_int_t)v);
    char digits[32]; /* a double would round 2^64 - 4 to 1.8446744073709552e19 */
    snprintf(digits, sizeof digits, BIG_MARK "%zu", v);
    return json_string(digits);
}

/* Rewrite each "\u0001DIGITS" of calc_json_size in text to DIGITS, in place. */
static void unmark_big(char *text)
{
    const size_t mark = strlen(BIG_MARK_OUT);
    char *w = text;
    for (const char *r = text; *r;) {
        size_t n = 0;
        if (strncmp(r, BIG_MARK_OUT, mark) == 0) {
            while (r[mark + n] >= '0' && r[mark + n] <= '9')
                n++;
        }
        if (n > 0 && r[mark + n] == '"') {
            memmove(w, r + mark, n);
            w += n;
            r += mark + n + 1;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

json_t *calc_json_config(const Config *c)
{
    json_t *m = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "name", c->name, "attention",
                          c->attention == ATTN_MLA ? "mla" : "gqa", "d_model", calc_json_size(c->d_model),
                          "n_layers", calc_json_size(c->n_layers), "n_heads", calc_json_size(c->n_heads),
                          "n_kv_heads", calc_json_size(c->n_kv_heads), "head_dim", calc_json_size(c->head_dim),
                          "ffn_dim", calc_json_size(c->ffn_dim), "vocab", calc_json_size(c->vocab),
                          "max_seq_len", calc_json_size(c->max_seq_len), "sliding_window",
                          calc_json_size(c->sliding_window));
    if (m && c->attention == ATTN_MLA) {
        json_object_set_new(m, "kv_lora_rank", calc_json_size(c->kv_lora_rank));
        json_object_set_new(m, "qk_rope_dim", calc_json_size(c->qk_rope_dim));
        json_object_set_new(m, "qk_nope_dim", calc_json_size(c->qk_nope_dim));
        json_object_set_new(m, "v_head_dim", calc_json_size(c->v_head_dim));
    }
    return m;
}

int calc_json_print(json_t *v, Err *e)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(v);
    if (!text)
        return err_set(e, ERR_RUNTIME, "out of memory");
    unmark_big(text);
    printf("%s\n", text);
    free(text);
    return 0;
}

