/* run_report.c: `kvscope run`'s lines in each format (run_report.h). */
#include "report/run_report.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "report/mla_report.h"
#include "sim/roofs.h"
#include "util/human.h"

static const char *phase_name(Phase p)
{
    return p == PHASE_PREFILL ? "prefill" : "decode";
}

void report_header(FILE *f, OutFormat fmt)
{
    if (fmt == OUT_TABLE)
        fprintf(f, "%-8s %4s %-7s %6s %6s %11s %13s %13s %13s %11s %11s %11s %9s %8s %7s %6s %6s %6s\n", "run",
                "step", "phase", "proj", "cache", "attention", "proj FLOPs", "attn FLOPs", "total FLOPs", "weights B",
                "kv read B", "kv write B", "time ms", "GB/s", "FLOP/B", "%DRAM", "%peak", "token");
    else if (fmt == OUT_TSV)
        fprintf(f, "run\tstep\tphase\ttokens_projected\tcache_len\tattn_q\tattn_k\tproj_flops\tattn_flops\t"
                   "ffn_flops\ttotal_flops\tweight_bytes_read\tkv_bytes_read\tkv_bytes_written\tallocations\t"
                   "bytes_copied\tcache_bytes_used\tcache_bytes_reserved\tseconds\ttoken\tbytes_moved\t"
                   "gb_per_s\tflop_per_byte\tdram_share\tpeak_share\tfrom_cache\n");
}

/* A share of a roof as the table prints it: "12%", "3.4%", "cache" above
 * the DRAM roof (the note under the totals says so), "-" without roofs. */
static const char *share_text(char *buf, size_t cap, const RoofPoint *p, int dram, const Roofs *roofs)
{
    if (!roofline_known(roofs) || !(p->seconds > 0) || !p->bytes)
        return "-";
    if (dram && p->from_cache)
        return "cache";
    const double share = 100 * (dram ? p->bw_share : p->peak_share);
    snprintf(buf, cap, share < 10 ? "%.1f%%" : "%.0f%%", share);
    return buf;
}

/* The roofline of a pass or run as a json object. */
static json_t *roofline_json(const RoofPoint *p, const Roofs *roofs)
{
    const int known = roofline_known(roofs) && p->seconds > 0;
    return json_pack("{s:I, s:f, s:f, s:o, s:o, s:b}", "bytes_moved", (json_int_t)p->bytes, "gb_per_s", p->bps / 1e9,
                     "flop_per_byte", p->intensity, "dram_share", known ? json_real(p->bw_share) : json_null(),
                     "peak_share", known ? json_real(p->peak_share) : json_null(), "from_cache", p->from_cache);
}

json_t *report_counters_json(const Counters *c)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
                     "tokens_projected", (json_int_t)c->tokens_projected, "flops_q", (json_int_t)c->flops_q,
                     "flops_k", (json_int_t)c->flops_k, "flops_v", (json_int_t)c->flops_v, "flops_o",
                     (json_int_t)c->flops_o, "flops_qk", (json_int_t)c->flops_qk, "flops_av",
                     (json_int_t)c->flops_av, "flops_softmax", (json_int_t)c->flops_softmax, "flops_ffn",
                     (json_int_t)c->flops_ffn, "flops_other", (json_int_t)c->flops_other, "weight_bytes_read",
                     (json_int_t)c->weight_bytes_read, "kv_bytes_read", (json_int_t)c->kv_bytes_read,
                     "kv_bytes_written", (json_int_t)c->kv_bytes_written, "view_bytes",
                     (json_int_t)c->view_bytes, "allocations",
                     (json_int_t)c->allocations, "bytes_copied", (json_int_t)c->bytes_copied, "cache_bytes_used",
                     (json_int_t)c->cache_bytes_used, "seconds", c->seconds);
}

void report_step(FILE *f, OutFormat fmt, const StepRow *row, json_t *steps_json)
{
    const StepReport *r = &row->rep;
    const Counters *c = &r->ctr;
    size_t cache_len = r->context; /* rows per sequence after the pass */
    RoofPoint rp;
    roofline_point(&rp, c, row->roofs);
    if (fmt == OUT_TABLE) {
        char shape[32], tok[16] = "-", dram[16], peak[16];
        snprintf(shape, sizeof shape, "%zux%zu", r->n_new, r->context);
        if (row->sampled0 >= 0)
            snprintf(tok, sizeof tok, "%d", row->sampled0);
        fprintf(f, "%-8s %4zu %-7s %6" PRIu64 " %6zu %11s %13" PRIu64 " %13" PRIu64 " %13" PRIu64 " %11" PRIu64
                   " %11" PRIu64 " %11" PRIu64 " %9.3f %8.3g %7.3g %6s %6s %6s\n",
                row->run, r->step, phase_name(r->phase), c->tokens_projected / row->n_seqs, cache_len, shape,
                counters_proj_flops(c), counters_attn_flops(c), counters_total_flops(c), c->weight_bytes_read,
                c->kv_bytes_read, c->kv_bytes_written, c->seconds * 1e3, rp.bps / 1e9, rp.intensity,
                share_text(dram, sizeof dram, &rp, 1, row->roofs), share_text(peak, sizeof peak, &rp, 0, row->roofs),
                tok);
    } else if (fmt == OUT_TSV) {
        fprintf(f,
                "%s\t%zu\t%s\t%" PRIu64 "\t%zu\t%zu\t%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
                "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
                "\t%.9f\t%d\t%" PRIu64 "\t%.6g\t%.6g\t%.6g\t%.6g\t%d\n",
                row->run, r->step, phase_name(r->phase), c->tokens_projected / row->n_seqs, cache_len, r->n_new,
                r->context, counters_proj_flops(c), counters_attn_flops(c), c->flops_ffn, counters_total_flops(c),
                c->weight_bytes_read, c->kv_bytes_read, c->kv_bytes_written, c->allocations, c->bytes_copied,
                c->cache_bytes_used, c->cache_bytes_reserved, c->seconds, row->sampled0, rp.bytes, rp.bps / 1e9,
                rp.intensity, rp.bw_share, rp.peak_share, rp.from_cache);
    } else if (steps_json) {
        json_t *o = json_pack("{s:s, s:I, s:s, s:I, s:I, s:[I,I], s:o}", "run", row->run, "step",
                              (json_int_t)r->step, "phase", phase_name(r->phase), "tokens_projected_per_seq",
                              (json_int_t)(c->tokens_projected / row->n_seqs), "cache_len", (json_int_t)cache_len,
                              "attention_shape", (json_int_t)r->n_new, (json_int_t)r->context, "counters",
                              report_counters_json(c));
        if (row->sampled0 >= 0)
            json_object_set_new(o, "token", json_integer(row->sampled0));
        json_object_set_new(o, "roofline", roofline_json(&rp, row->roofs));
        json_array_append_new(steps_json, o);
    }
}

void report_totals(FILE *f, OutFormat fmt, const char *run, const Counters *t, json_t *obj)
{
    if (fmt == OUT_JSON) {
        json_object_set_new(obj, run, report_counters_json(t));
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    char used[32], reserved[32], copied[32];
    fprintf(f, "%s totals: %" PRIu64 " token rows projected, %.3f ms; %" PRIu64 " FLOPs = projections %" PRIu64
               " + attention %" PRIu64 " + FFN %" PRIu64 " + other %" PRIu64 " (the logits' matmul, norms, RoPE, "
               "residual adds and scalings)\n",
            run, t->tokens_projected, t->seconds * 1e3, counters_total_flops(t), counters_proj_flops(t),
            counters_attn_flops(t), t->flops_ffn, t->flops_other);
    fprintf(f, "%s bytes: weights read %" PRIu64 ", K/V read %" PRIu64 ", K/V written %" PRIu64, run,
            t->weight_bytes_read, t->kv_bytes_read, t->kv_bytes_written);
    if (t->view_bytes) /* a materialized f32 view (MLA's decompressed tiles), written and read back */
        fprintf(f, ", f32 view written and read %" PRIu64, t->view_bytes);
    fputc('\n', f);
    if (t->cache_bytes_reserved)
        fprintf(f, "%s cache: %s used, %s reserved; %" PRIu64 " allocations, %s copied by reallocation\n", run,
                human_bytes(used, sizeof used, (double)t->cache_bytes_used),
                human_bytes(reserved, sizeof reserved, (double)t->cache_bytes_reserved), t->allocations,
                human_bytes(copied, sizeof copied, (double)t->bytes_copied));
}

void report_roofline(FILE *f, OutFormat fmt, const char *run, const Counters *t, const Roofs *roofs, json_t *obj)
{
    RoofPoint p;
    roofline_point(&p, t, roofs);
    if (fmt == OUT_JSON) {
        json_t *counters = json_object_get(obj, run); /* report_totals' object of this run */
        if (counters)
            json_object_set_new(counters, "roofline", roofline_json(&p, roofs));
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    char dram[16], peak[16], above[160] = "";
    if (p.from_cache)
        snprintf(above, sizeof above, " (%.1fx it: more than memory gives, so part of the bytes came from cache, "
                 "where a small model's weights fit)", p.bw_share);
    fprintf(f, "%s roofline: %" PRIu64 " bytes moved at %.3g GB/s, %.3g FLOP/B, %.3g GFLOP/s; DRAM roof: %s%s, "
               "compute peak: %s\n",
            run, p.bytes, p.bps / 1e9, p.intensity, p.flops_ps / 1e9,
            p.from_cache ? "from cache" : share_text(dram, sizeof dram, &p, 1, roofs), above,
            share_text(peak, sizeof peak, &p, 0, roofs));
}

void report_roofs(FILE *f, OutFormat fmt, const Roofs *roofs, json_t *root)
{
    if (fmt == OUT_JSON && root) {
        char origin[96];
        json_object_set_new(root, "roofs", !roofline_known(roofs) ? json_null()
                                           : json_pack("{s:s, s:f, s:f, s:f, s:s}", "source",
                                                       roofs_origin(roofs, origin, sizeof origin), "read_gb_per_s",
                                                       roofs->read_bps / 1e9, "compute_gflop_per_s",
                                                       roofs->flops_ps / 1e9, "ridge_flop_per_byte",
                                                       roofline_ridge(roofs), "isa", roofs->isa));
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    char line[256];
    fprintf(f, "%s\n", roofs_describe(roofs, line, sizeof line));
    if (roofline_known(roofs))
        fprintf(f, "(%%DRAM, %%peak: a pass's GB/s over the DRAM roof, its FLOP/s over the compute peak; \"cache\": "
                   "above the DRAM roof, so part of its bytes came from cache)\n");
    else
        fprintf(f, "(no roofs: `kvscope bench` measures and keeps them, or set %s=GB/s,GFLOP/s)\n", ROOFS_ENV);
}

/* A context shift's count (shift): how often it shifted and what it forgot. */
static void report_shifts(FILE *f, OutFormat fmt, const KvStats *st, json_t *root)
{
    if (fmt == OUT_JSON && root)
        json_object_set_new(root, "shift", json_pack("{s:I, s:I}", "shifts", (json_int_t)st->shifts,
                                                      "positions_discarded", (json_int_t)st->shifted_out));
    else if (fmt == OUT_TABLE)
        fprintf(f, "context shift: %zu shift(s) discarded %zu positions; the rows after them moved down (the "
                   "bytes copied above) and their keys were rotated back as many positions\n", st->shifts,
                st->shifted_out);
}

void report_pages(FILE *f, OutFormat fmt, const KvCache *cache, json_t *root)
{
    KvStats st;
    kv_stats(cache, &st);
    if (kv_shifts(cache))
        report_shifts(f, fmt, &st, root);
    if (!st.page_rows)
        return;
    if (fmt == OUT_JSON && root) {
        json_object_set_new(root, "pages",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I}",
                                      "page_rows",
                                      (json_int_t)st.page_rows, "total", (json_int_t)st.pages_total, "used",
                                      (json_int_t)st.pages_used, "free", (json_int_t)st.pages_free, "cached",
                                      (json_int_t)st.pages_cached, "shared", (json_int_t)st.pages_shared,
                                      "waste_rows", (json_int_t)st.waste_rows, "prefix_hits",
                                      (json_int_t)st.prefix_hits, "cow_copies", (json_int_t)st.cow_copies,
                                      "evictions", (json_int_t)st.evictions, "sparse_on", st.sparse_on,
                                      "pages_dropped", (json_int_t)st.pages_dropped, "bytes_saved",
                                      (json_int_t)st.bytes_saved));
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    fprintf(f, "pages: %zu used of %zu (%zu rows each), %zu free, %zu cached; %zu shared, %zu prefix hits, "
               "%zu copied on write; %zu empty slots in last pages\n",
            st.pages_used, st.pages_total, st.page_rows, st.pages_free, st.pages_cached, st.pages_shared,
            st.prefix_hits, st.cow_copies, st.waste_rows);
    if (st.prefix_hits)
        fprintf(f, "prefix sharing: only full pages are shared; %zu page(s) mapped instead of written\n",
                st.prefix_hits);
    if (st.pages_dropped) {
        char saved[32];
        fprintf(f, "block-sparse: %s; %zu pages attended, %zu dropped, %s saved\n", st.sparse_on ? "on" : "off",
                st.pages_active, st.pages_dropped, human_bytes(saved, sizeof saved, (double)st.bytes_saved));
    }
}

void report_run_header(FILE *f, const Model *m, const RunHeader *h)
{
    const Config *c = &m->cfg;
    if (h->preset)
        fprintf(f, "preset %s: %s\n", h->preset->name, h->preset->description);
    fprintf(f, "model %s: d_model %zu, %zu layers%s, %zu heads, %zu KV heads, head_dim %zu, ffn %zu, vocab %zu, "
            "max_seq_len %zu\n",
            c->name, c->d_model, c->n_layers, c->shared_layers ? " (shared weights)" : "", c->n_heads,
            c->n_kv_heads, c->head_dim, c->ffn_dim, c->vocab, c->max_seq_len);
    fprintf(f, "weights: %s; kernels: %s; attention: %s\n", m->source, m->kern->isa,
            mla_report_attention_name(m, attend_algo_name(m->attend)));
    fprintf(f, "cache: %s; prompt: %zu tokens x %zu sequence(s) (%s); generate %zu; %s\n", h->cache, h->plen,
            h->batch, setup_prompt_source_name(setup_prompt_source(h->po, c)), h->go->n_generate,
            h->go->temperature > 0 ? "sampling" : "greedy");
    if (setup_prompt_source(h->po, c) == PROMPT_RANDOM_IDS)
        fprintf(f, "prompt seed: %" PRIu64 "\n", h->po->seed ? h->po->seed : 1);
    if (structure_on(h->structure)) {
        char desc[512];
        fprintf(f, "attention structure: %s\n", structure_describe(h->structure, desc, sizeof desc));
    }
    if (h->go->temperature > 0)
        fprintf(f, "sampling: temperature %g, top-k %zu, sample seed %" PRIu64 "\n", h->go->temperature,
                h->go->top_k, h->go->sample_seed);
}

/* ids [n] as text into buf (cap): pieces shown as people read them (the
 * ids a tokenizer does not make as <id>), or "" without a tokenizer. */
static char *ids_text(const Tokenizer *tok, const int *ids, size_t n, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; tok && i < n && used + 1 < cap; i++) {
        size_t len;
        const unsigned char *piece = tokenizer_piece(tok, ids[i], &len);
        if (piece)
            tokenizer_show(piece, len, 0, buf + used, cap - used);
        else
            snprintf(buf + used, cap - used, "<%d>", ids[i]);
        used += strlen(buf + used);
    }
    return buf;
}

void report_tokens(FILE *f, OutFormat fmt, const RunTokens *t, json_t *root)
{
    char text[4096];
    const size_t st = t->stride ? t->stride : t->n;
    if (fmt == OUT_TABLE) {
        for (size_t b = 0; b < t->batch; b++) {
            fprintf(f, "tokens (sequence %zu):", b);
            for (size_t i = 0; i < t->n; i++)
                fprintf(f, " %d", t->out[b * st + i]);
            fprintf(f, "\n");
        }
        for (size_t b = 0; t->tok && b < t->batch; b++) {
            fprintf(f, "text (sequence %zu, %s tokens): %s", b, tokenizer_name(t->tok),
                    ids_text(t->tok, t->prompt + b * t->plen, t->plen, text, sizeof text));
            fprintf(f, " \u2016 %s\n", ids_text(t->tok, t->out + b * st, t->n, text, sizeof text));
        }
        if (t->tok)
            fprintf(f, "(the prompt, then \u2016 and what was generated; \\n, \\t and \\xHH stand for bytes shown escaped)\n");
        if (t->at_eos)
            fprintf(f, "stopped at EOS after %zu tokens (the end-of-text token %d%s; --ignore-eos goes on)\n", t->n,
                    t->eos, t->batch > 1 ? ", chosen by every sequence" : "");
        return;
    }
    if (!root)
        return;
    json_t *ids = json_array(), *pieces = t->tok ? json_array() : NULL, *texts = t->tok ? json_array() : NULL;
    for (size_t b = 0; b < t->batch; b++) {
        json_t *row = json_array(), *prow = t->tok ? json_array() : NULL;
        for (size_t i = 0; i < t->n; i++) {
            const int id = t->out[b * st + i];
            json_array_append_new(row, json_integer(id));
            if (prow)
                json_array_append_new(prow, json_string(ids_text(t->tok, &id, 1, text, sizeof text)));
        }
        json_array_append_new(ids, row);
        if (prow) {
            json_array_append_new(pieces, prow);
            json_array_append_new(texts, json_string(ids_text(t->tok, t->out + b * st, t->n, text, sizeof text)));
        }
    }
    json_object_set_new(root, "tokens", ids);
    if (t->at_eos)
        json_object_set_new(root, "stopped_at_eos", json_pack("{s:i, s:I}", "eos", t->eos, "tokens", (json_int_t)t->n));
    if (t->tok) {
        json_object_set_new(root, "tokenizer", json_string(tokenizer_name(t->tok)));
        json_object_set_new(root, "pieces", pieces);
        json_object_set_new(root, "text", texts);
    }
}

void report_compare(FILE *f, OutFormat fmt, const GenComparison *c, double tolerance, const Counters *cached,
                    const Counters *uncached, json_t *root)
{
    if (root) {
        json_object_set_new(root, "compare",
                            json_pack("{s:b, s:I, s:f, s:f, s:o, s:f, s:f, s:f}", "tokens_identical", c->same,
                                      "first_divergence", (json_int_t)c->first_divergence, "max_logit_diff_abs",
                                      c->logit_abs, "max_logit_diff_rel", c->logit_rel, "tolerance_rel",
                                      isfinite(tolerance) ? json_real(tolerance) : json_null(),
                                      "projected_ratio", c->proj_ratio, "flop_ratio", c->flop_ratio, "time_ratio",
                                      c->time_ratio));
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    if (c->same)
        fprintf(f, "tokens identical: yes\n");
    else
        fprintf(f, "tokens identical: NO, from generated token %zu on\n", c->first_divergence);
    if (isfinite(tolerance))
        fprintf(f, "max logit difference: %.3g absolute, %.3g relative (tolerance %.0e relative)%s\n", c->logit_abs,
                c->logit_rel, tolerance, c->same ? "" : ", over the steps fed the same tokens");
    else
        fprintf(f, "max logit difference: %.3g absolute, %.3g relative (no tolerance: inputs rounded to 8 bits "
                "can land a code apart; the tokens must agree)%s\n", c->logit_abs, c->logit_rel,
                c->same ? "" : ", over the steps fed the same tokens");
    fprintf(f, "token rows projected: cached %" PRIu64 ", uncached %" PRIu64 " (%.2fx)\n", cached->tokens_projected,
            uncached->tokens_projected, c->proj_ratio);
    fprintf(f, "FLOPs: cached %" PRIu64 ", uncached %" PRIu64 " (%.2fx)\n", counters_total_flops(cached),
            counters_total_flops(uncached), c->flop_ratio);
    fprintf(f, "measured time: cached %.3f ms, uncached %.3f ms (%.2fx)\n", cached->seconds * 1e3,
            uncached->seconds * 1e3, c->time_ratio);
}
