/* spec.h: cache spec strings.
 *
 *   spec     = part ("+" part)*
 *   part     = name [":" key "=" value ("," key "=" value)*]
 *
 * The first part names the layout ("contiguous", "dynamic"); each further
 * part a modifier ("quant:k=q8_0,v=q4_0"). A parsed part remembers which
 * options were taken, so the one who reads it can reject the others by name. */
#ifndef KVSCOPE_KV_SPEC_H
#define KVSCOPE_KV_SPEC_H

#include <stddef.h>

#include "kernels/format.h"
#include "util/err.h"

#define SPEC_MAX_OPTS 8
#define SPEC_MAX_PARTS 4

typedef struct {
    char name[32];
    size_t n_opts;
    struct {
        char key[32];
        char value[64];
        int taken;
    } opt[SPEC_MAX_OPTS];
    int used; /* a modifier someone applied */
} KvSpecPart;

typedef struct {
    KvSpecPart part[SPEC_MAX_PARTS];
    size_t n_parts;
} KvSpec;

int spec_parse(const char *text, KvSpec *out, Err *e);

/* Take option `key` of part p as a whole number >= 1; *out keeps its value
 * (the default) when the option is absent. */
int spec_take_size(KvSpecPart *p, const char *key, size_t *out, Err *e);
/* The same for a whole number >= 0 (a count that may be none: sinks, keep). */
int spec_take_size0(KvSpecPart *p, const char *key, size_t *out, Err *e);

/* Take option `key` as a real number in [lo, hi]. */
int spec_take_double(KvSpecPart *p, const char *key, double lo, double hi, double *out, Err *e);

/* The modifier part named `name` (marked used), or NULL. */
KvSpecPart *spec_modifier(KvSpec *s, const char *name);

/* Take option `key` as the name of a row format (f32, f16, q8_0, ...); a
 * per-channel code format (u4, u2) is refused, naming the kivi cache. */
int spec_take_format(KvSpecPart *p, const char *key, Format *out, Err *e);

/* Fail naming the first option of p nobody took, and what `accepted` lists. */
int spec_check_all_taken(const KvSpecPart *p, const char *accepted, Err *e);

#endif
