/* bugs.c: names of the pitfalls a run can commit on purpose (see Bug). */
#include <string.h>

#include "model/model.h"

static const struct {
    Bug bug;
    const char *name;
} bugs[] = {
    { BUG_ROPE_POSITION, "rope-position" },
    { BUG_MASK_IN_DECODE, "mask-in-decode" },
    { BUG_ROPE_ON_V, "rope-on-v" },
    { BUG_IGNORE_APPEND, "ignore-append" },
};

const char bug_names[] = "rope-position, mask-in-decode, rope-on-v, ignore-append";

int bug_parse(const char *name, Bug *out)
{
    for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++)
        if (strcmp(name, bugs[i].name) == 0) {
            *out = bugs[i].bug;
            return 0;
        }
    return -1;
}

const char *bug_name(Bug b)
{
    for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++)
        if (bugs[i].bug == b)
            return bugs[i].name;
    return "?";
}
