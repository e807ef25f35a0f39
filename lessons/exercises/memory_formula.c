/* memory_formula.c: the KV cache's size (lesson 3, the teaching notes' "easy"
 * exercise). Fill in the TODOs; check it with
 * `kvscope lesson check 3 --file THIS_FILE`: it is compared with kvscope's
 * own figures (src/model/memory.h) for every model in data/models and every
 * format.
 *
 * What you need from src/:
 *   Config (model/config.h): n_layers, n_kv_heads, head_dim, attention
 *     (ATTN_GQA or ATTN_MLA), kv_lora_rank, qk_rope_dim
 *   format_row_bytes(f, n) (kernels/format.h): the bytes of one row of n
 *     values stored in format f (4 bytes a value in f32, 2 in f16, and
 *     blocks with their scales for q8_0, q4_0, int4 and fp4). */
#include "memory_formula.h"

size_t token_layer_bytes(const Config *c, Format f)
{
    /* TODO: a GQA (or MHA) layer stores, per token, one K row and one V row
     * of head_dim values for each of its n_kv_heads KV heads.
     * TODO: an MLA layer (c->attention == ATTN_MLA) stores one latent row of
     * kv_lora_rank + qk_rope_dim values instead, and nothing else. */
    (void)c;
    (void)f;
    return 0;
}

size_t cache_bytes(const Config *c, Format f, size_t context, size_t batch)
{
    /* TODO: every layer, every token of the context, every sequence */
    (void)c;
    (void)f;
    (void)context;
    (void)batch;
    return 0;
}
