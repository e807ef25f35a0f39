/* cmd_bench.c: `kvscope bench`: this machine's read bandwidth, then decode
 * attention and a matvec measured against it (kernels/bench.h measures,
 * app/bench_report.c prints). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <time.h>

#include "kernels/bench_blas.h"
#include "report/bench_report.h"
#include "app/cli.h"
#include "app/bench_decode.h"
#include "app/bench_split.h"
#include "app/commands.h"
#include "app/progress_line.h"
#include "util/pool.h"
#include "util/parse.h"
#include "util/machine.h"
#include "sim/roofs.h"

#define HEAD_DIM 128
#define MAX_CONTEXTS 16
#define MAX_CONTEXT ((size_t)1 << 26)
#define MIB ((size_t)1 << 20)
#define MAX_READ_MIB 4096 /* the read's sums stay exact well past it */
#define POOL_CEILING (256 * MIB) /* the default cold data at most: 8x a 32 MiB LLC */
#define SEED 20240601u
#define MAX_GROUP 4 /* the largest of bench_groups */
_Static_assert(2 * BENCH_N_GROUPS <= BENCH_MAX_QUERIES, "bench_attend_cold takes a format's and f32's groups at once");

typedef struct {
    const char *isa;
    OutFormat fmt;
    size_t reps, read_mib, pool_mib, matvec_n;
    size_t contexts[MAX_CONTEXTS], n_contexts;
    int quick;
    int decode;           /* --decode: the bandwidth, then a whole model's decode step */
    const char *model;    /* --model, for --decode */
    const char *weights;  /* --weights, for --decode: a checkpoint instead */
    int int_dot;          /* 1, --int-dot: keys (qdot_takes; and --weights' matrices) by integer dots,
                             q4_0, int4 and fp4 values (flash) with integer weights; -1, --int-dot=off:
                             --weights' matrices against the f32 activation too; 0: neither flag */
    size_t steps;         /* --steps, for --decode */
    int quiet;            /* --quiet: no progress line */
    int split_k;          /* --split-k: decode attention on 1 thread and split-K on 2, at long contexts */
    size_t threads;       /* --threads, for --decode (default 1) */
} BenchOpts;

static void help(void)
{
    printf("usage: kvscope bench [OPTIONS]\n\n"
           "Measure, on one core and in one run:\n"
           "  1. this machine's read bandwidth: a float array as large as the cold data below (8x\n"
           "     the last-level cache, LLC, within the limits below), summed by every plain read loop\n"
           "     this CPU runs (scalar, AVX2, AVX-512 as the CPU has them, not only --isa's; 1, 2, 4\n"
           "     or 8 streams, with and without software prefetch): the fastest loop's median is the\n"
           "     bandwidth, and the bench names it. Every other figure is a percentage of it. The\n"
           "     same read through the f32 dot kernel is shown beside it;\n"
           "  2. one decode step of attention (one KV head, head_dim %d, a query seeing every row)\n"
           "     for every cache format (f32, f16, q8_0, q4_0, int4, fp4), at each context, for\n"
           "     G = 1 and G = 4 query heads per KV head, in the flash, naive and materialize forms;\n"
           "     cold (each step reads the next of many identical K/V copies, together at least 8x\n"
           "     the LLC, so the rows come from memory; a format's G = 1 and G = 4 steps and f32's\n"
           "     taken in turn) and warm (the same K/V every step);\n"
           "  3. a 4096 x 4096 f32 matvec by kvscope's kernels (the chosen ISA and ref), GSL's\n"
           "     CBLAS and OpenBLAS when libopenblas.so.0 is installed (loaded at run time, one\n"
           "     thread), cold over copies of the matrix.\n"
           "With --split-k, only:\n"
           "  5. one decode step of attention (head_dim %d, G = 4) in f16, q8_0 and q4_0 at each context\n"
           "     (default 8192,65536,262144): the flash form on one thread, then split-K (flash-decoding:\n"
           "     the rows cut into 2 parts on 2 threads, each part's max and sum of exponentials kept,\n"
           "     merged by the log-sum-exp rule), in turn, and the speed-up; a context whose rows exceed\n"
           "     an eighth of the memory available (at most 256 MiB) is skipped.\n"
           "With --decode, instead of 2 and 3:\n"
           "  4. one decode step of a whole model (default llama-3-8b, its real shape with one layer's\n"
           "     weights shared by all layers) with an f16 and a q8_0 cache filled to each context\n"
           "     (default 1024,16384), against its byte limit: the weight and K/V bytes the step read,\n"
           "     over the read bandwidth. It holds the model's layer and cache (several GiB).\n\n"
           "How to read it: time is per step (or per matvec); bytes are what the kernel counted\n"
           "reading (Counters.kv_bytes_read; materialize adds its f32 view, view_bytes); GB/s is\n"
           "bytes / time (10^9 bytes per second); %% bw is that over the measured read bandwidth,\n"
           "so a cold step near 100%% is limited by memory, far below it by computation. A figure\n"
           "more than 5%% above the bandwidth prints as >100%%, with a note naming it, its ratio and\n"
           "why (warm data from cache, or no read loop reached it). vs f32 is the f32 step's time over\n"
           "this format's (same context, form, G, cache): what the smaller format buys. G4/G1 is\n"
           "the G = 4 step's time over the G = 1 step's: near 1 when the group shares each K/V read.\n"
           "The summary adds its floor: the G = 4 warm step (rows in cache, the longest such context)\n"
           "scaled to the longest context, over the G = 1 cold step; a cold step does at least its warm\n"
           "step's work, so G4/G1 stays near or above it until four heads compute less.\n"
           "Cold, both ratios divide steps taken in turn (each makes one pass of its copies, its\n"
           "steps spread among the others'), so the two times come from the same seconds (tsv:\n"
           "f32_seconds is the f32 time a row's speedup_vs_f32 divides).\n"
           "The run makes --reps rounds, each measuring everything once (the bandwidth first; the\n"
           "bandwidth and the matvecs each after one untimed sweep of their data, idle since the\n"
           "round before); every figure is the median of its rounds, so a slow spell of a shared\n"
           "machine touches all figures alike (tsv adds the fastest and slowest round). Every\n"
           "output is checked against the reference kernels (max relative difference; beyond %.0e\n"
           "it is marked WRONG and the exit status is 1). Compare figures of one run, not of two.\n\n"
           "options:\n"
           "  --isa ISA           kernels: auto (default; KVSCOPE_ISA overrides), ref, avx2, avx512\n"
           "  --contexts LIST     context lengths, comma-separated (default 1024,8192,65536)\n"
           "  --reps N            rounds: timed repetitions of every figure, which is their median\n"
           "                      (default 5, at most 100)\n"
           "  --bandwidth-mib N   the bandwidth buffer in MiB (default --pool-mib's size, the cold data;\n"
           "                      at most 4096)\n"
           "  --pool-mib N        the cold data in MiB (default 8x the LLC, at most 256 and an eighth of\n"
           "                      the memory available now; this flag may ask for more)\n"
           "  --quick             tiny sizes, 3 rounds: finishes in seconds (for tests; the figures\n"
           "                      then say nothing about the machine)\n"
           "  --format F          table (default) or tsv (one row per measurement, a header row)\n"
           "  --decode            section 4 (after the bandwidth) instead of sections 2 and 3\n"
           "  --model NAME        the model --decode runs (default llama-3-8b)\n"
           "  --weights PATH      --decode runs this checkpoint instead (GGUF, llama2.c or .kvw), its own\n"
           "                      layers, its f16/q8_0/q4_0 matrices read as stored\n"
           "  --int-dot           integer dots, llama.cpp's way: section 2's q8_0, q4_0, int4 and fp4\n"
           "                      keys (and --decode's q8_0 cache) against the query rounded to q8_0, flash's\n"
           "                      q4_0, int4 and fp4 values with 16-bit integer weights; --weights' q8_0/q4_0\n"
           "                      matrices multiply the activation rounded to q8_0 with or without it\n"
           "  --int-dot=off       the exact path: --weights' matrices against the f32 activation too\n"
           "  --steps N           decode steps timed per context and cache (default 5, at most 64)\n"
           "  --threads N         threads of --decode's step (default 1): its matrices split by\n"
           "                      output rows, its attention past 511 rows by split-K\n"
           "  --split-k           section 5 alone: flash on 1 thread against split-K on 2\n"
           "%s\n"
           "On a terminal, stderr shows which section of which round runs, and the time left. A full\n"
           "run takes a minute or two and holds at most about 1.3 GiB, whatever the LLC.\n\n"
           "The LLC is read from sysfs (else sysconf). Where it is more than the CPUs this process may\n"
           "use could have (over 16 MiB a CPU, and over 32 MiB: a virtual machine shown its host's whole\n"
           "cache), the bench says so and sizes by that cap. %s=SIZE (32M, 512MiB, bytes) sets\n"
           "the LLC instead; the same limits apply to it.\n"
           "example: kvscope bench --contexts 4096,32768 --reps 7\n",
           HEAD_DIM, HEAD_DIM, BENCH_TOLERANCE, progress_line_help, MACHINE_LLC_ENV);
}

/* "1024,8192,65536" -> o->contexts */
static int parse_contexts(const char *text, BenchOpts *o, Err *e)
{
    o->n_contexts = 0;
    const char *p = text;
    do {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char buf[32];
        if (len == 0 || len >= sizeof buf)
            return err_set(e, ERR_USAGE, "--contexts: '%s' is not a comma-separated list of lengths", text);
        if (o->n_contexts == MAX_CONTEXTS)
            return err_set(e, ERR_USAGE, "--contexts: at most %d lengths", MAX_CONTEXTS);
        memcpy(buf, p, len);
        buf[len] = '\0';
        size_t v;
        if (parse_size(buf, "--contexts", &v, e) < 0)
            return -1;
        if (v > MAX_CONTEXT)
            return err_set(e, ERR_USAGE, "--contexts: %zu is more than %zu rows", v, MAX_CONTEXT);
        o->contexts[o->n_contexts++] = v;
        p = comma ? comma + 1 : p + len;
        if (comma && !*p)
            return err_set(e, ERR_USAGE, "--contexts: '%s' ends with a comma", text);
    } while (*p);
    return 0;
}

static int parse_options(int argc, char **argv, BenchOpts *o, Err *e)
{
    static const struct option longopts[] = {
        { "isa", required_argument, 0, 0 },           { "contexts", required_argument, 0, 0 },
        { "reps", required_argument, 0, 0 },          { "bandwidth-mib", required_argument, 0, 0 },
        { "pool-mib", required_argument, 0, 0 },      { "quick", no_argument, 0, 0 },
        { "format", required_argument, 0, 0 },        { "help", no_argument, 0, 'h' },
        { "decode", no_argument, 0, 0 },              { "model", required_argument, 0, 0 },
        { "weights", required_argument, 0, 0 },       { "int-dot", optional_argument, 0, 0 },
        { "steps", required_argument, 0, 0 },         { "quiet", no_argument, 0, 0 },
        { "threads", required_argument, 0, 0 },
        { "split-k", no_argument, 0, 0 },
        { 0, 0, 0, 0 },
    };
    cli_options_begin();
    const char *name;
    int got;
    while ((got = cli_next_option(argc, argv, longopts, "bench", &name, e)) == CLI_OPTION) {
        int rc = 0;
        if (strcmp(name, "isa") == 0)
            o->isa = optarg;
        else if (strcmp(name, "contexts") == 0)
            rc = parse_contexts(optarg, o, e);
        else if (strcmp(name, "reps") == 0)
            rc = parse_size(optarg, "--reps", &o->reps, e);
        else if (strcmp(name, "bandwidth-mib") == 0)
            rc = parse_size(optarg, "--bandwidth-mib", &o->read_mib, e);
        else if (strcmp(name, "pool-mib") == 0)
            rc = parse_size(optarg, "--pool-mib", &o->pool_mib, e);
        else if (strcmp(name, "quick") == 0)
            o->quick = 1;
        else if (strcmp(name, "decode") == 0)
            o->decode = 1;
        else if (strcmp(name, "model") == 0)
            o->model = optarg;
        else if (strcmp(name, "weights") == 0)
            o->weights = optarg;
        else if (strcmp(name, "int-dot") == 0 && optarg && strcmp(optarg, "off") != 0)
            rc = err_set(e, ERR_USAGE, "bench: --int-dot=%s: --int-dot alone or --int-dot=off", optarg);
        else if (strcmp(name, "int-dot") == 0)
            o->int_dot = optarg ? -1 : 1;
        else if (strcmp(name, "quiet") == 0)
            o->quiet = 1;
        else if (strcmp(name, "split-k") == 0)
            o->split_k = 1;
        else if (strcmp(name, "steps") == 0)
            rc = parse_size(optarg, "--steps", &o->steps, e);
        else if (strcmp(name, "threads") == 0)
            rc = parse_size(optarg, "--threads", &o->threads, e);
        else if (strcmp(name, "format") == 0) {
            rc = out_format_parse(optarg, &o->fmt, e);
            if (rc == 0 && o->fmt == OUT_JSON)
                rc = err_set(e, ERR_USAGE, "--format: bench prints table or tsv, not json");
        }
        if (rc < 0)
            return -1;
    }
    if (got != CLI_DONE)
        return got == CLI_HELP ? 1 : -1;
    if (optind < argc)
        return err_set(e, ERR_USAGE, "bench: unexpected argument '%s' (see `kvscope bench --help`)", argv[optind]);
    if (o->reps > BENCH_MAX_REPS)
        return err_set(e, ERR_USAGE, "--reps: at most %d, got %zu", BENCH_MAX_REPS, o->reps);
    if (o->read_mib > MAX_READ_MIB)
        return err_set(e, ERR_USAGE, "--bandwidth-mib: at most %d, got %zu", MAX_READ_MIB, o->read_mib);
    if ((o->model || o->weights || o->steps) && !o->decode)
        return err_set(e, ERR_USAGE, "bench: --model, --weights and --steps go with --decode");
    if (o->model && o->weights)
        return err_set(e, ERR_USAGE, "bench: --model and --weights exclude each other");
    if (o->split_k && (o->decode || o->int_dot))
        return err_set(e, ERR_USAGE, "bench: --split-k goes without --decode and --int-dot");
    if (o->steps > 64)
        return err_set(e, ERR_USAGE, "--steps: at most 64, got %zu", o->steps);
    if (o->threads && !o->decode)
        return err_set(e, ERR_USAGE, "bench: --threads goes with --decode (the other sections time one thread)");
    if (o->threads && pool_set_threads(o->threads, e) < 0)
        return -1;
    if (o->pool_mib > ((size_t)1 << 20))
        return err_set(e, ERR_USAGE, "--pool-mib: at most 1048576 (1 TiB), got %zu", o->pool_mib);
    return 0;
}

/* The options not given, from --quick and the machine (util/machine.h's rule). */
static void fill_defaults(BenchOpts *o, const Machine *m)
{
    if (!o->reps)
        o->reps = o->quick ? 3 : 5;
    if (!o->pool_mib)
        o->pool_mib = o->quick ? 4 : machine_buffer_bytes(m, 8 * m->llc, POOL_CEILING) / MIB;
    /* the read the kernels' cold figures are held against: as large as their pool */
    if (!o->read_mib)
        o->read_mib = o->quick ? 16 : o->pool_mib > MAX_READ_MIB ? MAX_READ_MIB : o->pool_mib;
    if (!o->n_contexts && o->split_k) {
        static const size_t split[] = { 8192, 65536, 262144 }, quick[] = { 1024 };
        o->n_contexts = o->quick ? 1 : 3;
        memcpy(o->contexts, o->quick ? quick : split, o->n_contexts * sizeof *split);
    }
    if (!o->n_contexts && o->decode) {
        static const size_t decode[] = { 1024, 16384 }, quick[] = { 64 };
        o->n_contexts = o->quick ? 1 : 2;
        memcpy(o->contexts, o->quick ? quick : decode, o->n_contexts * sizeof *decode);
    }
    if (!o->model)
        o->model = o->quick ? "tiny" : "llama-3-8b";
    if (!o->steps)
        o->steps = o->quick ? 2 : 5;
    if (!o->n_contexts) {
        static const size_t full[] = { 1024, 8192, 65536 }, quick[] = { 256, 2048 };
        const size_t *src = o->quick ? quick : full;
        o->n_contexts = o->quick ? 2 : 3;
        memcpy(o->contexts, src, o->n_contexts * sizeof *src);
    }
    o->matvec_n = o->quick ? 512 : 4096;
}

/* Bytes of one format's K and V rows at context n (a BenchKv copy, near enough). */
static size_t kv_copy_bytes(Format f, size_t n)
{
    return 2 * (n * format_row_bytes(f, HEAD_DIM) + 64);
}

/* The largest pool yet (*pool, *f32_pool) raised to need, format f's:
 * f32's copies stay beside the others' (vs f32 in turn). */
static void raise_pool(Format f, size_t need, size_t *pool, size_t *f32_pool)
{
    size_t *p = f == FMT_F32 ? f32_pool : pool;
    *p = need > *p ? need : *p;
}

/* Fail (ERR_USAGE) when everything the run holds at once would not fit
 * in the memory available now. */
static int check_memory(const BenchOpts *o, const Machine *m, Err *e)
{
    size_t max_ctx = 0, masters = 0, pool = 0, f32_pool = 0;
    for (size_t i = 0; i < o->n_contexts; i++) {
        max_ctx = o->contexts[i] > max_ctx ? o->contexts[i] : max_ctx;
        for (int f = 0; f < FMT_ROW_COUNT; f++) {
            size_t copy = kv_copy_bytes((Format)f, o->contexts[i]);
            size_t need = bench_pool_bytes(copy, o->pool_mib * MIB);
            masters += copy;
            raise_pool((Format)f, need, &pool, &f32_pool);
        }
    }
    const size_t scratch = (MAX_GROUP + 2 * HEAD_DIM) * max_ctx * sizeof(float);
    const size_t mat = o->matvec_n * o->matvec_n * sizeof(float);
    const size_t need =
        o->read_mib * MIB + masters + pool + f32_pool + scratch + bench_pool_bytes(mat, o->pool_mib * MIB);
    const size_t have = m->mem_available;
    if (have && need > have) {
        char b1[32], b2[32];
        return err_set(e, ERR_USAGE, "bench: these sizes need %s but this machine has %s available (try smaller "
                       "--contexts, --pool-mib or --bandwidth-mib)", human_bytes(b1, sizeof b1, (double)need),
                       human_bytes(b2, sizeof b2, (double)have));
    }
    return 0;
}

/* One matvec implementation to time. */
typedef struct {
    BenchMatvecFn fn;
    const void *ctx;
    const char *name, *id;
} Impl;

/* Everything a run holds: the data, made once, and every repetition. */
typedef struct {
    const BenchOpts *o;
    const Kernels *k, *read_k;
    BenchRead read;
    BenchKv *kv;          /* [n_contexts][FMT_COUNT], the row formats filled (FMT_ROW_COUNT) */
    BenchQuery *queries;  /* [n_contexts][FMT_COUNT][BENCH_N_GROUPS] */
    BenchScratch scratch;
    BenchPool pool;       /* the copies of the format measured */
    BenchPool f32_pool;   /* f32's, whose steps are taken in turn with every format's (vs f32) */
    BenchMatrix mat;
    BenchOpenblas ob;
    int have_ob;
    char why[256], ours[48], ob_name[160], rep_dot_how[48];
    Impl impl[4];
    size_t n_impl, n_attn;
    BenchLoop loops[BENCH_MAX_LOOPS]; /* [n_loops]: bench_read_loops(read_k) */
    size_t n_loops;
    size_t n_read;        /* n_loops + 1: the loops, then the read through the f32 dot */
    BenchResult *rounds;  /* [n_read + n_attn + n_impl][reps]: bandwidth reads, attention, matvec */
    ProgressLine line;
    size_t section, n_sections; /* of every round: the read, each context's attention, the matvecs */
} Bench;

static void run_free(Bench *b)
{
    const size_t n_kv = b->o->n_contexts * FMT_COUNT;
    bench_read_free(&b->read);
    for (size_t i = 0; b->kv && i < n_kv; i++)
        bench_kv_free(&b->kv[i]);
    for (size_t i = 0; b->queries && i < n_kv * BENCH_N_GROUPS; i++)
        bench_query_free(&b->queries[i]);
    free(b->kv);
    free(b->queries);
    bench_scratch_free(&b->scratch);
    bench_pool_free(&b->pool);
    bench_pool_free(&b->f32_pool);
    bench_matrix_free(&b->mat);
    if (b->have_ob)
        bench_openblas_close(&b->ob);
    free(b->rounds);
}

static int run_prepare(Bench *b, Err *e)
{
    const BenchOpts *o = b->o;
    const size_t n_kv = o->n_contexts * FMT_COUNT;
    size_t max_ctx = 0, pool = 0, f32_pool = 0;
    progress_line_begin(&b->line, "kvscope bench: preparing the data and the reference results", NULL);
    b->kv = calloc(n_kv, sizeof *b->kv);
    b->queries = calloc(n_kv * BENCH_N_GROUPS, sizeof *b->queries);
    if (!b->kv || !b->queries)
        return err_set(e, ERR_RUNTIME, "bench: out of memory");
    for (size_t ci = 0; ci < o->n_contexts; ci++)
        max_ctx = o->contexts[ci] > max_ctx ? o->contexts[ci] : max_ctx;
    if (bench_read_init(&b->read, o->read_mib * MIB, e) < 0 ||
        bench_scratch_init(&b->scratch, max_ctx, MAX_GROUP, HEAD_DIM, e) < 0)
        return -1;
    for (size_t ci = 0; ci < o->n_contexts; ci++)
        for (int f = 0; f < FMT_ROW_COUNT; f++) {
            BenchKv *kv = &b->kv[ci * FMT_COUNT + (size_t)f];
            if (bench_kv_init(kv, (Format)f, o->contexts[ci], HEAD_DIM, SEED + ci, e) < 0)
                return -1;
            raise_pool((Format)f, bench_pool_bytes(kv->copy_bytes, o->pool_mib * MIB), &pool, &f32_pool);
            for (size_t gi = 0; gi < BENCH_N_GROUPS; gi++)
                if (bench_query_init(&b->queries[(ci * FMT_COUNT + (size_t)f) * BENCH_N_GROUPS + gi], kv,
                                     bench_groups[gi], o->int_dot > 0, &b->scratch, SEED + 7 * gi, e) < 0)
                    return -1;
        }
    if (bench_pool_init(&b->pool, pool, o->pool_mib * MIB, e) < 0 ||
        bench_pool_init(&b->f32_pool, f32_pool, o->pool_mib * MIB, e) < 0 ||
        bench_matrix_init(&b->mat, o->matvec_n, o->matvec_n, o->pool_mib * MIB, SEED, e) < 0)
        return -1;

    /* the matvecs: ours on the chosen ISA first (the others are compared with it) */
    Err none = { 0 };
    const Kernels *ref = kernels_select("ref", &none);
    b->have_ob = bench_openblas_open(&b->ob, b->why, sizeof b->why) == 0;
    snprintf(b->ours, sizeof b->ours, "kvscope %s", b->k->isa);
    snprintf(b->ob_name, sizeof b->ob_name, "OpenBLAS (%s)", b->ob.config);
    b->impl[b->n_impl++] = (Impl){ bench_matvec_kernels, b->k, b->ours, strcmp(b->k->isa, "ref") ? "kvscope" : "kvscope-ref" };
    if (strcmp(b->k->isa, "ref") != 0)
        b->impl[b->n_impl++] = (Impl){ bench_matvec_kernels, ref, "kvscope ref", "kvscope-ref" };
    b->impl[b->n_impl++] = (Impl){ bench_matvec_gsl, NULL, "GSL CBLAS (libgslcblas)", "gsl-cblas" };
    if (b->have_ob)
        b->impl[b->n_impl++] = (Impl){ bench_matvec_openblas, &b->ob, b->ob_name, "openblas" };

    /* one untimed pass of the reads and matvecs: first touches, lazy loading
     * and clock ramps then fall outside every round */
    BenchResult warmup;
    for (size_t l = 0; l < b->n_loops; l++)
        bench_read(b->read_k, &b->loops[l], &b->read, &warmup);
    bench_read(b->read_k, NULL, &b->read, &warmup);
    for (size_t i = 0; i < b->n_impl; i++)
        bench_matvec(b->impl[i].fn, b->impl[i].ctx, &b->mat, &warmup);

    b->n_attn = n_kv * BENCH_N_GROUPS * BENCH_N_ALGOS * 2;
    b->rounds = calloc((b->n_read + b->n_attn + b->n_impl) * o->reps, sizeof *b->rounds);
    if (!b->rounds)
        return err_set(e, ERR_RUNTIME, "bench: out of memory");
    return 0;
}

/* One round's steps of format f at context ci, every form: cold, the
 * groups' steps in turn with each other and with f32's (so G4/G1 and vs
 * f32 compare like with like), then warm. f32 comes first: its pool is
 * filled then and kept for the others. */
static int attention_format(Bench *b, BenchReport *rep, size_t round, size_t ci, Format f, Err *e)
{
    const size_t R = b->o->reps, G = BENCH_N_GROUPS;
    const double warm_min = b->o->quick ? 0.002 : 0.02;
    BenchPool *pool = f == FMT_F32 ? &b->f32_pool : &b->pool;
    if (bench_pool_fill(pool, &b->kv[ci * FMT_COUNT + (size_t)f], e) < 0)
        return -1;
    BenchQuery *bq[2 * BENCH_N_GROUPS]; /* f's groups, then f32's */
    BenchPool *pools[2 * BENCH_N_GROUPS];
    for (size_t gi = 0; gi < G; gi++) {
        bq[gi] = &b->queries[(ci * FMT_COUNT + (size_t)f) * G + gi];
        bq[G + gi] = &b->queries[ci * FMT_COUNT * G + gi];
        pools[gi] = pool;
        pools[G + gi] = &b->f32_pool;
    }
    const size_t n_queries = f == FMT_F32 ? G : 2 * G;
    for (size_t ai = 0; ai < BENCH_N_ALGOS; ai++) {
        BenchResult cold[2 * BENCH_N_GROUPS];
        bench_attend_cold(b->k, pools, bq, n_queries, &b->scratch, bench_algos[ai], cold);
        for (size_t gi = 0; gi < G; gi++) {
            cold[gi].f32_seconds = cold[n_queries - G + gi].seconds; /* f32's own, or its in turn */
            size_t m = (size_t)(bench_attn_at(rep, ci, f, gi, ai, 1) - rep->attn);
            b->rounds[(b->n_read + m) * R + round] = cold[gi];
            m = (size_t)(bench_attn_at(rep, ci, f, gi, ai, 0) - rep->attn);
            bench_attend(b->k, pool, bq[gi], &b->scratch, bench_algos[ai], 0, warm_min,
                         &b->rounds[(b->n_read + m) * R + round]);
        }
    }
    return 0;
}

/* The progress line as a section of a round starts. */
static void section(Bench *b, size_t round, const char *what)
{
    char part[128];
    snprintf(part, sizeof part, "round %zu of %zu, %s", round + 1, b->o->reps, what);
    progress_line_detail(&b->line, part);
    progress_line_count(&b->line, b->section++, b->n_sections);
}

/* One round: one repetition of every measurement, the bandwidth first.
 *
 * The bandwidth buffer and the matrix copies sit untouched while the
 * attention steps run, and on a shared virtual machine the first sweep of
 * such memory can be slow. On an AVX-512 Xeon whichever matvec came first
 * after the attention section was slowed: kvscope's rounds took 5.5 to
 * 18.4 ms, and with the order reversed OpenBLAS's took 7.9 to 12.4 (6.0 to
 * 7.1 when not first) while kvscope's held at 4.5 to 5.2. So each section
 * starts with one untimed sweep of its data. */
static int run_round(Bench *b, BenchReport *rep, size_t round, Err *e)
{
    const BenchOpts *o = b->o;
    const size_t R = o->reps;
    BenchResult untimed;
    char what[64];
    section(b, round, "read bandwidth");
    bench_read(b->read_k, NULL, &b->read, &untimed);
    for (size_t l = 0; l < b->n_loops; l++)
        bench_read(b->read_k, &b->loops[l], &b->read, &b->rounds[l * R + round]);
    bench_read(b->read_k, NULL, &b->read, &b->rounds[b->n_loops * R + round]);
    for (size_t ci = 0; ci < o->n_contexts; ci++) {
        snprintf(what, sizeof what, "decode attention, context %zu", o->contexts[ci]);
        section(b, round, what);
        for (int f = 0; f < FMT_ROW_COUNT; f++)
            if (attention_format(b, rep, round, ci, (Format)f, e) < 0)
                return -1;
    }
    snprintf(what, sizeof what, "matvec %zu x %zu", o->matvec_n, o->matvec_n);
    section(b, round, what);
    bench_matvec(b->impl[0].fn, b->impl[0].ctx, &b->mat, &untimed);
    for (size_t i = 0; i < b->n_impl; i++)
        bench_matvec(b->impl[i].fn, b->impl[i].ctx, &b->mat, &b->rounds[(b->n_read + b->n_attn + i) * R + round]);
    return 0;
}

/* Medians of the rounds, then the report. */
static void run_print(Bench *b, BenchReport *rep)
{
    const size_t R = b->o->reps;
    BenchResult reads[BENCH_MAX_LOOPS + 1];
    const char *names[BENCH_MAX_LOOPS + 1];
    for (size_t l = 0; l < b->n_read; l++) {
        bench_summarize(&reads[l], &b->rounds[l * R], R);
        names[l] = l < b->n_loops ? b->loops[l].name : b->rep_dot_how;
    }
    bench_report_bandwidth(rep, reads, names, b->n_loops, &reads[b->n_loops]);
    for (size_t m = 0; m < b->n_attn; m++)
        bench_summarize(&rep->attn[m], &b->rounds[(b->n_read + m) * R], R);
    bench_report_attention(rep);
    BenchMatvecRow rows[4];
    for (size_t i = 0; i < b->n_impl; i++) {
        rows[i] = (BenchMatvecRow){ .name = b->impl[i].name, .id = b->impl[i].id };
        bench_summarize(&rows[i].r, &b->rounds[(b->n_read + b->n_attn + i) * R], R);
    }
    bench_report_matvec(rep, b->mat.rows, b->mat.cols, b->mat.n_copies, rows, b->n_impl,
                        b->have_ob ? NULL : b->why);
}

/* The roofs the view and run place passes against: this run's read
 * bandwidth and the kernels' matmul on a block in cache, kept in the state
 * folder (sim/roofs.h). Only a bandwidth read past the LLC is a DRAM roof:
 * --quick, or a --bandwidth-mib under twice the LLC, keeps nothing, nor
 * does a run where KVSCOPE_ROOFS gives the roofs (the tests set it, so
 * they never write the user's state folder). A folder that cannot be
 * written costs a line on stderr. */
static void keep_roofs(const BenchOpts *o, const Machine *m, const Kernels *k, double bandwidth)
{
    const char *given = getenv(ROOFS_ENV);
    if (o->quick || o->read_mib * MIB < 2 * m->llc || (given && *given)) {
        if (o->fmt == OUT_TABLE)
            printf("\nroofs: not kept for the view and run (%s)\n",
                   o->quick ? "--quick's figures say nothing about the machine"
                   : given && *given ? ROOFS_ENV " gives them"
                                     : "the bandwidth buffer is under twice the LLC: its reads may come from cache");
        return;
    }
    Roofs r = { .read_bps = bandwidth, .flops_ps = roofs_probe_compute(k, 0.1), .source = ROOFS_BENCH,
                .when = (int64_t)time(NULL) };
    snprintf(r.isa, sizeof r.isa, "%s", k->isa);
    char path[PATH_MAX], line[256];
    Err e = { 0 };
    if (roofs_save(&r, path, sizeof path, &e) < 0) {
        fprintf(stderr, "kvscope bench: %s\n", e.msg);
        return;
    }
    if (o->fmt == OUT_TABLE)
        printf("\n%s (compute: the %s matmul on a block in cache)\nkept in %s for `kvscope view` and `kvscope run`\n",
               roofs_describe(&r, line, sizeof line), k->isa, path);
    else
        fprintf(stderr, "kvscope bench: roofs kept in %s\n", path);
}

int cmd_bench(int argc, char **argv)
{
    BenchOpts o = { 0 };
    Err e = { 0 };
    int pr = parse_options(argc, argv, &o, &e);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return cli_fail(&e);
    Bench b = { .o = &o };
    b.k = kernels_select(o.isa, &e);
    if (!b.k)
        return cli_fail(&e);
    Machine mach;
    if (machine_read(&mach, &e) < 0)
        return cli_fail(&e);
    char note[256], llc_text[128];
    if (!o.quick && !o.pool_mib && *machine_llc_note(&mach, note, sizeof note)) /* the default sizes follow it */
        fprintf(stderr, "kvscope bench: %s\n", note);
    fill_defaults(&o, &mach);
    if (o.split_k) {
        BenchSplitArgs sa = { .isa = o.isa, .contexts = o.contexts, .n_contexts = o.n_contexts, .reps = o.reps,
                              .ceiling = POOL_CEILING, .mach = &mach, .fmt = o.fmt };
        return bench_split(&sa);
    }
    if (o.decode) {
        BenchDecodeArgs da = { .isa = o.isa, .model = o.model, .weights = o.weights, .int_dot = o.int_dot, .contexts = o.contexts, .n_contexts = o.n_contexts,
                               .steps = o.steps, .read_bytes = o.read_mib * MIB, .reps = o.reps, .fmt = o.fmt,
                               .quiet = o.quiet };
        return bench_decode(&da);
    }
    if (check_memory(&o, &mach, &e) < 0)
        return cli_fail(&e);

    const Kernels *have[4];
    char isa_list[64] = "";
    size_t n_have = kernels_available(have, 4);
    for (size_t i = 0; i < n_have; i++)
        snprintf(isa_list + strlen(isa_list), sizeof isa_list - strlen(isa_list), "%s%s", i ? ", " : "", have[i]->isa);
    b.read_k = have[n_have - 1]; /* the bandwidth is the machine's: the best table reads it */
    b.n_loops = bench_read_loops(b.read_k, b.loops);
    b.n_read = b.n_loops + 1;
    snprintf(b.rep_dot_how, sizeof b.rep_dot_how, "%s f32 dot", b.read_k->isa);
    BenchReport rep = { .out = o.fmt, .int_dot = o.int_dot > 0, .isa = b.k->isa, .isa_note = b.k->note, .isa_list = isa_list, .dot_how = b.rep_dot_how,
                        .reps = o.reps, .quick = o.quick, .llc = mach.llc,
                        .llc_text = machine_llc_text(&mach, llc_text, sizeof llc_text),
                        .read_bytes = o.read_mib * MIB, .pool_bytes = o.pool_mib * MIB, .head_dim = HEAD_DIM,
                        .contexts = o.contexts, .n_contexts = o.n_contexts };
    rep.attn = calloc(o.n_contexts * FMT_COUNT * BENCH_N_GROUPS * BENCH_N_ALGOS * 2, sizeof *rep.attn);
    progress_line_init(&b.line, o.quiet);
    int rc = rep.attn ? run_prepare(&b, &e) : err_set(&e, ERR_RUNTIME, "bench: out of memory");
    progress_line_end(&b.line);
    if (rc == 0 && !b.have_ob)
        fprintf(stderr, "kvscope bench: OpenBLAS: not installed (%s)\n", b.why);
    b.n_sections = o.reps * (2 + o.n_contexts);
    progress_line_begin(&b.line, "kvscope bench", "section");
    for (size_t round = 0; round < o.reps && rc == 0; round++)
        rc = run_round(&b, &rep, round, &e);
    progress_line_end(&b.line);
    if (rc == 0) {
        bench_report_start(&rep);
        run_print(&b, &rep);
        if (!rep.wrong)
            keep_roofs(&o, &mach, b.k, rep.bandwidth);
    }
    run_free(&b);
    free(rep.attn);
    if (rc < 0)
        return cli_fail(&e);
    if (rep.wrong) {
        err_set(&e, ERR_RUNTIME, "bench: %zu result(s) differ from the reference by more than %.0e (marked WRONG)",
                rep.wrong, BENCH_TOLERANCE);
        return cli_fail(&e);
    }
    return EXIT_OK;
}
