/* serve_report.c: `kvscope serve`'s output (serve_report.h). */
#include "report/serve_report.h"

#include <jansson.h>
#include <string.h>

static const char step_tsv_header[] = "step\trunning\twaiting\tdone\tdecode_tokens\tprefill_tokens\tpreempted\t"
                                      "pages_used\tpages_shared\tpages_free\tprefix_hits\twaste_rows\tcow_copies\t"
                                      "prefix_pages\tprefix_evicted\ttree_nodes\n";

static const char *const prefix_names[] = { "pages", "block", "radix" };
static const char *const workload_names[] = { "random", "chat", "fewshot" };

static int parse_word(const char *s, const char *flag, const char *const *names, int n, int *out, Err *e)
{
    for (int k = 0; k < n; k++)
        if (strcmp(s, names[k]) == 0)
            return *out = k, 0;
    return err_set(e, ERR_USAGE, "%s: '%s' is not %s, %s or %s", flag, s, names[0], names[1], names[2]);
}

int serve_prefix_parse(const char *s, ServePrefix *out, Err *e)
{
    int k = 0;
    if (parse_word(s, "--prefix-cache", prefix_names, 3, &k, e) < 0)
        return -1;
    *out = (ServePrefix)k;
    return 0;
}

int serve_workload_parse(const char *s, ServeWorkload *out, Err *e)
{
    int k = 0;
    if (parse_word(s, "--workload", workload_names, 3, &k, e) < 0)
        return -1;
    *out = (ServeWorkload)k;
    return 0;
}

const char *serve_prefix_name(ServePrefix p)
{
    return prefix_names[p];
}

void serve_report_header(FILE *f, OutFormat fmt, const ServeRun *run)
{
    const ServeOptions *o = run->o;
    if (fmt == OUT_TSV)
        fputs(step_tsv_header, f);
    if (fmt != OUT_TABLE)
        return;
    char forks[96] = "";
    if (o->fork_share > 0)
        snprintf(forks, sizeof forks, ", %.3g of the requests forking into %zu samples", o->fork_share,
                 o->n_samples);
    if (o->workload == SERVE_WORKLOAD_CHAT)
        fprintf(f, "serve: model %s, chat: %zu requests, conversations of %zu turns starting at %.3g a step, "
                   "messages %zu..%zu tokens, outputs %zu..%zu, %zu slots, %zu tokens a step, prefix cache %s%s\n",
                run->model, o->n_requests, o->turns, o->rate, o->prompt_min, o->prompt_max, o->output_min,
                o->output_max, run->slots, o->token_budget, prefix_names[o->prefix], forks);
    else if (o->workload == SERVE_WORKLOAD_FEWSHOT)
        fprintf(f, "serve: model %s, few-shot: %zu requests at %.3g a step, %d preambles of %zu tokens, questions "
                   "%zu..%zu tokens, outputs %zu..%zu, %zu slots, %zu tokens a step, prefix cache %s%s\n",
                run->model, o->n_requests, o->rate, SERVE_FEWSHOT_PREAMBLES, o->shared_prefix, o->prompt_min,
                o->prompt_max, o->output_min, o->output_max, run->slots, o->token_budget, prefix_names[o->prefix],
                forks);
    else if (o->trace)
        fprintf(f, "serve: model %s, %zu requests from a trace (%zu prompt tokens shared), %zu slots, %zu tokens a "
                   "step, preemption by %s%s\n", run->model, o->n_requests, o->shared_prefix, run->slots,
                o->token_budget, o->swap ? "swap" : "recompute", forks);
    else
        fprintf(f, "serve: model %s, %zu requests at %.3g a step, prompts %zu..%zu tokens (%zu shared), outputs "
                   "%zu..%zu, %zu slots, %zu tokens a step, preemption by %s%s\n", run->model, o->n_requests,
                o->rate, o->prompt_min, o->prompt_max, o->shared_prefix, o->output_min, o->output_max, run->slots,
                o->token_budget, o->swap ? "swap" : "recompute", forks);
    fprintf(f, "%6s %7s %7s %5s %6s %7s %9s %5s %6s %5s %7s\n", "step", "running", "waiting", "done", "decode",
            "prefill", "preempted", "pages", "shared", "free", "hits");
}

void serve_report_step(FILE *f, OutFormat fmt, const ServeStep *st)
{
    const KvStats *p = &st->pool;
    if (fmt == OUT_TSV)
        fprintf(f, "%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\t%zu\n", st->step,
                st->running, st->waiting, st->done, st->decode_tokens, st->prefill_tokens, st->preempted,
                p->pages_used, p->pages_shared, p->pages_free + p->pages_cached, p->prefix_hits, p->waste_rows,
                p->cow_copies, st->prefix_pages, st->prefix_evicted, st->tree_nodes);
    else if (fmt == OUT_TABLE)
        fprintf(f, "%6zu %7zu %7zu %5zu %6zu %7zu %9zu %5zu %6zu %5zu %7zu\n", st->step, st->running, st->waiting,
                st->done, st->decode_tokens, st->prefill_tokens, st->preempted, p->pages_used, p->pages_shared,
                p->pages_free + p->pages_cached, p->prefix_hits);
}

static void summary_json(FILE *f, const ServeRun *run, const ServeResult *r, const ServeSummary *s)
{
    json_t *steps = json_array();
    for (size_t i = 0; i < r->n_steps; i++) {
        const ServeStep *st = &r->steps[i];
        json_array_append_new(steps, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "running",
                                               (json_int_t)st->running, "waiting", (json_int_t)st->waiting,
                                               "done", (json_int_t)st->done, "decode_tokens",
                                               (json_int_t)st->decode_tokens, "prefill_tokens",
                                               (json_int_t)st->prefill_tokens, "preempted",
                                               (json_int_t)st->preempted, "pages_used",
                                               (json_int_t)st->pool.pages_used, "pages_shared",
                                               (json_int_t)st->pool.pages_shared));
    }
    const KvStats *last = &r->steps[r->n_steps - 1].pool;
    json_t *summary = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f}", "requests",
        (json_int_t)r->n_requests, "steps", (json_int_t)r->n_steps, "generated_tokens",
        (json_int_t)r->generated_tokens, "prompt_tokens", (json_int_t)r->prompt_tokens, "preemptions",
        (json_int_t)r->preemptions, "recomputed_tokens", (json_int_t)r->recomputed_tokens, "ttft_median_steps",
        (json_int_t)s->ttft_median, "ttft_mean_steps", s->ttft_mean, "tpot_mean_steps", s->tpot_mean,
        "swapped_out_bytes", (json_int_t)r->swapped_out_bytes, "pool_pages", (json_int_t)last->pages_total,
        "page_rows", (json_int_t)last->page_rows, "peak_pages_used", (json_int_t)s->peak_pages_used,
        "prefix_hit_pages", (json_int_t)s->prefix_hit_pages, "fragmentation", s->fragmentation, "seconds",
        r->seconds, "ttft_median_ms", s->ttft_median_ms, "tpot_mean_ms", s->tpot_mean_ms);
    json_object_set_new(summary, "sequences", json_integer((json_int_t)r->n_sequences));
    json_object_set_new(summary, "forked_requests", json_integer((json_int_t)r->forked_requests));
    json_object_set_new(summary, "fork_shared_pages", json_integer((json_int_t)r->fork_shared_pages));
    json_object_set_new(summary, "cow_copies", json_integer((json_int_t)s->cow_copies));
    const ServeStep *end = &r->steps[r->n_steps - 1];
    json_object_set_new(summary, "prefix_cache", json_string(prefix_names[run->o->prefix]));
    json_object_set_new(summary, "workload", json_string(workload_names[run->o->workload]));
    json_object_set_new(summary, "prefix_hit_tokens", json_integer((json_int_t)r->prefix_hit_tokens));
    json_object_set_new(summary, "prefix_hit_rate",
                        json_real(r->prompt_tokens ? (double)r->prefix_hit_tokens / (double)r->prompt_tokens : 0));
    json_object_set_new(summary, "prefix_pages_held", json_integer((json_int_t)end->prefix_pages));
    json_object_set_new(summary, "prefix_evicted_pages", json_integer((json_int_t)end->prefix_evicted));
    json_object_set_new(summary, "tree_nodes", json_integer((json_int_t)end->tree_nodes));
    json_object_set_new(summary, "stopped_at_eos", json_integer((json_int_t)r->eos_requests));
    json_t *root = json_pack("{s:s, s:s, s:I, s:f, s:I, s:o, s:o}", "model", run->model, "cache", run->cache,
                             "slots", (json_int_t)run->slots, "rate", run->o->trace ? 0.0 : run->o->rate, "token_budget",
                             (json_int_t)run->o->token_budget, "summary", summary, "steps", steps);
    json_dumpf(root, f, JSON_INDENT(2));
    fprintf(f, "\n");
    json_decref(root);
}

void serve_report_summary(FILE *f, OutFormat fmt, const ServeRun *run, const ServeResult *r, const ServeSummary *s)
{
    if (fmt == OUT_JSON) {
        summary_json(f, run, r, s);
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    const KvStats *last = &r->steps[r->n_steps - 1].pool;
    fprintf(f, "\n%zu requests in %zu steps, %.3f s: %zu tokens generated (%.1f tokens/s), %zu prompt tokens\n",
            r->n_requests, r->n_steps, r->seconds, r->generated_tokens,
            r->seconds > 0 ? (double)r->generated_tokens / r->seconds : 0, r->prompt_tokens);
    if (r->eos_requests)
        fprintf(f, "stopped at EOS: %zu of %zu requests (every sample chose the end-of-text token %d; "
                   "--ignore-eos goes on)\n", r->eos_requests, r->n_requests, run->eos);
    fprintf(f, "time to first token: median %zu steps (%.1f ms), mean %.1f steps; time per output token: mean "
               "%.2f steps (%.2f ms)\n", s->ttft_median, s->ttft_median_ms, s->ttft_mean, s->tpot_mean,
            s->tpot_mean_ms);
    if (r->swapped_out_bytes || r->swapped_in_bytes)
        fprintf(f, "preemptions %zu (by swap: %.1f KiB copied out to host memory, %.1f KiB back)\n", r->preemptions,
                (double)r->swapped_out_bytes / 1024.0, (double)r->swapped_in_bytes / 1024.0);
    else
        fprintf(f, "preemptions %zu (by recompute: %zu tokens run again)\n", r->preemptions, r->recomputed_tokens);
    if (run->o->prefix == SERVE_PREFIX_RADIX) /* the block hash is off: the tree's line below says it all */
        fprintf(f, "pool: %zu pages of %zu rows, at most %zu in use (the tree's pages included)\n", last->pages_total,
                last->page_rows, s->peak_pages_used);
    else
        fprintf(f, "pool: %zu pages of %zu rows, at most %zu in use; prefix hits %zu pages: %zu rows mapped from the "
                   "prefix cache, not written (a shared prefix, or a preempted sequence's own pages)\n",
                last->pages_total, last->page_rows, s->peak_pages_used, s->prefix_hit_pages, s->prefix_hit_rows);
    const ServeStep *end = &r->steps[r->n_steps - 1];
    fprintf(f, "prefix cache %s: %zu of %zu prompt tokens found cached, not run (hit rate %.1f%%); %zu pages held at "
               "the end%s, %zu pages evicted for room\n", prefix_names[run->o->prefix], r->prefix_hit_tokens,
            r->prompt_tokens, r->prompt_tokens ? 100.0 * (double)r->prefix_hit_tokens / (double)r->prompt_tokens : 0,
            end->prefix_pages, run->o->prefix == SERVE_PREFIX_RADIX ? " by the tree" : " named by the hash",
            end->prefix_evicted);
    if (r->forked_requests)
        fprintf(f, "parallel sampling: %zu requests forked into %zu samples each; %zu prompt pages shared at the "
                   "forks instead of written, %zu copied on write\n",
                r->forked_requests, run->o->n_samples, r->fork_shared_pages, s->cow_copies);
    fprintf(f, "internal fragmentation: %.1f%% of the rows in mapped pages were empty, over the steps\n",
            100.0 * s->fragmentation);
    fprintf(f, "cache %s\n", run->cache);
}
