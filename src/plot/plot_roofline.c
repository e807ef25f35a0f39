/* plot_roofline.c: figure 18, measured passes on this machine's roofline,
 * and the same passes' FLOPs and bytes on a data-center GPU's.
 *
 * Every (model, cache format, length, batch) is one session: its prompt of
 * `length` tokens is the prefill point (batch 1), and the decode steps that
 * follow, at context length + 1 .., are the decode point (the fastest of
 * them, with its own counters). The GPU panel places each pass where the
 * GPU's roofs let it go at best, min(peak, bandwidth x intensity): nothing
 * is measured there, the intensities are kvscope's counts.
 *
 * The crossover: a decode step of a batch of B sequences, in an engine that
 * reads each weight once for the whole batch, does B x F FLOPs and moves
 * W + B x K bytes (W the weights, K one sequence's K/V read and written), so
 * its intensity B F / (W + B K) grows with B toward F / K. It reaches a
 * ridge R at B = R W / (F - R K), and never when F <= R K: then each
 * sequence's own K/V bytes hold decode below the ridge at any batch. F, W
 * and K are the counters of the batch-1 step. (kvscope's own batched step
 * runs the logits' matmul one sequence at a time, so its measured batch-4
 * point moves right by less.) */
#include "plot/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/roofs.h"
#include "sim/session.h"

/* The GPU of panel (b): NVIDIA H100 SXM, from NVIDIA's H100 Tensor Core GPU
 * data sheet (nvidia.com/en-us/data-center/h100, the H100 SXM column): GPU
 * memory bandwidth 3.35 TB/s; FP16 and BF16 Tensor Core 1,979 TFLOPS "with
 * sparsity", which the sheet notes is twice the dense figure. */
#define GPU_NAME "NVIDIA H100 SXM"
#define GPU_BYTES_PER_S 3.35e12
#define GPU_SPARSE_FLOPS_PER_S 1979e12
#define GPU_FLOPS_PER_S (GPU_SPARSE_FLOPS_PER_S / 2) /* dense */
#define GPU_SOURCE "NVIDIA H100 Tensor Core GPU data sheet (nvidia.com/en-us/data-center/h100), H100 SXM"

#define DECODE_STEPS 4
#define WIDE_BATCH 4
#define SEED_PROMPT 7u

typedef struct {
    const char *name, *spec;
} CacheChoice;

static const char *const models[] = { "tiny", "small", "kjv-small" };
static const CacheChoice caches[] = {
    { "f32", "contiguous" },
    { "f16", "contiguous+quant:k=f16,v=f16" },
    { "q4_0", "contiguous+quant:k=q4_0,v=q4_0" },
};
static const size_t lengths[] = { 4, 16, 64, 200 };
static const size_t batches[] = { 1, WIDE_BATCH };
#define N_MODELS (sizeof models / sizeof models[0])
#define N_CACHES (sizeof caches / sizeof caches[0])
#define N_LENGTHS (sizeof lengths / sizeof lengths[0])
#define N_BATCHES (sizeof batches / sizeof batches[0])

/* One session's two points. */
typedef struct {
    Counters prefill, decode; /* decode: the fastest step's own counters */
} Passes;

static int run_session(const PlotCtx *ctx, const Config *cfg, const char *spec, size_t length, size_t batch,
                       Passes *out, Err *e)
{
    int *prompt = malloc(length * sizeof *prompt);
    if (!prompt)
        return err_set(e, ERR_RUNTIME, "plot: out of memory for a prompt");
    uint64_t state = ctx->seed * 2654435761u + SEED_PROMPT;
    for (size_t i = 0; i < length; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        prompt[i] = (int)((state >> 33) % cfg->vocab);
    }
    SessionSpec sp = { .cfg = *cfg, .kern = ctx->kern, .attend = ATTEND_FLASH, .cache_spec = spec,
                       .prompt = prompt, .prompt_len = length, .uncached = UNCACHED_FORMULA, .batch = batch };
    sp.go.n_generate = DECODE_STEPS + 1;
    sp.go.sample_seed = 1;
    Session *s = NULL;
    int rc = session_init(&s, &sp, e);
    while (rc == 0 && (rc = session_step(s, e)) == 1)
        rc = 0;
    free(prompt);
    if (rc < 0) {
        session_free(s);
        return -1;
    }
    out->prefill = session_record(s, 0)->ctr;
    const StepRecord *best = NULL;
    for (size_t i = 1; i < session_steps(s); i++) {
        const StepRecord *r = session_record(s, i);
        if (r->phase == PHASE_DECODE && (!best || r->ctr.seconds < best->ctr.seconds))
            best = r;
    }
    out->decode = best ? best->ctr : (Counters){ 0 };
    session_free(s);
    return 0;
}

/* B where a decode step's intensity reaches `ridge` (see the top), from
 * the batch-1 step's counters; INFINITY when it never does. */
static double crossover(const Counters *one, double ridge, double *f1, double *w, double *k1)
{
    *f1 = (double)counters_total_flops(one);
    *w = (double)one->weight_bytes_read;
    *k1 = (double)(one->kv_bytes_read + one->kv_bytes_written + one->view_bytes);
    const double denom = *f1 - ridge * *k1;
    return denom > 0 ? ridge * *w / denom : INFINITY;
}

static void write_point(FILE *f, const char *model, const char *cache, const char *phase, size_t length, size_t batch,
                        const Counters *c, const Roofs *cpu, const Roofs *gpu)
{
    RoofPoint p;
    roofline_point(&p, c, cpu);
    fprintf(f, "%s\t%s\t%s\t%zu\t%zu\t%llu\t%llu\t%.9f\t%.6g\t%.6g\t%.6g\t%.6g\t%d\n", model, cache, phase, length,
            batch, (unsigned long long)p.flops, (unsigned long long)p.bytes, p.seconds, p.intensity,
            p.flops_ps, roofline_attainable(cpu, p.intensity), roofline_attainable(gpu, p.intensity), p.from_cache);
}

int plot_roofline(const PlotCtx *ctx, PlotNote *note, Err *e)
{
    Roofs cpu;
    if (roofs_get(&cpu, ctx->kern, 1, e) < 0)
        return -1;
    const Roofs gpu = { .read_bps = GPU_BYTES_PER_S, .flops_ps = GPU_FLOPS_PER_S, .source = ROOFS_GIVEN };
    const size_t n_models = ctx->quick ? 1 : N_MODELS, n_lengths = ctx->quick ? 2 : N_LENGTHS;
    const size_t n_caches = ctx->quick ? 2 : N_CACHES;
    static const size_t quick_caches[] = { 1, 2 }; /* f16 and q4_0 */
    FILE *pts = plot_open(ctx, "roofline.tsv", e), *cross = pts ? plot_open(ctx, "roofline.crossover.tsv", e) : NULL;
    if (!cross) {
        plot_close(pts, "roofline.tsv", NULL);
        return -1;
    }
    fprintf(pts, "model\tcache\tphase\tlength\tbatch\tflops\tbytes\tseconds\tflop_per_byte\tflop_per_s\t"
                 "cpu_attainable\tgpu_attainable\tfrom_cache\n");
    fprintf(cross, "model\tcache\tcontext\tflops_per_seq\tweight_bytes\tkv_bytes_per_seq\tcpu_ridge\tcpu_batch\t"
                   "gpu_ridge\tgpu_batch\tgpu_b1_flop_per_byte\tgpu_b1_attainable\n");
    PlotRuns runs;
    plot_runs_begin(&runs, ctx, "run", n_models * n_caches * n_lengths * N_BATCHES);
    double best_gpu_b = INFINITY, worst_gpu_b = 0; /* the finite crossovers' range */
    size_t never = 0, n_cross = 0;
    char per_model[N_MODELS][160]; /* each model's smallest crossover, for panel (b) */
    int rc = 0;
    for (size_t mi = 0; rc == 0 && mi < n_models; mi++) {
        ModelOpts mo = { .model = models[mi] };
        double model_b = INFINITY, model_fk = 0; /* its smallest B, and its largest F / K */
        const char *at_cache = "";
        size_t at_ctx = 0;
        Config cfg;
        if ((rc = setup_load_config(&mo, &cfg, e)) < 0)
            break;
        for (size_t ci = 0; rc == 0 && ci < n_caches; ci++) {
            const CacheChoice *cc = &caches[ctx->quick ? quick_caches[ci] : ci];
            for (size_t li = 0; rc == 0 && li < n_lengths; li++) {
                const size_t length = lengths[li];
                Passes p[N_BATCHES];
                for (size_t bi = 0; rc == 0 && bi < N_BATCHES; bi++) {
                    rc = run_session(ctx, &cfg, cc->spec, length, batches[bi], &p[bi], e);
                    plot_runs_done(&runs);
                }
                if (rc < 0)
                    break;
                write_point(pts, models[mi], cc->name, "prefill", length, 1, &p[0].prefill, &cpu, &gpu);
                for (size_t bi = 0; bi < N_BATCHES; bi++)
                    write_point(pts, models[mi], cc->name, "decode", length, batches[bi], &p[bi].decode, &cpu, &gpu);
                double f1, w, k1;
                const double cpu_b = crossover(&p[0].decode, roofline_ridge(&cpu), &f1, &w, &k1);
                const double gpu_b = crossover(&p[0].decode, roofline_ridge(&gpu), &f1, &w, &k1);
                RoofPoint b1;
                roofline_point(&b1, &p[0].decode, &gpu);
                fprintf(cross, "%s\t%s\t%zu\t%.0f\t%.0f\t%.0f\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", models[mi],
                        cc->name, length + 1, f1, w, k1, roofline_ridge(&cpu), cpu_b, roofline_ridge(&gpu), gpu_b,
                        b1.intensity, roofline_attainable(&gpu, b1.intensity));
                n_cross++;
                model_fk = fmax(model_fk, k1 > 0 ? f1 / k1 : INFINITY);
                if (gpu_b < model_b) {
                    model_b = gpu_b;
                    at_cache = cc->name;
                    at_ctx = length + 1;
                }
                if (isfinite(gpu_b)) {
                    best_gpu_b = fmin(best_gpu_b, gpu_b);
                    worst_gpu_b = fmax(worst_gpu_b, gpu_b);
                } else {
                    never++;
                }
            }
        }
        if (rc == 0 && isfinite(model_b))
            snprintf(per_model[mi], sizeof per_model[mi], "%s: from B = %.0f (%s cache, context %zu)", models[mi],
                     model_b, at_cache, at_ctx);
        else if (rc == 0)
            snprintf(per_model[mi], sizeof per_model[mi], "%s: never (F / K at most %.0f FLOP/B)", models[mi],
                     model_fk);
    }
    if (rc == 0) {
        rc = plot_close(pts, "roofline.tsv", e);
        pts = NULL;
    }
    if (rc == 0) {
        rc = plot_close(cross, "roofline.crossover.tsv", e);
        cross = NULL;
    }
    plot_close(pts, "roofline.tsv", NULL);
    plot_close(cross, "roofline.crossover.tsv", NULL);
    if (rc < 0)
        return -1;

    char caption[1536], origin[96], range[192];
    if (never == n_cross)
        snprintf(range, sizeof range, "never for any of them: their K/V bytes alone keep decode below it");
    else
        snprintf(range, sizeof range, "from %.0f to %.0f sequences%s", best_gpu_b, worst_gpu_b,
                 never ? "; never where one sequence's K/V bytes alone hold it below" : "");
    snprintf(caption, sizeof caption,
             "(a) each pass timed here (%s, one core, kernels %s): prefill of 4 .. 200 tokens, the decode steps after "
             "it for batch 1 and %d.\n    Roofs: %s, DRAM read %.3g GB/s, compute %.3g GFLOP/s (the kernels' matmul "
             "on data in cache), ridge %.3g FLOP/B. A point above the DRAM roof read from cache.\n"
             "(b) the same passes' FLOPs and bytes (kvscope's counts) on the %s, each where its roofs let it go at best: "
             "%.3g TB/s, %.0f TFLOP/s dense FP16/BF16\n    (half the data sheet's %.0f with sparsity), ridge %.0f "
             "FLOP/B. Source: %s.\n"
             "Decode reaches the GPU's ridge R at batch B = R W / (F - R K): F FLOPs, W weight bytes, K K/V bytes of "
             "one sequence's step, weights read once a batch\n    (roofline.crossover.tsv): %s.",
             ctx->machine, ctx->kern->isa, WIDE_BATCH, roofs_origin(&cpu, origin, sizeof origin), cpu.read_bps / 1e9,
             cpu.flops_ps / 1e9, roofline_ridge(&cpu), GPU_NAME, GPU_BYTES_PER_S / 1e12, GPU_FLOPS_PER_S / 1e12,
             GPU_SPARSE_FLOPS_PER_S / 1e12, roofline_ridge(&gpu), GPU_SOURCE, range);
    FILE *labels = plot_labels_open(ctx, "roofline", "Prefill and decode on the roofline: this CPU, and " GPU_NAME,
                                    caption, e);
    if (!labels)
        return -1;
    fprintf(labels, "cpu_bw = %.6g\ncpu_peak = %.6g\ngpu_bw = %.6g\ngpu_peak = %.6g\n", cpu.read_bps, cpu.flops_ps,
            GPU_BYTES_PER_S, GPU_FLOPS_PER_S);
    char cross_text[N_MODELS * 170] = "decode reaches the ridge (batch B):";
    for (size_t mi = 0; mi < n_models; mi++)
        snprintf(cross_text + strlen(cross_text), sizeof cross_text - strlen(cross_text), "\n%s", per_model[mi]);
    fputs("cross_text = ", labels);
    plot_gp_string(labels, cross_text);
    fputs("\ngpu_name = ", labels);
    plot_gp_string(labels, GPU_NAME);
    fputc('\n', labels);
    rc = plot_close(labels, "roofline", e);
    if (rc == 0)
        snprintf(note->note, sizeof note->note, "ridge %.3g FLOP/B here, %.0f on the %s; decode reaches it %s",
                 roofline_ridge(&cpu), roofline_ridge(&gpu), GPU_NAME, never == n_cross ? "never" : "from batch");
    if (rc == 0 && never < n_cross)
        snprintf(note->note + strlen(note->note), sizeof note->note - strlen(note->note), " %.0f", best_gpu_b);
    return rc;
}
