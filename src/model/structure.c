/* structure.c: parse, place and describe attention structure (structure.h). */
#include "model/structure.h"

#include <stdio.h>
#include <string.h>

#include "util/parse.h"

const char structure_help[] =
    "  --structure LIST    attention structure, biases on the scores (default none):\n"
    "                        sink[=4]          position 0 draws attention (a sink)\n"
    "                        local[=0.05]      minus this per position of distance\n"
    "                        heavy[=3], heavy_bias=3   heavy hitters spread over the prompt\n"
    "                        retrieval[=8], needle=1   the last prompt token asks for the needle\n";

static void structure_defaults(Structure *s)
{
    memset(s, 0, sizeof *s);
    s->sink_bias = 4.0, s->local_slope = 0.05, s->heavy_bias = 3.0, s->retrieval_bias = 8.0;
    s->n_heavy = 3, s->needle = 1;
}

/* One "name[=value]" item; value is NULL when absent. */
static int take_item(Structure *s, const char *name, const char *value, int *needle_set, Err *e)
{
    const struct {
        const char *name;
        double *bias; /* the item's number, when it is a bias or a slope */
        int *on;      /* the pattern it turns on, if any */
    } biases[] = {
        { "sink", &s->sink_bias, &s->sink },
        { "local", &s->local_slope, &s->local },
        { "retrieval", &s->retrieval_bias, &s->retrieval },
        { "heavy_bias", &s->heavy_bias, NULL },
    };
    char what[64];
    snprintf(what, sizeof what, "--structure %s", name);
    for (size_t i = 0; i < sizeof biases / sizeof biases[0]; i++) {
        if (strcmp(name, biases[i].name) != 0)
            continue;
        if (!value && !biases[i].on)
            return err_set(e, ERR_USAGE, "--structure: %s needs a value (%s=3)", name, name);
        if (value && parse_double(value, what, biases[i].bias, e) < 0)
            return -1;
        if (*biases[i].bias < 0 || *biases[i].bias > 100)
            return err_set(e, ERR_USAGE, "--structure: %s=%s is outside 0..100", name, value);
        if (biases[i].on)
            *biases[i].on = 1;
        return 0;
    }
    if (strcmp(name, "heavy") == 0) {
        if (value && parse_size(value, what, &s->n_heavy, e) < 0)
            return -1;
        if (s->n_heavy > STRUCTURE_MAX_HEAVY)
            return err_set(e, ERR_USAGE, "--structure: heavy=%zu is more than %d heavy hitters", s->n_heavy,
                           STRUCTURE_MAX_HEAVY);
        s->heavy = 1;
        return 0;
    }
    if (strcmp(name, "needle") == 0) {
        if (!value)
            return err_set(e, ERR_USAGE, "--structure: needle needs a position (needle=1)");
        *needle_set = 1;
        return parse_size0(value, what, &s->needle, e);
    }
    return err_set(e, ERR_USAGE, "--structure: unknown item '%s' (sink, local, heavy, heavy_bias, retrieval, needle)",
                   name);
}

int structure_parse(const char *text, Structure *s, Err *e)
{
    structure_defaults(s);
    if (strcmp(text, "none") == 0 || text[0] == '\0')
        return 0;
    char buf[256];
    if (strlen(text) >= sizeof buf)
        return err_set(e, ERR_USAGE, "--structure: the list is longer than %zu characters", sizeof buf - 1);
    strcpy(buf, text);
    int needle_set = 0;
    for (char *item = buf, *next; item; item = next) {
        next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        char *value = strchr(item, '=');
        if (value)
            *value++ = '\0';
        if (item[0] == '\0')
            return err_set(e, ERR_USAGE, "--structure: empty item in '%s'", text);
        if (take_item(s, item, value, &needle_set, e) < 0)
            return -1;
    }
    if (needle_set && !s->retrieval)
        return err_set(e, ERR_USAGE, "--structure: needle= places a retrieval: add 'retrieval'");
    return 0;
}

int structure_on(const Structure *s)
{
    return s->sink || s->local || s->heavy || s->retrieval;
}

int structure_place(Structure *s, size_t prompt_len, Err *e)
{
    s->bias = (AttnBias){ .sink = s->sink ? (float)s->sink_bias : 0.0f,
                          .local = s->local ? (float)s->local_slope : 0.0f,
                          .needle = (size_t)-1, .ask = (size_t)-1 };
    if (s->retrieval) {
        if (s->needle + 1 >= prompt_len)
            return err_set(e, ERR_USAGE,
                           "--structure: the needle at position %zu must come before the question, the prompt's "
                           "last token (position %zu)", s->needle, prompt_len ? prompt_len - 1 : 0);
        s->bias.retrieval = (float)s->retrieval_bias;
        s->bias.needle = s->needle;
        s->bias.ask = prompt_len - 1;
    }
    if (s->heavy) {
        if (s->n_heavy + 1 > prompt_len)
            return err_set(e, ERR_USAGE, "--structure: %zu heavy hitters need a prompt of at least %zu tokens",
                           s->n_heavy, s->n_heavy + 1);
        for (size_t i = 0; i < s->n_heavy; i++) /* evenly spread, never position 0 */
            s->heavy_pos[i] = (i + 1) * prompt_len / (s->n_heavy + 1);
        s->bias.heavy = (float)s->heavy_bias;
        s->bias.heavy_pos = s->heavy_pos;
        s->bias.n_heavy = s->n_heavy;
    }
    return 0;
}

const char *structure_describe(const Structure *s, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
#define SAY(...) used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, __VA_ARGS__)
    if (s->sink)
        SAY("%ssink +%g on position 0", used ? "; " : "", s->sink_bias);
    if (s->local)
        SAY("%slocality -%g per position", used ? "; " : "", s->local_slope);
    if (s->heavy) {
        SAY("%sheavy hitters +%g at", used ? "; " : "", s->heavy_bias);
        for (size_t i = 0; i < s->bias.n_heavy; i++)
            SAY("%s%zu", i ? "," : " ", s->heavy_pos[i]);
        if (!s->bias.n_heavy)
            SAY(" %zu positions", s->n_heavy);
    }
    if (s->retrieval) {
        SAY("%sretrieval +%g to the needle at %zu", used ? "; " : "", s->retrieval_bias, s->needle);
        if (s->bias.ask != (size_t)-1)
            SAY(" from the question at %zu on", s->bias.ask);
    }
#undef SAY
    if (!used)
        snprintf(buf, cap, "none");
    return buf;
}
