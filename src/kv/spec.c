#include "kv/spec.h"

#include <stdio.h>
#include <string.h>

#include "util/parse.h"

static int copy_part(char *dst, size_t cap, const char *src, size_t len, const char *what,
                     const char *text, Err *e)
{
    if (len == 0)
        return err_set(e, ERR_USAGE, "cache spec '%s': empty %s", text, what);
    if (len >= cap)
        return err_set(e, ERR_USAGE, "cache spec '%s': %s '%.*s' is too long", text, what, (int)len, src);
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

int spec_parse(const char *text, KvSpec *out, Err *e)
{
    memset(out, 0, sizeof *out);
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    if (copy_part(out->name, sizeof out->name, text, name_len, "cache name", text, e) < 0)
        return -1;
    if (!colon)
        return 0;
    const char *p = colon + 1;
    while (1) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return err_set(e, ERR_USAGE, "cache spec '%s': option '%.*s' is not key=value", text, (int)len, p);
        if (out->n_opts == SPEC_MAX_OPTS)
            return err_set(e, ERR_USAGE, "cache spec '%s': more than %d options", text, SPEC_MAX_OPTS);
        size_t i = out->n_opts++;
        if (copy_part(out->opt[i].key, sizeof out->opt[i].key, p, (size_t)(eq - p), "option key", text, e) < 0 ||
            copy_part(out->opt[i].value, sizeof out->opt[i].value, eq + 1, len - (size_t)(eq - p) - 1,
                      "option value", text, e) < 0)
            return -1;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

int spec_take_size(KvSpec *s, const char *key, size_t *out, Err *e)
{
    for (size_t i = 0; i < s->n_opts; i++) {
        if (strcmp(s->opt[i].key, key) != 0)
            continue;
        s->opt[i].taken = 1;
        char what[80];
        snprintf(what, sizeof what, "cache '%s' option %s", s->name, key);
        return parse_size(s->opt[i].value, what, out, e);
    }
    return 0;
}

int spec_check_all_taken(const KvSpec *s, const char *accepted, Err *e)
{
    for (size_t i = 0; i < s->n_opts; i++)
        if (!s->opt[i].taken)
            return err_set(e, ERR_USAGE, "cache '%s' has no option '%s' (accepted: %s)", s->name,
                           s->opt[i].key, accepted);
    return 0;
}
