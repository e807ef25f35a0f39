/* memory_formula.c, solved: the KV cache's size (lesson 3). */
#include "memory_formula.h"

size_t token_layer_bytes(const Config *c, Format f)
{
    if (c->attention == ATTN_MLA) /* one compressed latent row, K and V rebuilt from it */
        return format_row_bytes(f, c->kv_lora_rank + c->qk_rope_dim);
    /* K and V: one row of head_dim values per KV head each */
    return 2 * c->n_kv_heads * format_row_bytes(f, c->head_dim);
}

size_t cache_bytes(const Config *c, Format f, size_t context, size_t batch)
{
    return token_layer_bytes(c, f) * c->n_layers * context * batch;
}
