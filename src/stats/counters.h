/* counters.h: the work a step did, measured where it happened.
 *
 * Plain data: kernels, caches and the model add to the Counters they are
 * handed; nothing here is global. A step's counters are a delta; the run's
 * totals are the sum of the deltas (counters_add). The two *_bytes_used /
 * _reserved fields are gauges: a snapshot after the step, not summed. */
#ifndef KVSCOPE_STATS_COUNTERS_H
#define KVSCOPE_STATS_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t tokens_projected; /* token rows run through the Q/K/V projections (per layer pass counted once) */

    /* FLOPs: a multiply-add counts 2 */
    uint64_t flops_q, flops_k, flops_v, flops_o; /* projections, all layers */
    uint64_t flops_qk;      /* attention scores q . k */
    uint64_t flops_av;      /* weighted sum of V rows */
    uint64_t flops_softmax; /* max, exp, sum, scale: counted as 5 per score (named estimate, not measured) */
    uint64_t flops_ffn;     /* gate, up, down and the SwiGLU product */
    uint64_t flops_other;   /* norms, RoPE, unembedding */

    uint64_t weight_bytes_read; /* parameter bytes the kernels loaded */
    uint64_t kv_bytes_read;     /* K/V bytes attention read (from the cache when there is one) */
    uint64_t kv_bytes_written;  /* K/V bytes stored into the cache */
    uint64_t view_bytes;        /* bytes written to and read back from a materialized f32 view */
    uint64_t allocations;       /* cache buffer (re)allocations */
    uint64_t bytes_copied;      /* bytes moved by reallocating caches, forks and context shifts */

    uint64_t attn_split_queries; /* query-head groups whose attention was split across threads (split-K) */
    uint64_t attn_split_parts;   /* the parts they were cut into, all together */

    uint64_t cache_bytes_used;     /* gauge: bytes holding valid rows */
    uint64_t cache_bytes_reserved; /* gauge: bytes the cache holds */

    double seconds; /* wall time of the step */
} Counters;

/* Projection FLOPs (Q, K, V and O together). */
uint64_t counters_proj_flops(const Counters *c);
/* Attention FLOPs (scores, softmax, weighted sum). */
uint64_t counters_attn_flops(const Counters *c);
/* Every FLOP counted. */
uint64_t counters_total_flops(const Counters *c);

/* total += step for every summed field; gauges take step's value. */
void counters_add(Counters *total, const Counters *step);

#endif
