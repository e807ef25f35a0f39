/* serve_trace.c: a serving workload from a trace file (serve.h). */
#include "sim/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"
#include "util/parse.h"

#define TRACE_MAX_BYTES (16u << 20)
#define TRACE_MAX_REQUESTS 100000

/* One line's three numbers into t; 0 for a blank or comment line (nothing
 * taken), 1 for a request, -1 with e set. */
static int parse_line(char *line, size_t no, ServeTraceEntry *t, Err *e)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *word[4];
    size_t n = 0;
    for (char *w = strtok(line, " \t\r"); w; w = strtok(NULL, " \t\r"))
        if (n < 4)
            word[n++] = w;
        else
            n++;
    if (n == 0)
        return 0;
    if (n != 3)
        return err_set(e, ERR_USAGE, "line %zu: %zu fields; a request is ARRIVAL PROMPT_LEN OUTPUT_LEN", no, n);
    char what[48];
    snprintf(what, sizeof what, "line %zu: arrival", no);
    if (parse_size0(word[0], what, &t->arrival, e) < 0)
        return -1;
    snprintf(what, sizeof what, "line %zu: prompt length", no);
    if (parse_size(word[1], what, &t->prompt_len, e) < 0)
        return -1;
    snprintf(what, sizeof what, "line %zu: output length", no);
    return parse_size(word[2], what, &t->output_len, e) < 0 ? -1 : 1;
}

int serve_trace_read(const char *path, ServeTraceEntry **out, size_t *n_out, Err *e)
{
    char *text;
    size_t len;
    *out = NULL, *n_out = 0;
    if (files_read_text(path, TRACE_MAX_BYTES, &text, &len, e) < 0)
        return -1;
    ServeTraceEntry *t = NULL;
    size_t n = 0, cap = 0, no = 0;
    int rc = 0;
    for (char *line = text, *next; rc == 0 && line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        no++;
        ServeTraceEntry entry;
        int got = parse_line(line, no, &entry, e);
        if (got <= 0) {
            rc = got;
            continue;
        }
        if (n && entry.arrival < t[n - 1].arrival) {
            rc = err_set(e, ERR_USAGE, "line %zu: arrival %zu comes before the previous %zu (sort by arrival)", no,
                         entry.arrival, t[n - 1].arrival);
            break;
        }
        if (n == TRACE_MAX_REQUESTS) {
            rc = err_set(e, ERR_USAGE, "more than %d requests", TRACE_MAX_REQUESTS);
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            ServeTraceEntry *grown = realloc(t, cap * sizeof *grown);
            if (!grown) {
                rc = err_set(e, ERR_RUNTIME, "out of memory");
                break;
            }
            t = grown;
        }
        t[n++] = entry;
    }
    free(text);
    if (rc == 0 && n == 0)
        rc = err_set(e, ERR_USAGE, "no requests in it (lines of ARRIVAL PROMPT_LEN OUTPUT_LEN)");
    if (rc < 0) {
        free(t);
        return err_wrap(e, "trace %s", path);
    }
    *out = t, *n_out = n;
    return 0;
}
