/* bench_report.h: how `kvscope bench` prints what it measured, as tables
 * or as TSV (one row per measurement, one header row). */
#ifndef KVSCOPE_REPORT_BENCH_REPORT_H
#define KVSCOPE_REPORT_BENCH_REPORT_H

#include <stddef.h>

#include "report/out_format.h"
#include "kernels/bench.h"
#include "model/config.h"
#include "sim/decode_bench.h"

#define BENCH_N_GROUPS 2
#define BENCH_N_ALGOS 3
#define BENCH_MAX_NOTES 6 /* figures above the bandwidth a table names one by one */
extern const size_t bench_groups[BENCH_N_GROUPS];   /* 1, 4 query heads per KV head */
extern const AttendAlgo bench_algos[BENCH_N_ALGOS]; /* flash first: the main figure */

typedef struct {
    OutFormat out;           /* OUT_TABLE or OUT_TSV */
    const char *isa;         /* the kernel table measured */
    const char *isa_note;    /* its Kernels.note, or NULL */
    const char *read_how;    /* the read loop that set the bandwidth (bench_report_bandwidth) */
    const char *dot_how;     /* how the comparison read was made: "avx512 f32 dot" */
    const char *isa_list;    /* every table this CPU runs, "ref, avx2, avx512" */
    size_t reps;
    int quick;
    size_t llc;              /* bytes the sizes follow (util/machine.h: reported, capped or assumed) */
    const char *llc_text;    /* what was reported and used (machine_llc_text) */
    size_t read_bytes;       /* the bandwidth buffer */
    size_t pool_bytes;       /* each cold pool */
    double bandwidth;        /* measured read bandwidth, bytes/s (0 until measured) */
    size_t head_dim;
    const size_t *contexts;
    size_t n_contexts;
    BenchResult *attn;       /* see bench_attn_at */
    size_t wrong;            /* results found beyond BENCH_TOLERANCE */
    /* the current table's figures above it, for the notes after the table */
    struct {
        char what[96];       /* "flash, cold, context 65536, f16, G = 1" */
        const char *why;     /* NULL, or why it can pass (bench_over_text) */
        double ratio;        /* its GB/s over the bandwidth */
    } notes[BENCH_MAX_NOTES], top; /* top: the table's highest */
    size_t n_notes;          /* the table's count (the first BENCH_MAX_NOTES kept) */
    int int_dot;             /* keys scored by integer dots (--int-dot; kernels.h, qdot_takes) */
    int mat_dot;             /* --decode: a checkpoint's q8_0/q4_0 matrices by integer dots (Model.mat_dot) */
} BenchReport;

/* The attention result for context index ci, format f, group index gi,
 * form index ai (into bench_algos) and cold (0 warm, 1 cold). */
static inline BenchResult *bench_attn_at(const BenchReport *rep, size_t ci, Format f, size_t gi, size_t ai, int cold)
{
    return &rep->attn[(((ci * FMT_COUNT + (size_t)f) * BENCH_N_GROUPS + gi) * BENCH_N_ALGOS + ai) * 2 +
                      (size_t)cold];
}

/* What every table starts with (table) or the header row (tsv). */
void bench_report_start(BenchReport *rep);
/* A figure may pass the measured bandwidth by this share before the tables
 * print ">100%" instead of a percentage, and a note naming it and its ratio. */
#define BENCH_CEILING_SLACK 0.05

/* A figure's share of the bandwidth (ratio: its GB/s over the bandwidth) as
 * the tables print it, right-aligned in width columns: "97%", or ">100%"
 * past 1 + BENCH_CEILING_SLACK, where a percentage would mean nothing: the
 * bandwidth was meant as a ceiling. Returns buf. */
const char *bench_pct_text(char *buf, size_t cap, int width, double ratio);
/* The note printed after a table for such a figure, named by what: why it
 * could pass the bandwidth, or with why NULL, that no read loop reached it. */
const char *bench_over_text(char *buf, size_t cap, const char *what, double ratio, const char *why);

/* Section 1: the read loops (loops[n_loops], named names[i]; the fastest
 * sets rep->bandwidth and rep->read_how) and the same read through the f32
 * dot kernel (dot). */
void bench_report_bandwidth(BenchReport *rep, const BenchResult *loops, const char *const *names, size_t n_loops,
                            const BenchResult *dot);
/* Section 2, once every rep->attn entry is measured. */
void bench_report_attention(BenchReport *rep);

typedef struct {
    const char *name;  /* for the table: "kvscope avx512", "GSL CBLAS", ... */
    const char *id;    /* for tsv: "kvscope-avx512", "gsl-cblas", "openblas" */
    BenchResult r;
} BenchMatvecRow;

/* Section 3: rows[0] is kvscope's matvec on rep->isa, the one the others
 * are compared with; openblas_missing names why OpenBLAS is absent (NULL
 * when it was measured). */
void bench_report_matvec(BenchReport *rep, size_t rows, size_t cols, size_t n_copies, const BenchMatvecRow *mv,
                         size_t n, const char *openblas_missing);

/* One measured decode: the cache's format and what the step did. */
typedef struct {
    const char *cache;  /* "f16" */
    DecodeBench r;
} BenchDecodeRow;

/* Section 4: a whole model's decode step per cache and context against its
 * byte limit (weights + K/V read per step over rep->bandwidth). */
void bench_report_decode(BenchReport *rep, const Config *cfg, const BenchDecodeRow *rows, size_t n);

#endif
