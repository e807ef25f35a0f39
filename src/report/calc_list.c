/* calc_list.c: `kvscope calc --list`: one entry per model config, with the
 * f16 cache of one sequence at its max_seq_len. */
#include "report/calc_list.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "report/calc_text.h"
#include "model/config.h"
#include "model/memory.h"

static void print_header(OutFormat out)
{
    if (out == OUT_TABLE)
        printf("%-18s %-4s %6s %7s %8s %8s %11s %14s  %s\n", "model", "attn", "layers", "heads", "KV heads",
               "head_dim", "max_seq_len", "f16 B/token", "f16 total at max_seq_len");
    else if (out == OUT_TSV)
        printf("model\tattention\tn_layers\tn_heads\tn_kv_heads\thead_dim\tmax_seq_len\tsliding_window\t"
               "f16_bytes_per_token\tf16_bytes_total\n");
}

/* The entry of model `name`: a line, or an object appended to arr (json). */
static void print_entry(OutFormat out, json_t *arr, const char *name)
{
    Config c;
    Err le = { 0 };
    KvBytes b;
    KvShape s;
    if (config_load(&c, name, &le) < 0 || config_validate(&c, &le) < 0) {
        if (out == OUT_TABLE)
            printf("%-18s (cannot read: %s)\n", name, le.msg);
        else if (arr)
            json_array_append_new(arr, json_pack("{s:s, s:s}", "name", name, "error", le.msg));
        return;
    }
    s = memory_shape(&c);
    if (memory_bytes(&c, &s, FMT_F16, c.max_seq_len, 1, &b, &le) < 0)
        memset(&b, 0, sizeof b);
    const char *attn = c.attention == ATTN_MLA ? "mla" : "gqa";
    if (out == OUT_TABLE) {
        printf("%-18s %-4s %6zu %7zu %8zu %8zu %11s %14s  %s\n", name, c.attention == ATTN_MLA ? "MLA"
               : c.n_kv_heads == c.n_heads ? "MHA" : "GQA", c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim,
               calc_num(c.max_seq_len).s, calc_num(b.token).s, calc_human(b.total).s);
    } else if (out == OUT_TSV) {
        printf("%s\t%s\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\n", name, attn, c.n_layers, c.n_heads,
               c.n_kv_heads, c.head_dim, c.max_seq_len, c.sliding_window, b.token, b.total);
    } else {
        json_t *m = calc_json_config(&c);
        if (m) {
            json_object_set_new(m, "f16_bytes_per_token", calc_json_size(b.token));
            json_object_set_new(m, "f16_bytes_total", calc_json_size(b.total));
            json_array_append_new(arr, m);
        }
    }
}

int calc_print_list(OutFormat out, Err *e)
{
    char names[4096];
    config_list(names, sizeof names);
    if (!names[0])
        return err_set(e, ERR_RUNTIME, "no models found in data/models (is KVSCOPE_DATA right?)");
    json_t *arr = out == OUT_JSON ? json_array() : NULL;
    if (out == OUT_JSON && !arr)
        return err_set(e, ERR_RUNTIME, "out of memory");
    print_header(out);
    char *save = NULL;
    for (char *name = strtok_r(names, ", ", &save); name; name = strtok_r(NULL, ", ", &save))
        print_entry(out, arr, name);
    if (arr)
        return calc_json_print(arr, e);
    if (out == OUT_TABLE)
        printf("\nMLA models list the decompressed per-head shape; their cache is the latent "
               "(see `kvscope calc --model NAME`).\n");
    return 0;
}
