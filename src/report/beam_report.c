/* beam_report.c: what `kvscope run` prints of a beam search (beam_report.h):
 * a row per step, the hypotheses, the memory per beam beside the encoder-decoder notes'
 * estimate, what the run measured, and the cached/uncached comparison. */
#include "report/beam_report.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/run_report.h"
#include "util/human.h"
#include "kv/cache.h"
#include "model/beam.h"
#include "model/encdec.h"

/* The width the encoder-decoder notes' memory estimate is worked for ("beam_width=8"). */
#define SEED_WIDTH 8

void beam_report_step_header(OutFormat fmt)
{
    if (fmt == OUT_TABLE)
        printf("%-8s %4s %5s %4s %5s %13s %11s %10s %7s %5s %5s %10s %5s %6s %4s %11s %4s %8s %4s %5s\n", "run",
               "step", "beams", "self", "cross", "FLOPs", "kv read B", "kv write B", "crossKV", "forks", "drops",
               "copied B", "pages", "shared", "cow", "self used B", "refs", "time ms", "done", "best");
    else if (fmt == OUT_TSV)
        printf("run\tstep\tbeams\tself_rows\tcross_rows\ttotal_flops\tkv_bytes_read\tkv_bytes_written\t"
               "cross_kv_rows\tforks\tdrops\tbytes_copied\tpages_used\tpages_shared\tcow_copies\tself_bytes_used\t"
               "cross_refs\tseconds\tfinished\tbest_token\n");
}

int beam_report_step(void *user, const BeamStep *st)
{
    BeamSink *k = user;
    const Counters *c = &st->ctr;
    int best = st->n_kept ? st->token[0] : -1;
    char tok[16] = "-";
    if (best >= 0)
        snprintf(tok, sizeof tok, "%d", best);
    if (k->fmt == OUT_TABLE)
        printf("%-8s %4zu %5zu %4zu %5zu %13" PRIu64 " %11" PRIu64 " %10" PRIu64 " %7" PRIu64
               " %5zu %5zu %10" PRIu64 " %5zu %6zu %4zu %11zu %4zu %8.3f %4zu %5s\n",
               k->label, st->step, st->n_beams, st->pos + 1, k->src_len, counters_total_flops(c), c->kv_bytes_read,
               c->kv_bytes_written, st->cross_kv_rows, st->forks, st->drops, c->bytes_copied, st->kv.pages_used,
               st->kv.pages_shared, st->cow_copies, st->self_bytes_used, st->cross_refs, c->seconds * 1e3,
               st->n_finished, tok);
    else if (k->fmt == OUT_TSV)
        printf("%s\t%zu\t%zu\t%zu\t%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%zu\t%zu\t%" PRIu64
               "\t%zu\t%zu\t%zu\t%zu\t%zu\t%.9f\t%zu\t%d\n",
               k->label, st->step, st->n_beams, st->pos + 1, k->src_len, counters_total_flops(c), c->kv_bytes_read,
               c->kv_bytes_written, st->cross_kv_rows, st->forks, st->drops, c->bytes_copied, st->kv.pages_used,
               st->kv.pages_shared, st->cow_copies, st->self_bytes_used, st->cross_refs, c->seconds, st->n_finished,
               best);
    else if (k->steps) {
        json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "run",
                              k->label, "step", (json_int_t)st->step, "beams", (json_int_t)st->n_beams,
                              "self_rows", (json_int_t)(st->pos + 1), "cross_rows", (json_int_t)k->src_len,
                              "cross_kv_rows", (json_int_t)st->cross_kv_rows, "forks", (json_int_t)st->forks,
                              "drops", (json_int_t)st->drops, "pages_used", (json_int_t)st->kv.pages_used,
                              "pages_shared", (json_int_t)st->kv.pages_shared, "cow_copies",
                              (json_int_t)st->cow_copies, "self_bytes_used", (json_int_t)st->self_bytes_used,
                              "cross_refs", (json_int_t)st->cross_refs, "finished", (json_int_t)st->n_finished,
                              "counters", report_counters_json(c));
        if (best >= 0)
            json_object_set_new(o, "best_token", json_integer(best));
        json_array_append_new(k->steps, o);
    }
    return 0;
}

/* "163.8 kB" / "1.23 MB": the encoder-decoder notes' decimal units. */
static const char *dec_bytes(char *buf, size_t cap, double b)
{
    if (b < 1e6)
        snprintf(buf, cap, "%.1f kB", b / 1e3);
    else
        snprintf(buf, cap, "%.2f MB", b / 1e6);
    return buf;
}

void beam_report_hyps(const char *run, const BeamResult *r, double alpha)
{
    printf("hypotheses, %s (best first; score = log p / len^%g):\n", run, alpha);
    printf("  %2s %10s %10s %4s %-4s %s\n", "#", "score", "log p", "len", "end", "tokens");
    for (size_t i = 0; i < r->n; i++) {
        const Hypothesis *h = &r->hyps[i];
        printf("  %2zu %10.6f %10.5f %4zu %-4s", i + 1, h->score, h->logp, h->len, h->finished ? "eos" : "max");
        for (size_t t = 0; t < h->len; t++)
            printf(" %d", h->tokens[t]);
        printf("\n");
    }
}

json_t *beam_report_hyps_json(const BeamResult *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const Hypothesis *h = &r->hyps[i];
        json_t *t = json_array();
        for (size_t j = 0; j < h->len; j++)
            json_array_append_new(t, json_integer(h->tokens[j]));
        json_array_append_new(a, json_pack("{s:f, s:f, s:I, s:b, s:o}", "score", h->score, "logp", h->logp, "len",
                                           (json_int_t)h->len, "finished", h->finished, "tokens", t));
    }
    return a;
}

/* The encoder-decoder notes' estimate recomputed from the config, and kvscope's sharing. */
int beam_report_memory(const Config *c, size_t width, json_t *root, OutFormat fmt, Err *e)
{
    EncDecMemory mem, mem8;
    if (encdec_memory(c, c->max_seq_len, width, &mem, e) < 0 ||
        encdec_memory(c, c->max_seq_len, SEED_WIDTH, &mem8, e) < 0)
        return -1;
    double rounded = round((double)mem.seed_per_beam / 1e5) / 10; /* per beam in MB, to one decimal */
    if (root) {
        json_object_set_new(root, "memory",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "self_per_beam",
                                      (json_int_t)mem.self_per_beam, "cross_per_beam", (json_int_t)mem.cross_per_beam,
                                      "seed_per_beam", (json_int_t)mem.seed_per_beam, "width", (json_int_t)width,
                                      "seed_total", (json_int_t)mem.seed_total, "shared_total",
                                      (json_int_t)mem.shared_total, "seed_width", (json_int_t)SEED_WIDTH,
                                      "seed_width_total", (json_int_t)mem8.seed_total));
        return 0;
    }
    if (fmt != OUT_TABLE)
        return 0;
    char a[32], b[32], x[32], y[32];
    printf("memory per beam, from the config (f32, K and V) - the encoder-decoder notes' estimate, recomputed:\n");
    printf("  self-attention   %zu layers x %zu heads x %zu tokens x %zu x 4 B x 2 = %zu B (%s, %s)\n", c->n_layers,
           c->n_kv_heads, c->max_seq_len, c->head_dim, mem.self_per_beam,
           dec_bytes(a, sizeof a, (double)mem.self_per_beam), human_bytes(b, sizeof b, (double)mem.self_per_beam));
    printf("  cross-attention  %zu layers x %zu heads x %zu tokens x %zu x 4 B x 2 = %zu B (%s, %s)\n", c->n_layers,
           c->n_kv_heads, c->src_len, c->head_dim, mem.cross_per_beam,
           dec_bytes(a, sizeof a, (double)mem.cross_per_beam), human_bytes(b, sizeof b, (double)mem.cross_per_beam));
    printf("  per beam with a cross cache each (the encoder-decoder notes' count): %zu B (%s; %.1f MB rounded)\n", mem.seed_per_beam,
           dec_bytes(a, sizeof a, (double)mem.seed_per_beam), rounded);
    printf("  %d beams (the encoder-decoder notes' example): %zu B (%s); %d x the rounded %.1f MB gives %.1f MB\n", SEED_WIDTH,
           mem8.seed_total, dec_bytes(a, sizeof a, (double)mem8.seed_total), SEED_WIDTH, rounded, SEED_WIDTH * rounded);
    printf("  %zu beam(s), one cross cache shared (kvscope): %zu x %zu + %zu = %zu B (%s) instead of %zu B (%s)\n",
           width, width, mem.self_per_beam, mem.cross_per_beam, mem.shared_total,
           dec_bytes(x, sizeof x, (double)mem.shared_total), mem.seed_total,
           dec_bytes(y, sizeof y, (double)mem.seed_total));
    return 0;
}

/* What this run measured: memory per beam, sharing, copies. */
void beam_report_measured(const KvCache *self, const BeamResult *r, json_t *root, OutFormat fmt)
{
    KvStats st = r->kv;
    size_t beams = r->beams_last ? r->beams_last : 1;
    if (root) {
        json_object_set_new(root, "measured",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                                      "beams_last", (json_int_t)r->beams_last, "self_bytes_last",
                                      (json_int_t)r->self_bytes_last, "self_bytes_per_beam",
                                      (json_int_t)(r->self_bytes_last / beams), "self_bytes_peak",
                                      (json_int_t)r->self_bytes_peak, "cross_bytes", (json_int_t)r->cross_bytes,
                                      "cross_fills", (json_int_t)r->cross_fills, "cross_peak_refs",
                                      (json_int_t)r->cross_peak_refs, "cross_refs_end", (json_int_t)r->cross_refs_end,
                                      "cross_kv_rows", (json_int_t)r->cross_kv_rows, "forks", (json_int_t)r->forks,
                                      "drops", (json_int_t)r->drops, "bytes_copied",
                                      (json_int_t)r->total.bytes_copied, "cow_copies", (json_int_t)st.cow_copies));
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    char a[32], b[32], c[32];
    printf("measured after the last pass (%zu beam(s), %zu rows each): self cache %zu B used (%s per beam), "
           "peak %zu B\n",
           r->beams_last, r->steps, r->self_bytes_last, dec_bytes(a, sizeof a, (double)r->self_bytes_last / beams),
           r->self_bytes_peak);
    printf("cross cache: %zu B (%s), computed %zu time(s) (%" PRIu64 " memory rows projected), read by up to %zu "
           "beams (%s per beam), copied never; %zu reference(s) left\n",
           r->cross_bytes, dec_bytes(b, sizeof b, (double)r->cross_bytes), r->cross_fills, r->cross_kv_rows,
           r->cross_peak_refs, dec_bytes(c, sizeof c, (double)r->cross_bytes / (r->cross_peak_refs ? r->cross_peak_refs : 1)),
           r->cross_refs_end);
    if (st.page_rows)
        printf("copies: %zu forks share their pages (nothing copied at the fork), %zu drops; %zu page(s) copied on "
               "first write, %" PRIu64 " B copied\n",
               r->forks, r->drops, st.cow_copies, r->total.bytes_copied);
    else if (r->total.allocations)
        printf("copies: %zu forks, %zu drops; %" PRIu64 " B copied (%s: every fork copies the parent's rows, and "
               "%" PRIu64 " reallocations copied as they grew)\n",
               r->forks, r->drops, r->total.bytes_copied, self->ops->name, r->total.allocations);
    else
        printf("copies: %zu forks, %zu drops; %" PRIu64 " B copied (%s: every fork copies the parent's rows)\n",
               r->forks, r->drops, r->total.bytes_copied, self->ops->name);
}


void beam_report_header(const Model *m, const int *src, const BeamOptions *bo, const PromptOpts *po,
                        const char *cache_spec)
{
    const Config *c = &m->cfg;
    printf("model %s: encoder-decoder, encoder %zu layers, decoder %zu layers, d_model %zu, %zu heads, %zu KV heads, "
           "head_dim %zu, ffn %zu, vocab %zu, source %zu tokens, target up to %zu\n",
           c->name, c->encoder_layers, c->n_layers, c->d_model, c->n_heads, c->n_kv_heads, c->head_dim, c->ffn_dim,
           c->vocab, c->src_len, c->max_seq_len);
    printf("weights: %s; kernels: %s; attention: %s\n", m->source, m->kern->isa, attend_algo_name(m->attend));
    printf("source: %zu tokens (%s", c->src_len, setup_prompt_given(po) ? "given" : "random ids, gsl mt19937");
    if (!setup_prompt_given(po))
        printf(", prompt seed %" PRIu64, po->seed ? po->seed : 1);
    printf("), starting");
    for (size_t i = 0; i < c->src_len && i < 8; i++)
        printf(" %d", src[i]);
    printf("%s; BOS %d, EOS ", c->src_len > 8 ? " ..." : "", c->bos_token);
    if (c->eos_token >= 0)
        printf("%d\n", c->eos_token);
    else
        printf("none\n");
    printf("beam search: width %zu, up to %zu tokens, score = sum log p / len^%g, stops when %zu hypotheses end\n",
           bo->width, bo->max_len, bo->alpha, bo->width);
    if (!cache_spec)
        printf("cache: none (every step re-runs each beam's target and recomputes the cross K/V)\n");
    else
        printf("self-attention cache: %s, one sequence per beam; cross-attention cache: contiguous f32, computed "
               "once, shared by every beam\n", cache_spec);
}

void beam_report_totals(OutFormat fmt, const BeamResult *cached, const BeamResult *uncached, size_t n_layers,
                        json_t *root)
{
    json_t *totals = root ? json_object() : NULL;
    if (cached) {
        /* the cache's memory and copies are reported per beam (beam_report_measured):
         * the generic line would call fork copies "reallocation" */
        Counters t = cached->total;
        t.cache_bytes_reserved = 0;
        report_totals(stdout, fmt, "cached", &t, totals);
        if (fmt == OUT_TABLE)
            printf("cached encoder: %" PRIu64 " FLOPs, run once; the cross K/V of %zu layers computed from it "
                   "once\n", counters_total_flops(&cached->encoder), n_layers);
    }
    if (uncached) {
        report_totals(stdout, fmt, "uncached", &uncached->total, totals);
        if (fmt == OUT_TABLE)
            printf("uncached encoder: %" PRIu64 " FLOPs, run once; the cross K/V recomputed by every beam at every "
                   "step (%" PRIu64 " memory rows projected)\n",
                   counters_total_flops(&uncached->encoder), uncached->cross_kv_rows);
    }
    if (root)
        json_object_set_new(root, "totals", totals);
}

void beam_report_compare(OutFormat fmt, const BeamResult *cached, const BeamResult *uncached, size_t first_diff,
                         double worst, double tolerance, int exact, json_t *root)
{
    int same = first_diff == cached->n && cached->n == uncached->n;
    double flop_ratio = (double)counters_total_flops(&uncached->total) / (double)counters_total_flops(&cached->total);
    if (root) {
        json_object_set_new(root, "compare",
                            json_pack("{s:b, s:f, s:f, s:I, s:I, s:f}", "beams_identical", same, "max_score_diff",
                                      worst, "tolerance", tolerance, "cross_kv_rows_cached",
                                      (json_int_t)cached->cross_kv_rows, "cross_kv_rows_uncached",
                                      (json_int_t)uncached->cross_kv_rows, "flop_ratio", flop_ratio));
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    if (same)
        printf("beams identical: yes (%zu hypotheses: same tokens, same ends)\n", cached->n);
    else
        printf("beams identical: NO, from hypothesis %zu on (cached %zu, uncached %zu hypotheses)\n", first_diff + 1,
               cached->n, uncached->n);
    printf("max score difference: %.3g (tolerance %.0e)%s\n", worst, tolerance,
           same ? "" : ", over the hypotheses that agree");
    printf("cross K/V memory rows projected: cached %" PRIu64 " (once), uncached %" PRIu64 "\n",
           cached->cross_kv_rows, uncached->cross_kv_rows);
    printf("FLOPs: cached %" PRIu64 ", uncached %" PRIu64 " (%.2fx)\n", counters_total_flops(&cached->total),
           counters_total_flops(&uncached->total), flop_ratio);
    printf("measured time: cached %.3f ms, uncached %.3f ms\n", cached->total.seconds * 1e3,
           uncached->total.seconds * 1e3);
    if (!exact)
        printf("(a lossy cache: these differences are its quantization error, not a fault)\n");
}
