#include "kv/spec.h"

#include <stdio.h>
#include <string.h>

#include "util/parse.h"

static int copy_word(char *dst, size_t cap, const char *src, size_t len, const char *what, const char *text,
                     Err *e)
{
    if (len == 0)
        return err_set(e, ERR_USAGE, "cache spec '%s': empty %s", text, what);
    if (len >= cap)
        return err_set(e, ERR_USAGE, "cache spec '%s': %s '%.*s' is too long", text, what, (int)len, src);
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

/* One part: text [p, p + len). */
static int parse_part(const char *p, size_t len, KvSpecPart *out, const char *text, Err *e)
{
    const char *colon = memchr(p, ':', len);
    size_t name_len = colon ? (size_t)(colon - p) : len;
    if (copy_word(out->name, sizeof out->name, p, name_len, "cache name", text, e) < 0)
        return -1;
    if (!colon)
        return 0;
    const char *opt = colon + 1, *end = p + len;
    while (1) {
        const char *comma = memchr(opt, ',', (size_t)(end - opt));
        size_t olen = comma ? (size_t)(comma - opt) : (size_t)(end - opt);
        const char *eq = memchr(opt, '=', olen);
        if (!eq)
            return err_set(e, ERR_USAGE, "cache spec '%s': option '%.*s' is not key=value", text, (int)olen, opt);
        if (out->n_opts == SPEC_MAX_OPTS)
            return err_set(e, ERR_USAGE, "cache spec '%s': more than %d options", text, SPEC_MAX_OPTS);
        size_t i = out->n_opts++;
        if (copy_word(out->opt[i].key, sizeof out->opt[i].key, opt, (size_t)(eq - opt), "option key", text, e) < 0 ||
            copy_word(out->opt[i].value, sizeof out->opt[i].value, eq + 1, olen - (size_t)(eq - opt) - 1,
                      "option value", text, e) < 0)
            return -1;
        /* a repeated key would be read once and the copy then reported as unknown */
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->opt[j].key, out->opt[i].key) == 0)
                return err_set(e, ERR_USAGE, "cache spec '%s': option '%s' is given twice", text, out->opt[i].key);
        if (!comma)
            return 0;
        opt = comma + 1;
    }
}

int spec_parse(const char *text, KvSpec *out, Err *e)
{
    memset(out, 0, sizeof *out);
    const char *p = text;
    while (1) {
        const char *plus = strchr(p, '+');
        size_t len = plus ? (size_t)(plus - p) : strlen(p);
        if (out->n_parts == SPEC_MAX_PARTS)
            return err_set(e, ERR_USAGE, "cache spec '%s': more than %d parts joined by '+'", text, SPEC_MAX_PARTS);
        if (parse_part(p, len, &out->part[out->n_parts++], text, e) < 0)
            return -1;
        if (!plus)
            return 0;
        p = plus + 1;
    }
}

static const char *take(KvSpecPart *p, const char *key)
{
    for (size_t i = 0; i < p->n_opts; i++)
        if (strcmp(p->opt[i].key, key) == 0) {
            p->opt[i].taken = 1;
            return p->opt[i].value;
        }
    return NULL;
}

int spec_take_size(KvSpecPart *p, const char *key, size_t *out, Err *e)
{
    const char *v = take(p, key);
    if (!v)
        return 0;
    char what[80];
    snprintf(what, sizeof what, "cache '%s' option %s", p->name, key);
    return parse_size(v, what, out, e);
}

int spec_take_size0(KvSpecPart *p, const char *key, size_t *out, Err *e)
{
    const char *v = take(p, key);
    if (!v)
        return 0;
    char what[80];
    snprintf(what, sizeof what, "cache '%s' option %s", p->name, key);
    return parse_size0(v, what, out, e);
}

int spec_take_double(KvSpecPart *p, const char *key, double lo, double hi, double *out, Err *e)
{
    const char *v = take(p, key);
    if (!v)
        return 0;
    char what[80];
    snprintf(what, sizeof what, "cache '%s' option %s", p->name, key);
    if (parse_double(v, what, out, e) < 0)
        return -1;
    if (*out < lo || *out > hi)
        return err_set(e, ERR_USAGE, "%s: %s is outside [%g, %g]", what, v, lo, hi);
    return 0;
}

KvSpecPart *spec_modifier(KvSpec *s, const char *name)
{
    for (size_t i = 1; i < s->n_parts; i++)
        if (strcmp(s->part[i].name, name) == 0) {
            s->part[i].used = 1;
            return &s->part[i];
        }
    return NULL;
}

int spec_take_format(KvSpecPart *p, const char *key, Format *out, Err *e)
{
    const char *v = take(p, key);
    if (!v)
        return 0;
    Format f;
    if (format_parse(v, &f) < 0)
        return err_set(e, ERR_USAGE, "cache '%s' option %s: unknown format '%s' (formats: %s)", p->name, key, v,
                       format_row_names);
    /* codes without their group's scales mean nothing: only kivi makes them */
    if (format_is_per_channel(f))
        return err_set(e, ERR_USAGE, "cache '%s' option %s: '%s' is a per-channel key code format, stored only "
                       "by the kivi cache (kivi:bits=4 or bits=2); row formats: %s", p->name, key, v, format_row_names);
    *out = f;
    return 0;
}

int spec_check_all_taken(const KvSpecPart *p, const char *accepted, Err *e)
{
    for (size_t i = 0; i < p->n_opts; i++)
        if (!p->opt[i].taken)
            return err_set(e, ERR_USAGE, "cache '%s' has no option '%s' (accepted: %s)", p->name, p->opt[i].key,
                           accepted);
    return 0;
}
