/* preset.h: the source documents' systems by name (data/presets/NAME.ini).
 *
 * A preset is a bundle of defaults: a model, a cache, an attention form and
 * a workload. `--preset NAME` applies them first; any option given on the
 * command line, before or after it, wins. */
#ifndef KVSCOPE_SIM_PRESET_H
#define KVSCOPE_SIM_PRESET_H

#include <stddef.h>

#include "util/err.h"

typedef struct {
    char name[32];
    char description[256];
    char model[64];
    char cache[128];
    char attention[16]; /* "" = the command's default */
    int shared;         /* one set of layer weights for all layers */
    size_t beams, tokens, prompt_len; /* 0 = the command's default */
    size_t view_tokens; /* the view's workload when it differs from run's (0 = tokens): a step
                           the view shows costs seconds on a real shape, uncached runs far more */
} Preset;

/* Find `--preset NAME` (or --preset=NAME) in argv and load it into *p.
 * Returns 1 when loaded, 0 when argv names no preset, -1 on error
 * (ERR_USAGE for an unknown name, listing the presets). */
int preset_scan(int argc, char **argv, Preset *p, Err *e);

/* The names of the presets, comma-separated, into buf. */
void preset_list(char *buf, size_t cap);

#endif
