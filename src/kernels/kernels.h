/* kernels.h: the numeric kernels, one table per instruction set.
 *
 * Every kernel has a plain reference version (`*_ref`, the specification and
 * the test oracle); the AVX2, AVX-512 and NEON tables hold versions with the
 * same signatures, each ISA in its own file built with its own flags.
 * kernels_select() picks a table at start-up from the CPU's features.
 *
 * Kernels add the FLOPs they performed and the bytes they read to the
 * Counters they are handed, into the field the caller names: the kernel
 * knows what it did, the caller knows what the work was for. */
#ifndef KVSCOPE_KERNELS_KERNELS_H
#define KVSCOPE_KERNELS_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/block.h"
#include "kernels/codec.h"
#include "stats/counters.h"
#include "util/err.h"

/* y[n][out] = x[n][in] . W[out][in]^T; adds 2*n*out*in to *flops and the
 * bytes of W to ctr->weight_bytes_read (W is streamed once for all n rows).
 * Each output sums in lanes16.h's order (lanes16_dot) on every table, so
 * every table gives the same bits whatever n, in and out. */
typedef void (*MatmulFn)(float *y, const float *x, const float *w, size_t n, size_t in, size_t out,
                         uint64_t *flops, Counters *ctr);

/* The training's matrix products, row-major with explicit row strides (ld*:
 * floats between rows, so a caller may hand over a block of a larger matrix):
 *   gemm_nt   y[n][m]  = a[n][k] . b[m][k]^T   y = x W^T, attention scores
 *   gemm_nn   y[n][m] += a[n][k] . b[k][m]     dx += dy W, attention output
 *   gemm_tn   y[n][m] += a[k][n]^T . b[k][m]   dW += dy^T x
 * Every element of y is computed by the same operations in the same order
 * (its k products summed from p = 0 up; gemm_nn and gemm_tn add the sum to
 * y once) whatever n and m are and wherever it lies in y: a caller that
 * splits y into blocks computed apart, on any number of threads, gets the
 * same bytes. The FLOPs (2 n m k) are the caller's to count. */
typedef void (*GemmFn)(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n,
                       size_t k, size_t m);

/* out[n][d] = x / rms(x) * w, row by row; w is [d]. out may alias x. */
typedef void (*RmsnormFn)(float *out, const float *x, const float *w, size_t n, size_t d, float eps,
                          Counters *ctr);

/* Rotate the (2i, 2i+1) pairs of n_heads vectors of head_dim at absolute
 * position pos by pos * theta^(-2i/head_dim), in place. */
typedef void (*RopeFn)(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr);

/* out[i] = silu(gate[i]) * up[i], i < n. out may alias gate. */
typedef void (*SwigluFn)(float *out, const float *gate, const float *up, size_t n, Counters *ctr);

/* x[i] = exp(x[i] - max) for i < n; returns the sum of the new x. The
 * softmax's exponentials: vectorised, or they dominate decode attention. */
typedef float (*ExpSumFn)(float *x, size_t n, float max);

/* The integer dot of stored rows with vectors quantized to q8_0, llama.cpp's
 * way of multiplying by q8_0 and q4_0 weights, and of scoring q8_0, q4_0,
 * int4 and fp4 keys against a query rounded to q8_0:
 *   y[g * ld + r] = sum over blocks b of d_w(r, b) * d_x(g, b) * (w codes . x_g codes),
 * each block's 32 code products summed exactly in integers, and the float
 * sum taken in one fixed order on every ISA (qdot_ref.c, QDOT_LANES), so
 * that every table gives the same bits. d_w is the
 * block's scale (q8_0, q4_0) or the row's (int4; fp4: half of it, its
 * codes being the E2M1 values doubled, the integers 0, +-1, +-2, +-3, +-4,
 * +-6, +-8, +-12). rows: n_rows rows of n values (n a multiple of 32) in
 * fmt, one of those four, stride bytes apart; xq: G vectors as q8_0 rows
 * back to back (format_row_bytes(FMT_Q8_0, n) bytes each). Each row is
 * read and unpacked once for all G (a GQA group's heads share it); ld >=
 * n_rows when G > 1. ahead: rows to prefetch meanwhile (codec.h), or NULL. */
typedef void (*QDotFn)(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows,
                       const void *xq, size_t G, size_t n, const RowsAhead *ahead);

/* QDotFn's float sum: block b of a row into lane b % QDOT_LANES by a fused
 * multiply-add, then the lanes added in adjacent pairs (qdot_ref.c). */
#define QDOT_LANES 8

/* Value rows added with integer weights (the integer form of a tile's
 * weighted sum of values; kernels.h's attention, AttnArgs.iv). Head g's
 * float weight of row r, times the scale d(r, b) of the row's block b of
 * codes, times the head's factor to_int[g], is rounded to 16 bits, and the
 * codes are summed with those weights, exactly, in int32:
 *   wq(g, r, b) = iaxpy_weight(p[g * ld + r] * d(r, b), to_int[g])
 *   acc[g * n + i] += sum over rows r of wq(g, r, i / 32) * code(r, i)
 * d(r, b) is q4_0's block scale, int4's row scale, fp4's half row scale;
 * code(r, i) the value's signed integer code as QDotFn takes it (q4_0
 * nibble - 8, int4 the signed nibble, fp4 the E2M1 value doubled), so
 * that value = d * code. *dmax is raised to the largest |d(r, b)|: with
 * every |d| <= D and every p <= P, to_int = 32767 / (P * D) rounds every
 * weight unclamped, and the caller that guessed D too small sees it.
 * q4_0, int4 and fp4 only (iaxpy_takes); n a multiple of 32. The caller
 * keeps the sum over every row ever added into acc of 12 * |wq| below 2^31
 * (a part of ATTEND_IV_ROWS rows does). */
typedef void (*IAxpyFn)(int32_t *acc, float *dmax, const float *p, size_t ld, const float *to_int, Format fmt,
                        const void *rows, size_t stride, size_t n_rows, size_t G, size_t n);

/* IAxpyFn's 16-bit weight: u * k clamped to [-32767, 32767] (NaN to
 * -32767, as SIMD max and min take it) and rounded to the nearest integer,
 * ties to even (the default rounding mode, as SIMD conversion rounds); 0
 * whatever u where k is 0 (a head with no bound yet adds nothing). */
static inline int16_t iaxpy_weight(float u, float k)
{
    if (k == 0.0f)
        return 0;
    float x = u * k;
    x = x > -32767.0f ? x : -32767.0f;
    x = x < 32767.0f ? x : 32767.0f;
    return (int16_t)nearbyintf(x);
}

/* 1 for the formats IAxpyFn takes: the 4-bit ones, whose codes cost more
 * to turn into floats than their weights cost to round (flash adds their
 * values so under AttnArgs.iv; README, performance). */
static inline int iaxpy_takes(Format f)
{
    return f == FMT_Q4_0 || f == FMT_INT4 || f == FMT_FP4;
}

/* Weights a row of n values takes in IAxpyFn. */
static inline size_t iaxpy_weights_per_row(Format f, size_t n)
{
    return f == FMT_Q4_0 ? n / 32 : 1;
}

/* 1 for the formats QDotFn takes. */
static inline int qdot_takes(Format f)
{
    return f == FMT_Q8_0 || f == FMT_Q4_0 || f == FMT_INT4 || f == FMT_FP4;
}

typedef struct {
    const char *isa;
    const char *note; /* what the table uses beyond its ISA's name ("VNNI ..."), or NULL */
    MatmulFn matmul;
    QDotFn qdot;
    IAxpyFn iaxpy;
    RmsnormFn rmsnorm;
    RopeFn rope;
    SwigluFn swiglu;
    ExpSumFn exp_sum;
    GemmFn gemm_nt, gemm_nn, gemm_tn;
    const FormatOps *codec; /* [FMT_COUNT], indexed by Format */
    /* an activation's q8_0 as llama.cpp's x86 path rounds it, ties to even:
     * codec_quantize_q8_0_even's bytes (codec.h) on every table */
    void (*round_q8_0)(void *dst, const float *src, size_t n);
    /* 1: the codec's value rows (axpy_rows) prefetch their own rows ahead,
     * so a flash tile's key scoring is not asked to (RowsAhead) */
    int values_prefetch_own;
} Kernels;

/* --- attention ---------------------------------------------------------- */

/* Attention structure: biases added to the scaled scores, a function of the
 * query's and the key's absolute positions. Random weights attend almost
 * uniformly, which makes every eviction look harmless; these give the
 * patterns trained models show, so cache policies can be compared where it
 * matters (model/structure.h builds one from a spec). */
typedef struct {
    float sink;              /* added to position 0 (an attention sink) */
    float local;             /* locality: minus local * (query pos - key pos), as ALiBi */
    float heavy;             /* added to each position of heavy_pos ... */
    const size_t *heavy_pos; /* ... a few tokens many later queries attend to */
    size_t n_heavy;
    float retrieval;         /* added to position needle for queries at positions >= ask */
    size_t needle, ask;
} AttnBias;

/* The bias a query at qpos gives the key at kpos (kpos <= qpos). */
static inline float attn_bias_at(const AttnBias *b, size_t qpos, size_t kpos)
{
    float x = -b->local * (float)(qpos - kpos);
    if (kpos == 0)
        x += b->sink;
    for (size_t i = 0; i < b->n_heavy; i++)
        if (b->heavy_pos[i] == kpos)
            x += b->heavy;
    if (kpos == b->needle && qpos >= b->ask)
        x += b->retrieval;
    return x;
}

/* Decode or prefill attention for one sequence and one KV head: the `group`
 * query heads that share it, for n_q query tokens at positions pos0 .. pos0 +
 * n_q - 1. A query at position p sees the rows at positions j <= p (causal;
 * in decode that is every row), and with a sliding window W only those with
 * p - W < j; with `bidirectional` set, every query sees every row. Each K and V row is read once per query token and serves the
 * whole group. */
typedef struct {
    const float *q;   /* query t, head g: q[t * q_stride + g * head_dim .. +head_dim] (RoPE applied) */
    size_t q_stride;  /* floats between query tokens */
    float *out;       /* same layout as q, with out_stride */
    size_t out_stride;
    size_t n_q, group, head_dim;
    size_t pos0;
    size_t window;         /* sliding window W; 0 = none */
    int bidirectional;     /* 1: every row is visible to every query, whatever the positions (an
                              encoder's self-attention, cross-attention); pos0 and window are then
                              ignored. 0 (the default): causal, as above */
    const KvBlock *blocks; /* the rows, in position order */
    size_t n_blocks;
    float *scores;    /* scratch: group * (rows in blocks) floats */
    float *view;      /* materialize only: scratch for 2 * rows * head_dim floats ... */
    KvBlock *view_blocks; /* ... and n_blocks blocks describing it */
    float *probs;     /* optional (NULL = skip; naive forms only): the softmax weights, query t,
                         head g, visible row j at probs[(t - probs_first) * probs_q_stride +
                         g * probs_g_stride + j] */
    size_t probs_q_stride, probs_g_stride;
    size_t probs_first; /* queries t < probs_first write no weights (0 = every query) */
    const AttnBias *bias; /* optional (NULL = none): attention structure; causal attention only */
    const float *sink;    /* optional (NULL = none): a learnt sink logit z per query head of the group [G], on
                             the scaled scores: the softmax's denominator gains exp(z - m), no value is
                             added, so the rows' weights sum to 1 - p_sink (gpt-oss). Flash starts its
                             running state there (m = z, l = 1); split-K's first part carries it */
    float *chan_q;        /* blocks with per-channel keys only: scratch for group * head_dim floats */
    void *q8;             /* optional (NULL = the f32 query): keys qdot_takes are scored by integer
                             dots (Kernels.qdot) against the group's queries rounded to q8_0 here,
                             group * format_row_bytes(FMT_Q8_0, head_dim) bytes; head_dim a multiple
                             of 32, other formats, per-channel keys and the materialized form (an
                             f32 view) keep the f32 query */
    void *iv;             /* optional (NULL = f32 weights; flash only): value rows iaxpy_takes
                             are added with 16-bit integer weights (Kernels.iaxpy; ISAs
                             without it keep f32 weights) in parts of ATTEND_IV_ROWS rows;
                             head_dim a multiple of 32; attend_iv_bytes(group, head_dim) bytes
                             of scratch */
} AttnArgs;

typedef enum {
    ATTEND_NAIVE = 0,   /* all scores, softmax, weighted sum; rows decoded where they are read */
    ATTEND_MATERIALIZE, /* naive over an f32 view decoded first (the mixed-precision proposal's merged view) */
    ATTEND_FLASH,       /* tiles of ATTEND_TILE rows, online softmax, dequantization fused (the Marlin design) */
} AttendAlgo;

/* Run attention with kernels k. Counts scores, softmax, weighted sum, the
 * cache bytes read (in each block's stored format) and, for the
 * materialized view, the bytes written to it and read back. */
void attend(const Kernels *k, AttendAlgo algo, const AttnArgs *a, Counters *ctr);

/* Decode row r of blk into f32 k and v ([head_dim] each) with the codecs
 * `codec` ([FMT_COUNT]); a per-channel block's codes become values. */
void block_decode_row(const FormatOps *codec, const KvBlock *blk, size_t r, size_t head_dim, float *k, float *v);

const char *attend_algo_name(AttendAlgo algo);
int attend_algo_parse(const char *name, AttendAlgo *out);

/* Largest GQA group the attention kernels serve (query heads per KV head). */
#define ATTEND_MAX_GROUP 128

/* The tile of the flash form: rows per online-softmax update. The Marlin design's
 * TILE_KV was 64; 1024 keeps the K and V streams from restarting every 64
 * rows, which cost the quantized formats up to 2x (attend_flash.c). Its
 * scratch: group * min(ATTEND_TILE, visible rows) scores. */
#define ATTEND_TILE 1024

/* Rows flash adds with integer weights at a time (AttnArgs.iv): each
 * head's weights of a part are rounded against the part's largest, and its
 * int32 sums taken into the float accumulators at its end. */
#define ATTEND_IV_ROWS 256

/* Bytes of AttnArgs.iv's scratch: a part's integer sums, for group heads
 * of head_dim. */
static inline size_t attend_iv_bytes(size_t group, size_t head_dim)
{
    return group * head_dim * sizeof(int32_t);
}

/* --- selection ---------------------------------------------------------- */

/* The table for `isa`: "ref", "avx2", "avx512", "neon", or NULL / "auto" for
 * the best this CPU runs (the KVSCOPE_ISA environment variable overrides
 * "auto"). Fails with ERR_USAGE naming what this CPU supports. */
const Kernels *kernels_select(const char *isa, Err *e);

/* The tables this build holds, for --help (a CPU may run fewer). */
#if defined(__x86_64__)
#define KERNELS_BUILT "ref, avx2, avx512"
#elif defined(__aarch64__)
#define KERNELS_BUILT "ref, neon"
#else
#define KERNELS_BUILT "ref"
#endif

/* Every table this CPU can run, best last; returns how many (<= cap). */
size_t kernels_available(const Kernels **out, size_t cap);

/* Reference kernels: the specification. */
void matmul_ref(float *y, const float *x, const float *w, size_t n, size_t in, size_t out, uint64_t *flops,
                Counters *ctr);
void rmsnorm_ref(float *out, const float *x, const float *w, size_t n, size_t d, float eps, Counters *ctr);
void rope_ref(float *vec, size_t n_heads, size_t head_dim, size_t pos, double theta, Counters *ctr);
void swiglu_ref(float *out, const float *gate, const float *up, size_t n, Counters *ctr);
float exp_sum_ref(float *x, size_t n, float max);
void gemm_nt_ref(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);
void gemm_nn_ref(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);
void gemm_tn_ref(float *y, size_t ldy, const float *a, size_t lda, const float *b, size_t ldb, size_t n, size_t k,
                 size_t m);
void qdot_ref(float *y, size_t ld, Format fmt, const void *rows, size_t stride, size_t n_rows, const void *xq,
              size_t G, size_t n, const RowsAhead *ahead);
void iaxpy_ref(int32_t *acc, float *dmax, const float *p, size_t ld, const float *to_int, Format fmt,
               const void *rows, size_t stride, size_t n_rows, size_t G, size_t n);

#endif
