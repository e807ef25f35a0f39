/* roofs.c: where the machine's roofs come from, and the kept file (roofs.h). */
#include "sim/roofs.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/outfile.h"
#include "util/state_dir.h"

/* "20,150" -> 20 GB/s and 150 GFLOP/s. */
static int parse_env(const char *text, Roofs *r, Err *e)
{
    char *end;
    const double gbs = strtod(text, &end);
    if (*end == ',') {
        const double gfl = strtod(end + 1, &end);
        if (*end == '\0' && isfinite(gbs) && isfinite(gfl) && gbs > 0 && gfl > 0) {
            *r = (Roofs){ .read_bps = gbs * 1e9, .flops_ps = gfl * 1e9, .source = ROOFS_GIVEN };
            return 0;
        }
    }
    return err_set(e, ERR_USAGE, "%s: '%s' is not READ_GB/s,GFLOP/s, two positive numbers (e.g. 20,150)", ROOFS_ENV,
                   text);
}

int roofs_read_file(const char *path, Roofs *r)
{
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256], word[16];
    Roofs got = { .source = ROOFS_BENCH };
    while (fgets(line, sizeof line, f)) {
        double v;
        long long t;
        if (sscanf(line, "read_bytes_per_s %lf", &v) == 1)
            got.read_bps = v;
        else if (sscanf(line, "flops_per_s %lf", &v) == 1)
            got.flops_ps = v;
        else if (sscanf(line, "when %lld", &t) == 1)
            got.when = (int64_t)t;
        else if (sscanf(line, "isa %15s", word) == 1)
            snprintf(got.isa, sizeof got.isa, "%s", word);
    }
    fclose(f);
    if (!roofline_known(&got))
        return -1;
    *r = got;
    return 0;
}

int roofs_get(Roofs *r, const Kernels *k, int probe, Err *e)
{
    memset(r, 0, sizeof *r);
    const char *env = getenv(ROOFS_ENV);
    if (env && *env)
        return parse_env(env, r, e);
    char path[PATH_MAX];
    if (state_dir_file(ROOFS_FILE, path, sizeof path) == 0 && roofs_read_file(path, r) == 0)
        return 0;
    return probe ? roofs_probe(r, k, e) : 0;
}

int roofs_save(const Roofs *r, char *path, size_t cap, Err *e)
{
    if (state_dir_file(ROOFS_FILE, path, cap) < 0)
        return err_set(e, ERR_RUNTIME, "cannot keep the roofs: neither XDG_STATE_HOME nor HOME is an absolute path");
    if (state_dir_make(path) < 0)
        return err_set(e, ERR_RUNTIME, "cannot create the state folder for the roofs: %s", strerror(errno));
    OutFile o;
    if (outfile_open(&o, path, e) < 0)
        return err_wrap(e, "cannot keep the roofs");
    fprintf(o.f, "# kvscope's roofs of this machine, measured by `kvscope bench` (the view and run read them)\n"
                 "when %lld\nread_bytes_per_s %.6g\nflops_per_s %.6g\nisa %s\n",
            (long long)r->when, r->read_bps, r->flops_ps, r->isa[0] ? r->isa : "unknown");
    if (outfile_commit(&o, e) < 0)
        return err_wrap(e, "cannot keep the roofs");
    return 0;
}

const char *roofs_origin(const Roofs *r, char *buf, size_t cap)
{
    char when[48] = "";
    if (r->when > 0) {
        const time_t t = (time_t)r->when;
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof when, r->source == ROOFS_PROBE ? ", %H:%M:%S UTC" : ", %Y-%m-%d %H:%M UTC", &tm);
    }
    snprintf(buf, cap, "%s%s", roofline_source_name(r->source), when);
    return buf;
}

const char *roofs_describe(const Roofs *r, char *buf, size_t cap)
{
    char origin[96];
    if (!roofline_known(r)) {
        snprintf(buf, cap, "roofs: none");
        return buf;
    }
    snprintf(buf, cap, "roofs: %s%s%s%s: DRAM read %.3g GB/s, compute %.3g GFLOP/s, ridge %.3g FLOP/B",
             roofs_origin(r, origin, sizeof origin), r->isa[0] ? " (" : "", r->isa, r->isa[0] ? ")" : "",
             r->read_bps / 1e9, r->flops_ps / 1e9, roofline_ridge(r));
    return buf;
}
