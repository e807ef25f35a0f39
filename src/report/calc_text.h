/* calc_text.h: how `kvscope calc` writes its pieces, shared by the report
 * (calc_report.c) and the model list (calc_list.c): numbers with thousands
 * separators, byte counts for people, the formula behind a token's bytes,
 * and, for json, sizes and the config. */
#ifndef KVSCOPE_REPORT_CALC_TEXT_H
#define KVSCOPE_REPORT_CALC_TEXT_H

#include <jansson.h>
#include <stddef.h>

#include "kernels/format.h"
#include "model/config.h"
#include "model/memory.h"
#include "util/err.h"

/* Text short enough to return by value, so that several can sit in one
 * printf: calc_num(x).s lives until the end of the full expression. */
typedef struct {
    char s[32];
} CalcText;

/* v with thousands separators: "163,840". */
CalcText calc_num(size_t v);

/* A byte count for people: "4.75 GiB" (human_bytes). */
CalcText calc_human(size_t bytes);

/* Into buf (cap bytes): the product behind one token's bytes of shape s in
 * format f, per layer (layers = 0) or over `layers` layers, with the
 * config's numbers substituted, e.g. "2 (K,V) x 32 KV heads x 128 head_dim
 * x 2 bytes". */
void calc_shape_formula(char *buf, size_t cap, const Config *c, const KvShape *s, Format f, size_t layers);

/* v as an exact JSON integer. jansson's integers are signed 64-bit, so a v
 * beyond INT64_MAX is held as a marked string that calc_json_print turns
 * back into the integer's digits: only JSON printed by calc_json_print may
 * hold one. */
json_t *calc_json_size(size_t v);

/* The config's shape as a JSON object (the MLA dimensions only for MLA). */
json_t *calc_json_config(const Config *c);

/* Print v indented, in insertion order, then a newline; takes v's reference
 * (a NULL v fails). Fails (ERR_RUNTIME, nothing printed) when out of memory. */
int calc_json_print(json_t *v, Err *e);

#endif
