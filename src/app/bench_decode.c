/* bench_decode.c: `kvscope bench --decode` (bench_decode.h): the bandwidth
 * first, then the model's decode step for each cache format and context
 * (sim/decode_bench.c), printed by report/bench_report.c. */
#include "app/bench_decode.h"

#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "app/progress_line.h"
#include "kernels/bench.h"
#include "report/bench_report.h"
#include "sim/decode_bench.h"

/* The cache formats a decode is measured with: the mixed-precision proposal's and llama.cpp's
 * usual choices for a long context. */
static const char *const caches[] = { "contiguous+quant:k=f16,v=f16", "contiguous+quant:k=q8_0,v=q8_0" };
static const char *const cache_names[] = { "f16", "q8_0" };
#define N_CACHES (sizeof caches / sizeof caches[0])

/* The model with shared weights, its positions stretched to the longest
 * context plus the steps. */
static int load_model(const BenchDecodeArgs *a, Model *m, Err *e)
{
    ModelOpts mo = { .model = a->model, .isa = a->isa, .shared = !a->weights, .weights = a->weights };
    Config cfg;
    if (setup_load_config(&mo, &cfg, e) < 0)
        return -1;
    if (cfg.architecture != ARCH_DECODER || cfg.attention == ATTN_MLA)
        return err_set(e, ERR_USAGE, "bench --decode: model '%s' is not a decoder with standard attention", cfg.name);
    size_t longest = 0;
    for (size_t i = 0; i < a->n_contexts; i++)
        longest = a->contexts[i] > longest ? a->contexts[i] : longest;
    if (cfg.max_seq_len < longest + a->steps)
        cfg.max_seq_len = longest + a->steps;
    KvGeometry g = config_kv_geometry(&cfg, 1);
    if (setup_model(&cfg, a->isa, cfg.n_layers * cfg.max_seq_len * kv_row_pair_bytes(&g, FMT_F16, FMT_F16), m,
                    e) < 0)
        return -1;
    if (a->int_dot) { /* given: --int-dot (1) or --int-dot=off (-1); else the checkpoint's default */
        m->int_dot = a->int_dot > 0 ? INT_DOT_EVEN : INT_DOT_OFF;
        m->mat_dot = m->int_dot;
    }
    m->attend = ATTEND_FLASH; /* as `kvscope run` decodes */
    return 0;
}

/* The read bandwidth, as section 1 of the bench measures it, printed (the
 * progress line cleared first). */
static int measure_bandwidth(const BenchDecodeArgs *a, BenchReport *rep, ProgressLine *line, Err *e)
{
    const Kernels *have[4];
    size_t n_have = kernels_available(have, 4);
    const Kernels *k = have[n_have - 1]; /* the machine's widest reads */
    BenchRead br;
    if (bench_read_init(&br, a->read_bytes, e) < 0)
        return -1;
    BenchResult loops[BENCH_MAX_LOOPS], dot;
    const char *names[BENCH_MAX_LOOPS];
    bench_read(k, NULL, &br, &dot); /* first touches outside the timing */
    size_t n = bench_read_each(k, &br, a->reps, loops, names);
    bench_read(k, NULL, &br, &dot);
    bench_read_free(&br);
    progress_line_clear(line);
    bench_report_bandwidth(rep, loops, names, n, &dot);
    return 0;
}

int bench_decode(const BenchDecodeArgs *a)
{
    Err e = { 0 };
    Model m;
    ProgressLine line;
    progress_line_init(&line, a->quiet);
    progress_line_begin(&line, "kvscope bench: the model", NULL);
    if (load_model(a, &m, &e) < 0) {
        progress_line_end(&line);
        return cli_fail(&e);
    }
    char dot_how[48];
    snprintf(dot_how, sizeof dot_how, "%s f32 dot", m.kern->isa);
    BenchReport rep = { .out = a->fmt, .isa = m.kern->isa, .isa_note = m.kern->note, .isa_list = m.kern->isa, .dot_how = dot_how,
                        .reps = a->reps, .read_bytes = a->read_bytes, .int_dot = a->int_dot > 0,
                        .mat_dot = model_int_dots(&m) };
    const size_t parts = 1 + a->n_contexts * N_CACHES; /* the bandwidth, then each context and cache */
    progress_line_clear(&line);
    if (a->fmt == OUT_TSV)
        bench_report_start(&rep);
    progress_line_begin(&line, "kvscope bench", "part");
    progress_line_detail(&line, "read bandwidth");
    progress_line_count(&line, 0, parts);
    int rc = measure_bandwidth(a, &rep, &line, &e);
    BenchDecodeRow rows[N_CACHES * 16];
    size_t n = 0;
    for (size_t ci = 0; rc == 0 && ci < a->n_contexts; ci++)
        for (size_t f = 0; rc == 0 && f < N_CACHES; f++) {
            char part[64];
            snprintf(part, sizeof part, "decode, %s cache, context %zu", cache_names[f], a->contexts[ci]);
            progress_line_detail(&line, part);
            progress_line_count(&line, 1 + n, parts);
            rows[n] = (BenchDecodeRow){ .cache = cache_names[f],
                                        .r = { .context = a->contexts[ci], .steps = a->steps } };
            rc = decode_bench_run(&m, caches[f], &rows[n].r, &e);
            n++;
        }
    progress_line_end(&line);
    if (rc < 0) {
        model_free(&m);
        return cli_fail(&e);
    }
    bench_report_decode(&rep, &m.cfg, rows, n);
    model_free(&m);
    return EXIT_OK;
}
