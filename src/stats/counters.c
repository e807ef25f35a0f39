#include "stats/counters.h"

uint64_t counters_proj_flops(const Counters *c)
{
    return c->flops_q + c->flops_k + c->flops_v + c->flops_o;
}

uint64_t counters_attn_flops(const Counters *c)
{
    return c->flops_qk + c->flops_softmax + c->flops_av;
}

uint64_t counters_total_flops(const Counters *c)
{
    return counters_proj_flops(c) + counters_attn_flops(c) + c->flops_ffn + c->flops_other;
}

void counters_add(Counters *t, const Counters *s)
{
    t->tokens_projected += s->tokens_projected;
    t->flops_q += s->flops_q;
    t->flops_k += s->flops_k;
    t->flops_v += s->flops_v;
    t->flops_o += s->flops_o;
    t->flops_qk += s->flops_qk;
    t->flops_av += s->flops_av;
    t->flops_softmax += s->flops_softmax;
    t->flops_ffn += s->flops_ffn;
    t->flops_other += s->flops_other;
    t->weight_bytes_read += s->weight_bytes_read;
    t->kv_bytes_read += s->kv_bytes_read;
    t->kv_bytes_written += s->kv_bytes_written;
    t->view_bytes += s->view_bytes;
    t->allocations += s->allocations;
    t->bytes_copied += s->bytes_copied;
    t->attn_split_queries += s->attn_split_queries;
    t->attn_split_parts += s->attn_split_parts;
    t->cache_bytes_used = s->cache_bytes_used;
    t->cache_bytes_reserved = s->cache_bytes_reserved;
    t->seconds += s->seconds;
}
