/* cmd_bench.c: `kvscope bench`: this machine's read bandwidth, then decode
 * attention and a matvec measured against it (kernels/bench.h measures,
 * app/bench_report.c prints). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/bench_report.h"
#include "app/commands.h"
#include "util/parse.h"
#include "util/sysmem.h"

#define HEAD_DIM 128
#define MAX_CONTEXTS 16
#define MAX_CONTEXT ((size_t)1 << 26)
#define MIB ((size_t)1 << 20)
#define ASSUMED_LLC (32 * MIB) /* when the system does not say */
#define SEED 20240601u

typedef struct {
    const char *isa;
    OutFormat fmt;
    size_t reps, read_mib, pool_mib, matvec_n;
    size_t contexts[MAX_CONTEXTS], n_contexts;
    int quick;
} BenchOpts;

static void help(void)
{
    printf("usage: kvscope bench [OPTIONS]\n\n"
           "Measure, on one core and in one run:\n"
           "  1. this machine's read bandwidth: a float array at least 8x the last-level cache\n"
           "     (LLC), summed with the kernels' f32 dot; every other figure is a percentage of it;\n"
           "  2. one decode step of attention (one KV head, head_dim %d, a query seeing every row)\n"
           "     for every cache format (f32, f16, q8_0, q4_0, int4, fp4), at each context, for\n"
           "     G = 1 and G = 4 query heads per KV head, in the flash, naive and materialize forms;\n"
           "     cold (each step reads the next of many identical K/V copies, together at least 8x\n"
           "     the LLC, so the rows come from memory) and warm (the same K/V every step);\n"
           "  3. a 4096 x 4096 f32 matvec by kvscope's kernels (the chosen ISA and ref), GSL's\n"
           "     CBLAS and OpenBLAS when libopenblas.so.0 is installed (loaded at run time, one\n"
           "     thread), cold over copies of the matrix.\n\n"
           "How to read it: time is per step (or per matvec); bytes are what the kernel counted\n"
           "reading (Counters.kv_bytes_read; materialize adds its f32 view, view_bytes); GB/s is\n"
           "bytes / time (10^9 bytes per second); %% bw is that over the measured read bandwidth,\n"
           "so a cold step near 100%% is limited by memory, far below it by computation. Warm\n"
           "figures can pass 100%% where the data fits in cache. vs f32 is the f32 step's time over\n"
           "this format's (same context, form, G, cache): what the smaller format buys. G4/G1 is\n"
           "the G = 4 step's time over the G = 1 step's: near 1 when the group shares each K/V read.\n"
           "Every figure is the median of --reps runs; every output is checked against the\n"
           "reference kernels (max relative difference; beyond %.0e it is marked WRONG and the\n"
           "exit status is 1). The machine may be shared: compare figures of one run.\n\n"
           "options:\n"
           "  --isa ISA           kernels: auto (default; KVSCOPE_ISA overrides), ref, avx2, avx512\n"
           "  --contexts LIST     context lengths, comma-separated (default 1024,8192,65536)\n"
           "  --reps N            timed runs per figure, reporting the median (default 5)\n"
           "  --bandwidth-mib N   the bandwidth buffer in MiB (default 512, or 8x the LLC if larger)\n"
           "  --pool-mib N        the cold data in MiB (default 8x the LLC)\n"
           "  --quick             tiny sizes, 3 runs: finishes in seconds (for tests; the figures\n"
           "                      then say nothing about the machine)\n"
           "  --format F          table (default) or tsv (one row per measurement, a header row)\n\n"
           "Progress goes to stderr, one line per section. A full run takes a minute or two.\n"
           "example: kvscope bench --contexts 4096,32768 --reps 7\n",
           HEAD_DIM, BENCH_TOLERANCE);
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
        { 0, 0, 0, 0 },
    };
    opterr = 0;
    optind = 1;
    int c, idx;
    while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        if (c == 'h')
            return 1;
        if (c == '?')
            return err_set(e, ERR_USAGE, "bench: unknown or incomplete option '%s' (see `kvscope bench --help`)",
                           argv[optind - 1]);
        const char *name = longopts[idx].name;
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
        else if (strcmp(name, "format") == 0) {
            rc = cli_parse_format(optarg, &o->fmt, e);
            if (rc == 0 && o->fmt == OUT_JSON)
                rc = err_set(e, ERR_USAGE, "--format: bench prints table or tsv, not json");
        }
        if (rc < 0)
            return -1;
    }
    if (optind < argc)
        return err_set(e, ERR_USAGE, "bench: unexpected argument '%s' (see `kvscope bench --help`)", argv[optind]);
    if (o->reps > 1000)
        return err_set(e, ERR_USAGE, "--reps: at most 1000, got %zu", o->reps);
    if (o->read_mib > ((size_t)1 << 20) || o->pool_mib > ((size_t)1 << 20))
        return err_set(e, ERR_USAGE, "--bandwidth-mib and --pool-mib: at most 1048576 (1 TiB)");
    return 0;
}

/* The options not given, from --quick and the cache size. */
static void fill_defaults(BenchOpts *o, size_t llc)
{
    const size_t llc8 = 8 * (llc ? llc : ASSUMED_LLC) / MIB;
    if (!o->reps)
        o->reps = o->quick ? 3 : 5;
    if (!o->read_mib)
        o->read_mib = o->quick ? 16 : (llc8 > 512 ? llc8 : 512);
    if (!o->pool_mib)
        o->pool_mib = o->quick ? 4 : llc8;
    if (!o->n_contexts) {
        static const size_t full[] = { 1024, 8192, 65536 }, quick[] = { 256, 2048 };
        const size_t *src = o->quick ? quick : full;
        o->n_contexts = o->quick ? 2 : 3;
        memcpy(o->contexts, src, o->n_contexts * sizeof *src);
    }
    o->matvec_n = o->quick ? 512 : 4096;
}

/* Fail (ERR_USAGE) when the largest section would not fit in memory. */
static int check_memory(const BenchOpts *o, Err *e)
{
    size_t max_ctx = 0;
    for (size_t i = 0; i < o->n_contexts; i++)
        max_ctx = o->contexts[i] > max_ctx ? o->contexts[i] : max_ctx;
    const size_t copy = 2 * max_ctx * HEAD_DIM * sizeof(float); /* an f32 copy of K and V */
    size_t attn = (o->pool_mib * MIB > copy ? o->pool_mib * MIB : 2 * copy) + copy + 2 * copy;
    size_t mat = o->matvec_n * o->matvec_n * sizeof(float), mv = o->pool_mib * MIB > mat ? o->pool_mib * MIB : 2 * mat;
    size_t need = o->read_mib * MIB;
    need = attn > need ? attn : need;
    need = mv + mat > need ? mv + mat : need;
    size_t have = sysmem_physical_bytes();
    if (have && need > have) {
        char b1[32], b2[32];
        return err_set(e, ERR_USAGE, "bench: these sizes need %s but this machine has %s (try smaller --contexts, "
                       "--pool-mib or --bandwidth-mib)", cli_bytes(b1, sizeof b1, (double)need),
                       cli_bytes(b2, sizeof b2, (double)have));
    }
    return 0;
}

static int run_attention(const Kernels *k, const BenchOpts *o, BenchReport *rep, const BenchTiming *t, Err *e)
{
    for (size_t ci = 0; ci < o->n_contexts; ci++) {
        fprintf(stderr, "kvscope bench: 2/3 decode attention, context %zu (%zu of %zu)\n", o->contexts[ci], ci + 1,
                o->n_contexts);
        for (int f = 0; f < FMT_COUNT; f++) {
            BenchKv kv;
            if (bench_kv_init(&kv, (Format)f, o->contexts[ci], HEAD_DIM, o->pool_mib * MIB, SEED + ci, e) < 0)
                return -1;
            for (size_t gi = 0; gi < BENCH_N_GROUPS; gi++) {
                BenchQuery bq;
                if (bench_query_init(&bq, &kv, bench_groups[gi], SEED + 7 * gi, e) < 0) {
                    bench_kv_free(&kv);
                    return -1;
                }
                int rc = 0;
                for (size_t ai = 0; ai < BENCH_N_ALGOS && rc == 0; ai++)
                    for (int cold = 1; cold >= 0 && rc == 0; cold--)
                        rc = bench_attend(k, &kv, &bq, bench_algos[ai], cold, t,
                                          bench_attn_at(rep, ci, (Format)f, gi, ai, cold), e);
                bench_query_free(&bq);
                if (rc < 0) {
                    bench_kv_free(&kv);
                    return -1;
                }
            }
            bench_kv_free(&kv);
        }
    }
    return 0;
}

/* One matvec implementation to time. */
typedef struct {
    BenchMatvecFn fn;
    const void *ctx;
    const char *name, *id;
} Impl;

static int run_matvec(const Kernels *k, const BenchOpts *o, BenchReport *rep, const BenchTiming *t, Err *e)
{
    fprintf(stderr, "kvscope bench: 3/3 matvec %zu x %zu\n", o->matvec_n, o->matvec_n);
    Err none = { 0 };
    const Kernels *ref = kernels_select("ref", &none);
    BenchOpenblas ob;
    char why[256] = "";
    int have_ob = bench_openblas_open(&ob, why, sizeof why) == 0;
    char ours[48], ob_name[160];
    snprintf(ours, sizeof ours, "kvscope %s", k->isa);
    snprintf(ob_name, sizeof ob_name, "OpenBLAS (%s)", ob.config);
    Impl impl[4];
    size_t n = 0;
    impl[n++] = (Impl){ bench_matvec_kernels, k, ours, strcmp(k->isa, "ref") ? "kvscope" : "kvscope-ref" };
    if (strcmp(k->isa, "ref") != 0)
        impl[n++] = (Impl){ bench_matvec_kernels, ref, "kvscope ref", "kvscope-ref" };
    impl[n++] = (Impl){ bench_matvec_gsl, NULL, "GSL CBLAS (libgslcblas)", "gsl-cblas" };
    if (have_ob)
        impl[n++] = (Impl){ bench_matvec_openblas, &ob, ob_name, "openblas" };
    else
        fprintf(stderr, "kvscope bench: OpenBLAS: not installed (%s)\n", why);

    BenchMatrix m;
    BenchMatvecRow rows[4];
    int rc = bench_matrix_init(&m, o->matvec_n, o->matvec_n, o->pool_mib * MIB, SEED, e);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rows[i] = (BenchMatvecRow){ .name = impl[i].name, .id = impl[i].id };
        rc = bench_matvec(impl[i].fn, impl[i].ctx, &m, t, &rows[i].r, e);
    }
    if (rc == 0)
        bench_report_matvec(rep, m.rows, m.cols, m.n_copies, rows, n, have_ob ? NULL : why);
    bench_matrix_free(&m);
    if (have_ob)
        bench_openblas_close(&ob);
    return rc;
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
    const Kernels *k = kernels_select(o.isa, &e);
    if (!k)
        return cli_fail(&e);
    const char *llc_source;
    size_t llc = bench_llc_bytes(&llc_source);
    fill_defaults(&o, llc);
    if (check_memory(&o, &e) < 0)
        return cli_fail(&e);

    const Kernels *have[4];
    char isa_list[64] = "";
    size_t n_have = kernels_available(have, 4);
    for (size_t i = 0; i < n_have; i++)
        snprintf(isa_list + strlen(isa_list), sizeof isa_list - strlen(isa_list), "%s%s", i ? ", " : "", have[i]->isa);
    const BenchTiming t = { .reps = o.reps, .min_rep_seconds = o.quick ? 0.002 : 0.02 };
    BenchReport rep = { .out = o.fmt, .isa = k->isa, .isa_list = isa_list, .reps = o.reps, .quick = o.quick,
                        .llc = llc, .llc_source = llc_source, .read_bytes = o.read_mib * MIB,
                        .pool_bytes = o.pool_mib * MIB, .head_dim = HEAD_DIM, .contexts = o.contexts,
                        .n_contexts = o.n_contexts };
    rep.attn = calloc(o.n_contexts * FMT_COUNT * BENCH_N_GROUPS * BENCH_N_ALGOS * 2, sizeof *rep.attn);
    if (!rep.attn) {
        err_set(&e, ERR_RUNTIME, "bench: out of memory");
        return cli_fail(&e);
    }
    bench_report_start(&rep);

    int rc = 0;
    fprintf(stderr, "kvscope bench: 1/3 read bandwidth, %zu MiB x %zu\n", o.read_mib, o.reps);
    BenchResult bw;
    rc = bench_read(k, o.read_mib * MIB, &t, &bw, &e);
    if (rc == 0) {
        bench_report_bandwidth(&rep, &bw);
        fflush(stdout);
        rc = run_attention(k, &o, &rep, &t, &e);
    }
    if (rc == 0) {
        bench_report_attention(&rep);
        fflush(stdout);
        rc = run_matvec(k, &o, &rep, &t, &e);
    }
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
