/* serve_summary.c: what a serving run adds up to (serve.h, ServeSummary):
 * time to first token and per output token, in engine steps and in wall
 * time, the pool's peak and fragmentation, prefix hits and copies. */
#include "sim/serve.h"

#include <stdlib.h>
#include <string.h>

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int serve_summarize(const ServeResult *r, ServeSummary *s)
{
    memset(s, 0, sizeof *s);
    const size_t n = r->n_requests;
    size_t *ttft = malloc((n ? n : 1) * sizeof *ttft), tpot_n = 0;
    double *ttft_ms = malloc((n ? n : 1) * sizeof *ttft_ms), *end_ms = malloc((r->n_steps + 1) * sizeof *end_ms);
    if (!ttft || !ttft_ms || !end_ms) {
        free(ttft), free(ttft_ms), free(end_ms);
        return -1;
    }
    end_ms[0] = 0; /* end_ms[i]: wall time when step i - 1 ended */
    for (size_t i = 0; i < r->n_steps; i++)
        end_ms[i + 1] = end_ms[i] + 1e3 * r->steps[i].seconds;
    double ttft_sum = 0, tpot = 0, tpot_ms = 0;
    for (size_t i = 0; i < n; i++) {
        const ServeRequest *q = &r->req[i];
        ttft[i] = q->first_token - q->arrival;
        ttft_ms[i] = end_ms[q->first_token + 1] - end_ms[q->arrival];
        ttft_sum += (double)ttft[i];
        if (q->n_made > 1) { /* n_made: fewer than n_output where it stopped at the end-of-text token */
            tpot += (double)(q->finished - q->first_token) / (double)(q->n_made - 1);
            tpot_ms += (end_ms[q->finished + 1] - end_ms[q->first_token + 1]) / (double)(q->n_made - 1);
            tpot_n++;
        }
    }
    qsort(ttft, n, sizeof *ttft, cmp_size);
    qsort(ttft_ms, n, sizeof *ttft_ms, cmp_double);
    s->ttft_median = n ? ttft[n / 2] : 0;
    s->ttft_median_ms = n ? ttft_ms[n / 2] : 0;
    s->ttft_mean = n ? ttft_sum / (double)n : 0;
    s->tpot_mean = tpot_n ? tpot / (double)tpot_n : 0;
    s->tpot_mean_ms = tpot_n ? tpot_ms / (double)tpot_n : 0;
    free(ttft), free(ttft_ms), free(end_ms);
    size_t waste = 0, mapped = 0;
    for (size_t i = 0; i < r->n_steps; i++) {
        const KvStats *p = &r->steps[i].pool;
        s->peak_pages_used = p->pages_used > s->peak_pages_used ? p->pages_used : s->peak_pages_used;
        waste += p->waste_rows, mapped += p->pages_used * p->page_rows;
    }
    s->fragmentation = mapped ? (double)waste / (double)mapped : 0;
    if (r->n_steps) {
        const KvStats *last = &r->steps[r->n_steps - 1].pool;
        s->prefix_hit_pages = last->prefix_hits;
        s->prefix_hit_rows = last->prefix_hits * last->page_rows;
        s->cow_copies = last->cow_copies;
    }
    return 0;
}
