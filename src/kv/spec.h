/* spec.h: cache spec strings, "name" or "name:key=value,key=value".
 *
 * A parsed spec remembers which options a cache took, so that the cache can
 * reject the ones it did not understand by name. */
#ifndef KVSCOPE_KV_SPEC_H
#define KVSCOPE_KV_SPEC_H

#include <stddef.h>

#include "util/err.h"

#define SPEC_MAX_OPTS 8

typedef struct {
    char name[32];
    size_t n_opts;
    struct {
        char key[32];
        char value[64];
        int taken;
    } opt[SPEC_MAX_OPTS];
} KvSpec;

int spec_parse(const char *text, KvSpec *out, Err *e);

/* Take option `key` as a whole number >= 1; *out keeps its value (the
 * default) when the option is absent. */
int spec_take_size(KvSpec *s, const char *key, size_t *out, Err *e);

/* Fail naming the first option no cache took, and what `accepted` lists. */
int spec_check_all_taken(const KvSpec *s, const char *accepted, Err *e);

#endif
