/* bench_report.c: `kvscope bench`'s tables and TSV rows. */
#include "report/bench_report.h"
#include "util/human.h"

#include <math.h>
#include <stdio.h>

const size_t bench_groups[BENCH_N_GROUPS] = { 1, 4 };
const AttendAlgo bench_algos[BENCH_N_ALGOS] = { ATTEND_FLASH, ATTEND_NAIVE, ATTEND_MATERIALIZE };

static const char *const algo_story[BENCH_N_ALGOS] = {
    "tiles of " STR_OF(ATTEND_TILE) " rows, online softmax, dequantization fused",
    "all scores, softmax, weighted sum; rows decoded where read",
    "every row decoded into an f32 view first, then naive over it",
};

/* "41.2 us", "2.74 ms", "1.203 s" */
static const char *fmt_time(char *buf, size_t cap, double s)
{
    if (s < 1e-3)
        snprintf(buf, cap, "%.1f us", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, cap, "%.2f ms", s * 1e3);
    else
        snprintf(buf, cap, "%.3f s", s);
    return buf;
}

static int is_wrong(const BenchResult *r)
{
    return !(r->max_rel_diff <= BENCH_TOLERANCE); /* NaN too */
}

static double gbps(const BenchResult *r)
{
    return r->seconds > 0 ? (double)(r->bytes + r->view_bytes) / r->seconds / 1e9 : 0;
}

static double pct_bw(const BenchReport *rep, const BenchResult *r)
{
    return rep->bandwidth > 0 ? 100.0 * gbps(r) * 1e9 / rep->bandwidth : 0;
}

static int over_ceiling(double ratio)
{
    return ratio > 1.0 + BENCH_CEILING_SLACK;
}

const char *bench_pct_text(char *buf, size_t cap, int width, double ratio)
{
    if (over_ceiling(ratio))
        snprintf(buf, cap, "%*s", width, ">100%");
    else
        snprintf(buf, cap, "%*.0f%%", width > 0 ? width - 1 : 0, 100.0 * ratio);
    return buf;
}

const char *bench_over_text(char *buf, size_t cap, const char *what, double ratio, const char *why)
{
    snprintf(buf, cap, "note: %s read at %.2fx the read bandwidth:\n      %s", what, ratio,
             why ? why : "no read loop reached it, so the bandwidth is no ceiling for it; its GB/s stands");
    return buf;
}

/* A figure's cell in a table (bench_pct_text); a figure above the
 * bandwidth is kept, as `what`, for the note after the table (over_note). */
static const char *pct_cell(char *buf, size_t cap, int width, BenchReport *rep, const BenchResult *r,
                            const char *what)
{
    const double ratio = pct_bw(rep, r) / 100.0;
    if (over_ceiling(ratio)) {
        if (rep->n_notes < BENCH_MAX_NOTES) {
            snprintf(rep->notes[rep->n_notes].what, sizeof rep->notes[0].what, "%s", what);
            rep->notes[rep->n_notes].ratio = ratio;
            /* materialize counts its f32 view written and read back: where the view fits the
             * LLC, those bytes never reach memory */
            rep->notes[rep->n_notes].why = r->view_bytes && rep->llc && r->view_bytes / 2 <= rep->llc
                                               ? "its f32 view fits the LLC: the view's bytes came from cache"
                                               : NULL;
        }
        if (rep->n_notes == 0 || ratio > rep->top.ratio) {
            snprintf(rep->top.what, sizeof rep->top.what, "%s", what);
            rep->top.ratio = ratio;
        }
        rep->n_notes++;
    }
    return bench_pct_text(buf, cap, width, ratio);
}

/* After a table: a note naming each figure that passed the bandwidth; a
 * warm table's (its data read just before, cached where it fits) in one
 * note that names the highest. */
static void over_note(BenchReport *rep, int warm)
{
    char line[256];
    const size_t n = rep->n_notes;
    rep->n_notes = 0;
    if (n && warm) {
        printf("note: %zu warm figure(s) over %.0f%% above the read bandwidth (highest: %s, %.2fx):\n"
               "      warm data that fits the LLC is read from cache, not memory\n",
               n, 100.0 * BENCH_CEILING_SLACK, rep->top.what, rep->top.ratio);
        return;
    }
    for (size_t i = 0; i < n && i < BENCH_MAX_NOTES; i++)
        puts(bench_over_text(line, sizeof line, rep->notes[i].what, rep->notes[i].ratio, rep->notes[i].why));
    if (n > BENCH_MAX_NOTES)
        printf("note: and %zu more figure(s) above the read bandwidth by more than %.0f%%\n", n - BENCH_MAX_NOTES,
               100.0 * BENCH_CEILING_SLACK);
}

static const char TSV_HEADER[] = "section\tisa\timpl\tform\tgroup\tcache\tsize\tformat\tseconds\tseconds_min\tseconds_max\tbytes\t"
                                 "view_bytes\t"
                                 "gb_per_s\tpct_bandwidth\tspeedup_vs_f32\tf32_seconds\tg4_over_g1\tours_speedup\t"
                                 "max_rel_diff\n";

/* v in fmt and a tab, or "-" where v is negative (not measured, or not defined). */
static void tsv_cell(double v, const char *fmt)
{
    if (v < 0)
        fputs("-\t", stdout);
    else
        printf(fmt, v);
}

/* One TSV row; f32_s: the f32 time vs_f32 divides. */
static void tsv_row(const BenchReport *rep, const char *section, const char *impl, const char *form, const char *group,
                    const char *cache, const char *size, const char *format, const BenchResult *r, double vs_f32,
                    double f32_s, double g4_g1, double ours)
{
    printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.9f\t%.9f\t%.9f\t%llu\t%llu\t%.3f\t%.1f\t", section, rep->isa, impl,
           form, group, cache, size, format, r->seconds, r->seconds_min, r->seconds_max, (unsigned long long)r->bytes,
           (unsigned long long)r->view_bytes, gbps(r), pct_bw(rep, r));
    tsv_cell(vs_f32, "%.3f\t");
    tsv_cell(f32_s, "%.9f\t");
    tsv_cell(g4_g1, "%.3f\t");
    tsv_cell(ours, "%.3f\t");
    printf("%.3g\n", r->max_rel_diff);
}

void bench_report_start(BenchReport *rep)
{
    if (rep->out == OUT_TSV) {
        fputs(TSV_HEADER, stdout);
        return;
    }
    char b2[32];
    printf("kvscope bench: kernels %s%s%s (this CPU runs: %s), one thread; %zu rounds, each measuring\n"
           "everything once, the bandwidth first; every figure is the median of its %zu repetitions\n",
           rep->isa, rep->isa_note ? ", " : "", rep->isa_note ? rep->isa_note : "", rep->isa_list, rep->reps,
           rep->reps);
    printf("last-level cache: %s; cold data cycles through %s (%.1fx that)\n", rep->llc_text,
           human_bytes(b2, sizeof b2, (double)rep->pool_bytes), (double)rep->pool_bytes / (double)rep->llc);
    if (rep->quick)
        printf("quick: sizes far too small to mean anything about this machine; for tests only\n");
    printf("GB/s is 10^9 bytes per second; %% bw is a figure's GB/s over the read bandwidth measured first\n");
}

void bench_report_bandwidth(BenchReport *rep, const BenchResult *loops, const char *const *names, size_t n_loops,
                            const BenchResult *dot)
{
    const size_t best = bench_fastest(loops, n_loops);
    const BenchResult *r = &loops[best];
    rep->read_how = names[best];
    rep->bandwidth = r->seconds > 0 ? (double)r->bytes / r->seconds : 0;
    for (size_t i = 0; i < n_loops; i++)
        rep->wrong += (size_t)is_wrong(&loops[i]);
    rep->wrong += (size_t)is_wrong(dot);
    if (rep->out == OUT_TSV) {
        char size[32], impl[64];
        snprintf(size, sizeof size, "%zu", rep->read_bytes);
        for (size_t i = 0; i <= n_loops; i++) {
            snprintf(impl, sizeof impl, "%s", i < n_loops ? names[i] : rep->dot_how);
            for (char *c = impl; *c; c++)
                *c = *c == ' ' ? '-' : *c == ',' ? ';' : *c;
            tsv_row(rep, "bandwidth", impl, "-", "-", "cold", size, "f32", i < n_loops ? &loops[i] : dot, -1, -1, -1, -1);
        }
        return;
    }
    char b1[32], t1[32], pct[16];
    printf("\n== 1. read bandwidth, one core, cold\n");
    printf("a %s float array", human_bytes(b1, sizeof b1, (double)r->bytes));
    if (rep->llc)
        printf(" (%.1fx the LLC%s)", (double)r->bytes / (double)rep->llc,
               r->bytes < 8 * (uint64_t)rep->llc ? ", below 8x: partly cached" : "");
    printf(", summed by %zu read loops, each the median of its rounds:\n", n_loops);
    for (size_t i = 0; i < n_loops; i++)
        printf("  %-40s %10s %7.2f GB/s%s%s\n", names[i], fmt_time(t1, sizeof t1, loops[i].seconds), gbps(&loops[i]),
               i == best ? "  <- the fastest" : "", is_wrong(&loops[i]) ? "  WRONG SUM" : "");
    printf("read bandwidth: %.2f GB/s (best of %zu loops: %s", rep->bandwidth / 1e9, n_loops, rep->read_how);
    if (rep->reps > 1 && r->seconds_min > 0) /* a shared machine's memory is shared too */
        printf("; its %zu rounds %.2f to %.2f GB/s", rep->reps, (double)r->bytes / r->seconds_max / 1e9,
               (double)r->bytes / r->seconds_min / 1e9);
    printf(")\nevery %% bw below is against it, the ceiling of a cold read\n");
    char what[96];
    snprintf(what, sizeof what, "the %s kernel", rep->dot_how);
    printf("the same read through the %s kernel (16 KiB rows, the query in L1): %.2f GB/s, %s%s\n", rep->dot_how,
           gbps(dot), pct_cell(pct, sizeof pct, 1, rep, dot, what), is_wrong(dot) ? "  WRONG SUM" : "");
    over_note(rep, 0);
}

/* The f32 step time a (ci, f, gi, ai, cold) cell is compared with: cold,
 * f32's steps taken in turn with this format's (f32_seconds); warm, f32's
 * own cell. */
static double f32_base(const BenchReport *rep, size_t ci, Format f, size_t gi, size_t ai, int cold)
{
    const BenchResult *r = bench_attn_at(rep, ci, f, gi, ai, cold);
    return r->f32_seconds > 0 ? r->f32_seconds : bench_attn_at(rep, ci, FMT_F32, gi, ai, cold)->seconds;
}

/* That time over the cell's; -1 when undefined. */
static double vs_f32(const BenchReport *rep, size_t ci, Format f, size_t gi, size_t ai, int cold)
{
    const BenchResult *r = bench_attn_at(rep, ci, f, gi, ai, cold);
    return r->seconds > 0 ? f32_base(rep, ci, f, gi, ai, cold) / r->seconds : -1;
}

static double g4_over_g1(const BenchReport *rep, size_t ci, Format f, size_t ai, int cold)
{
    const BenchResult *g1 = bench_attn_at(rep, ci, f, 0, ai, cold);
    const BenchResult *g4 = bench_attn_at(rep, ci, f, 1, ai, cold);
    return g1->seconds > 0 ? g4->seconds / g1->seconds : -1;
}

static void attention_tsv(const BenchReport *rep)
{
    for (size_t ai = 0; ai < BENCH_N_ALGOS; ai++)
        for (int cold = 1; cold >= 0; cold--)
            for (size_t ci = 0; ci < rep->n_contexts; ci++)
                for (size_t gi = 0; gi < BENCH_N_GROUPS; gi++)
                    for (int f = 0; f < FMT_ROW_COUNT; f++) {
                        char size[32], group[16];
                        snprintf(size, sizeof size, "%zu", rep->contexts[ci]);
                        snprintf(group, sizeof group, "%zu", bench_groups[gi]);
                        const int int_keys = rep->int_dot && qdot_takes((Format)f);
                        const double vs = vs_f32(rep, ci, (Format)f, gi, ai, cold);
                        tsv_row(rep, "attention", int_keys ? "kvscope-int-dot" : "kvscope",
                                attend_algo_name(bench_algos[ai]), group, cold ? "cold" : "warm", size,
                                format_name((Format)f), bench_attn_at(rep, ci, (Format)f, gi, ai, cold), vs,
                                vs < 0 ? -1 : f32_base(rep, ci, (Format)f, gi, ai, cold),
                                gi == 1 ? g4_over_g1(rep, ci, (Format)f, ai, cold) : -1, -1);
                    }
}

static void attention_block(BenchReport *rep, size_t ai, int cold)
{
    printf("\n%s, %s: %s\n", attend_algo_name(bench_algos[ai]), cold ? "cold" : "warm", algo_story[ai]);
    printf("%-17s%-11s", "", "");
    for (size_t gi = 0; gi < BENCH_N_GROUPS; gi++)
        printf("  ------------ G = %zu ------------", bench_groups[gi]);
    printf("\n%7s  %-6s %12s ", "context", "format", "bytes/step");
    for (size_t gi = 0; gi < BENCH_N_GROUPS; gi++)
        printf("  %10s %6s %5s  %6s", "time/step", "GB/s", "% bw", "vs f32");
    printf("  %6s\n", "G4/G1");
    for (size_t ci = 0; ci < rep->n_contexts; ci++)
        for (int f = 0; f < FMT_ROW_COUNT; f++) {
            const BenchResult *r1 = bench_attn_at(rep, ci, (Format)f, 0, ai, cold);
            char b[32], t[32];
            uint64_t bytes = r1->bytes + r1->view_bytes;
            int beyond = !cold && rep->llc && bytes > rep->llc;
            printf("%7zu  %-6s %11s%s", rep->contexts[ci], format_name((Format)f),
                   human_bytes(b, sizeof b, (double)bytes), beyond ? "*" : " ");
            int wrong = 0;
            for (size_t gi = 0; gi < BENCH_N_GROUPS; gi++) {
                const BenchResult *r = bench_attn_at(rep, ci, (Format)f, gi, ai, cold);
                char pct[16], what[96];
                wrong |= is_wrong(r);
                snprintf(what, sizeof what, "%s, %s, context %zu, %s, G = %zu", attend_algo_name(bench_algos[ai]),
                         cold ? "cold" : "warm", rep->contexts[ci], format_name((Format)f), bench_groups[gi]);
                printf("  %10s %6.2f %s  %5.2fx", fmt_time(t, sizeof t, r->seconds), gbps(r),
                       pct_cell(pct, sizeof pct, 5, rep, r, what), vs_f32(rep, ci, (Format)f, gi, ai, cold));
            }
            printf("  %5.2fx%s\n", g4_over_g1(rep, ci, (Format)f, ai, cold), wrong ? "  WRONG" : "");
        }
    over_note(rep, !cold);
}

/* The index of the longest context measured. */
static size_t longest_context(const BenchReport *rep)
{
    size_t best = 0;
    for (size_t ci = 1; ci < rep->n_contexts; ci++)
        if (rep->contexts[ci] > rep->contexts[best])
            best = ci;
    return best;
}

/* The longest context whose warm steps all fit the LLC (f32's, the
 * largest, do), or n_contexts where none does or the LLC is unknown. */
static size_t cached_context(const BenchReport *rep)
{
    size_t best = rep->n_contexts;
    for (size_t ci = 0; ci < rep->n_contexts; ci++) {
        const BenchResult *w = bench_attn_at(rep, ci, FMT_F32, 1, 0, 0);
        if (rep->llc && w->bytes + w->view_bytes <= rep->llc &&
            (best == rep->n_contexts || rep->contexts[ci] > rep->contexts[best]))
            best = ci;
    }
    return best;
}

/* How low format f's cold flash G4/G1 at context index ci can go with
 * these kernels: the G = 4 step's work with its rows in cache (its warm
 * step at context index wi, scaled to ci's rows) over the G = 1 cold
 * step. A cold step does at least its warm step's work, however well
 * memory overlaps it. */
static double g4_floor(const BenchReport *rep, size_t ci, size_t wi, Format f)
{
    const double g1 = bench_attn_at(rep, ci, f, 0, 0, 1)->seconds, g4 = bench_attn_at(rep, wi, f, 1, 0, 0)->seconds;
    return g1 > 0 ? g4 * ((double)rep->contexts[ci] / (double)rep->contexts[wi]) / g1 : -1;
}

/* The headline: the longest context, cold, flash; G = 1, and G = 4 against it. */
static void attention_summary(BenchReport *rep)
{
    const size_t ci = longest_context(rep), wi = cached_context(rep);
    printf("\nsummary: flash, cold, context %zu (the longest context measured)\n", rep->contexts[ci]);
    printf("  %-6s %10s %7s %6s %16s %7s %9s\n", "format", "time/step", "GB/s", "% bw", "speedup over f32", "G4/G1",
           "its floor");
    for (int f = 0; f < FMT_ROW_COUNT; f++) {
        const BenchResult *r = bench_attn_at(rep, ci, (Format)f, 0, 0, 1);
        const double floor_x = wi < rep->n_contexts ? g4_floor(rep, ci, wi, (Format)f) : -1;
        char t[32], pct[16], fl[16] = "-";
        if (floor_x >= 0) /* else not measured, or no G = 1 time to divide */
            snprintf(fl, sizeof fl, "%.2fx", floor_x);
        printf("  %-6s %10s %7.2f %s %15.2fx %6.2fx %9s\n", format_name((Format)f), fmt_time(t, sizeof t, r->seconds),
               gbps(r), bench_pct_text(pct, sizeof pct, 6, pct_bw(rep, r) / 100.0),
               vs_f32(rep, ci, (Format)f, 0, 0, 1), g4_over_g1(rep, ci, (Format)f, 0, 1), fl);
    } /* no notes: the flash, cold table above named any figure past the bandwidth */
    printf("  time/step to speedup over f32: G = 1; G4/G1: the G = 4 step's time over the G = 1 step's\n");
    if (wi < rep->n_contexts)
        printf("  its floor: the G = 4 warm step at context %zu (rows in cache) times %zu / %zu, over the G = 1\n"
               "  cold step: a cold step does at least its warm step's work, so G4/G1 stays near or above its\n"
               "  floor until four heads compute less (near: the warm and cold steps are timed apart)\n",
               rep->contexts[wi], rep->contexts[ci], rep->contexts[wi]);
    else
        printf("  its floor: not measured (no context's warm steps fit the last-level cache: add a shorter one)\n");
}

void bench_report_attention(BenchReport *rep)
{
    for (size_t i = 0; i < rep->n_contexts * FMT_COUNT * BENCH_N_GROUPS * BENCH_N_ALGOS * 2; i++)
        rep->wrong += (size_t)is_wrong(&rep->attn[i]);
    if (rep->out == OUT_TSV) {
        attention_tsv(rep);
        return;
    }
    char b[32];
    printf("\n== 2. decode attention: one step of one KV head, head_dim %zu, every row visible\n", rep->head_dim);
    printf("cold: each step reads the next of many identical K/V copies (%s in all), so its rows come from memory\n",
           human_bytes(b, sizeof b, (double)rep->pool_bytes));
    printf("warm: the same K/V every step, read once before timing; it stays cached only where it fits the LLC\n"
           "      (* marks a step whose bytes exceed the LLC: warm or not, they come from memory)\n");
    printf("bytes/step: the bytes the kernel counted reading K/V (materialize: plus its f32 view, written and\n"
           "read back); vs f32: the f32 step's time over this one's, same context, form, G and cache\n"
           "(cold: f32's steps taken in turn with this format's, so not the f32 row's time);\n"
           "G4/G1: the G = 4 step's time over the G = 1 step's\n");
    if (rep->int_dot)
        printf("--int-dot: q8_0, q4_0, int4 and fp4 keys are scored by integer dots against the query rounded\n"
               "to q8_0, once for the G heads of a group (checked against the reference with the same rounding);\n"
               "flash adds q4_0, int4 and fp4 values with 16-bit integer weights (the reference with f32\n"
               "weights), other values in f32;\nmaterialize decodes the keys to f32 first and keeps the f32 query\n");
    for (size_t ai = 0; ai < BENCH_N_ALGOS; ai++)
        for (int cold = 1; cold >= 0; cold--)
            attention_block(rep, ai, cold);
    attention_summary(rep);
}

void bench_report_matvec(BenchReport *rep, size_t rows, size_t cols, size_t n_copies, const BenchMatvecRow *mv,
                         size_t n, const char *openblas_missing)
{
    for (size_t i = 0; i < n; i++)
        rep->wrong += (size_t)is_wrong(&mv[i].r);
    const double ours = mv[0].r.seconds;
    if (rep->out == OUT_TSV) {
        char size[48];
        snprintf(size, sizeof size, "%zux%zu", rows, cols);
        for (size_t i = 0; i < n; i++)
            tsv_row(rep, "matvec", mv[i].id, "-", "-", "cold", size, "f32", &mv[i].r, -1, -1, -1,
                    ours > 0 ? mv[i].r.seconds / ours : -1);
        return;
    }
    char b[32], t[32];
    printf("\n== 3. matvec: y = W x, W %zu x %zu f32 (%s), cold: %zu copies of W cycled\n", rows, cols,
           human_bytes(b, sizeof b, (double)rows * cols * sizeof(float)), n_copies);
    printf("%-40s %10s %7s %6s %13s %10s\n", "implementation", "time", "GB/s", "% bw", "max rel diff", "ours is");
    for (size_t i = 0; i < n; i++) {
        const BenchResult *r = &mv[i].r;
        char speed[32], pct[16];
        snprintf(speed, sizeof speed, "%.2fx", r->seconds > 0 ? r->seconds / ours : 0);
        printf("%-40.40s %10s %7.2f %s %13.1e %10s%s\n", mv[i].name, fmt_time(t, sizeof t, r->seconds), gbps(r),
               pct_cell(pct, sizeof pct, 6, rep, r, mv[i].name), r->max_rel_diff, i == 0 ? "-" : speed,
               is_wrong(r) ? "  WRONG" : "");
    }
    over_note(rep, 0);
    if (openblas_missing)
        printf("OpenBLAS: not installed (%s)\n", openblas_missing);
    printf("ours is: that row's time over %s's (2.00x: kvscope is twice as fast)\n", mv[0].name);
}

void bench_report_decode(BenchReport *rep, const Config *cfg, const BenchDecodeRow *rows, size_t n)
{
    if (rep->out == OUT_TSV) {
        for (size_t i = 0; i < n; i++) {
            const DecodeBench *d = &rows[i].r;
            BenchResult r = { .seconds = d->seconds, .seconds_min = d->seconds_min, .seconds_max = d->seconds_max,
                              .bytes = d->weight_bytes + d->kv_bytes, .ops_per_rep = 1 };
            char size[32];
            snprintf(size, sizeof size, "%zu", d->context);
            tsv_row(rep, "decode", cfg->name, "-", "-", "cold", size, rows[i].cache, &r, -1, -1, -1, -1);
        }
        return;
    }
    char b1[32], b2[32], t1[32], t2[32], pct[16];
    printf("\n== 4. end-to-end decode: model %s, one sequence, one core\n", cfg->name);
    if (cfg->shared_layers)
        printf("shared weights: one layer's weights serve all %zu layers, so a step reads them %zu times, as the "
               "real\nmodel reads its %zu layers once each; ", cfg->n_layers, cfg->n_layers, cfg->n_layers);
    else
        printf("weights: %s, each of its %zu layers its own (matrices read as stored);\n", cfg->weights,
               cfg->n_layers);
    printf("the cache is filled to the context with seeded rows, then each step is timed (the median\n"
           "of %zu; flash attention, as `kvscope run` decodes); byte limit: (weights + K/V read) / read\n"
           "bandwidth\n", n ? rows[0].r.steps : 0);
    if (rep->mat_dot)
        printf("q8_0/q4_0 matrices by integer dots against the activation rounded to q8_0 (--int-dot=off: "
               "f32)\n");
    if (rep->int_dot)
        printf("--int-dot: the q8_0 cache's keys are scored by integer dots against the query rounded to q8_0\n");
    printf("%8s  %-5s %13s %11s %11s %9s %11s %10s\n", "context", "cache", "weights/step", "K/V/step", "time/step",
           "tokens/s", "byte limit", "of limit");
    for (size_t i = 0; i < n; i++) {
        const DecodeBench *d = &rows[i].r;
        BenchResult r = { .seconds = d->seconds, .bytes = d->weight_bytes + d->kv_bytes };
        char what[64];
        snprintf(what, sizeof what, "the decode step, context %zu, %s cache", d->context, rows[i].cache);
        printf("%8zu  %-5s %13s %11s %11s %9.2f %11s %10s\n", d->context, rows[i].cache,
               human_bytes(b1, sizeof b1, (double)d->weight_bytes), human_bytes(b2, sizeof b2, (double)d->kv_bytes),
               fmt_time(t1, sizeof t1, d->seconds), d->seconds > 0 ? 1.0 / d->seconds : 0,
               fmt_time(t2, sizeof t2, decode_bench_limit(d, rep->bandwidth)),
               pct_cell(pct, sizeof pct, 9, rep, &r, what));
    }
    printf("of limit: the byte limit's time over the step's (100%% = the step runs at the read bandwidth)\n");
    over_note(rep, 0);
}
