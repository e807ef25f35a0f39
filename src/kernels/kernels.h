/* kernels.h: the numeric kernels, one table per instruction set.
 *
 * Every kernel has a plain reference version (`*_ref`, the specification and
 * the test oracle). Each adds the FLOPs it performed and the bytes it read to
 * the Counters it is handed, into the field the caller names: the kernel
 * knows what it did, the caller knows what the work was for. */
#ifndef KVSCOPE_KERNELS_KERNELS_H
#define KVSCOPE_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/block.h"
#include "stats/counters.h"
#include "util/err.h"

/* y[n][out] = x[n][in] . W[out][in]^T; adds 2*n*out*in to *flops and the
 * bytes of W to ctr->weight_bytes_read (W is streamed once for all n rows). */
typedef void (*MatmulFn)(float *y, const float *x, const float *w, size_t n, size_t in, size_t out,
                         uint64_t *flops, Counters *ctr);

/* out[n][d] = x / rms(x) * w, row by row; w is [d]. out may alias x. */
typedef void (*RmsnormFn)(float *out, const float *x, const float *w, size_t n, size_t d, float eps,
                          Counters *ctr);

/* Rotate the (2i, 2i+1) pairs of n_heads vectors of head_dim at absolute
 * position pos by pos * theta^(-2i/head_dim), in place. */
typedef void (*RopeFn)(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr);

/* Decode or prefill attention for one sequence and one KV head: the `group`
 * query heads that share it, for n_q query tokens at positions pos0 .. pos0 +
 * n_q - 1. A query at position p sees the rows at positions j <= p (causal;
 * in decode that is every row), and with a sliding window W only those with
 * p - W < j. Each K and V row is loaded once per query token and serves the
 * whole group. */
typedef struct {
    const float *q;   /* query t, head g: q[t * q_stride + g * head_dim .. +head_dim] (RoPE applied) */
    size_t q_stride;  /* floats between query tokens */
    float *out;       /* same layout as q, with out_stride */
    size_t out_stride;
    size_t n_q, group, head_dim;
    size_t pos0;
    size_t window;         /* sliding window W; 0 = none */
    const KvBlock *blocks; /* the rows, in position order */
    size_t n_blocks;
    float *scores;    /* scratch: group * (rows in blocks) floats */
    float *probs;     /* optional (NULL = skip): the softmax weights are copied out, query t,
                         head g, visible row j at probs[t * probs_q_stride + g * probs_g_stride + j] */
    size_t probs_q_stride, probs_g_stride;
} AttnArgs;
typedef void (*AttendFn)(const AttnArgs *a, Counters *ctr);

/* out[i] = silu(gate[i]) * up[i], i < n. out may alias gate. */
typedef void (*SwigluFn)(float *out, const float *gate, const float *up, size_t n, Counters *ctr);

typedef struct {
    const char *isa;
    MatmulFn matmul;
    RmsnormFn rmsnorm;
    RopeFn rope;
    AttendFn attend;
    SwigluFn swiglu;
} Kernels;

/* The table for `isa` ("ref", or NULL / "auto": the best this CPU runs;
 * the KVSCOPE_ISA environment variable overrides "auto"). */
const Kernels *kernels_select(const char *isa, Err *e);

/* Reference kernels: the specification. */
void matmul_ref(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                Counters *ctr);
void rmsnorm_ref(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr);
void rope_ref(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr);
void attend_ref(const AttnArgs *a, Counters *ctr);
void swiglu_ref(float *out, const float *gate, const float *up, size_t n, Counters *ctr);

#endif
