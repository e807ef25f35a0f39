#include "sim/preset.h"

#include <dirent.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "util/files.h"
#include "util/parse.h"

typedef struct {
    Preset *p;
    Err *e;
    int failed;
} Ctx;

static int copy_text(char *dst, size_t cap, const char *key, const char *value, Err *e)
{
    if (strlen(value) >= cap)
        return err_set(e, ERR_USAGE, "preset key %s: '%s' is too long", key, value);
    memcpy(dst, value, strlen(value) + 1);
    return 0;
}

static int on_value(void *user, const char *section, const char *key, const char *value)
{
    Ctx *c = user;
    Preset *p = c->p;
    int rc = 0;
    (void)section;
    if (c->failed)
        return 0;
    if (strcmp(key, "description") == 0)
        rc = copy_text(p->description, sizeof p->description, key, value, c->e);
    else if (strcmp(key, "model") == 0)
        rc = copy_text(p->model, sizeof p->model, key, value, c->e);
    else if (strcmp(key, "cache") == 0)
        rc = copy_text(p->cache, sizeof p->cache, key, value, c->e);
    else if (strcmp(key, "attention") == 0)
        rc = copy_text(p->attention, sizeof p->attention, key, value, c->e);
    else if (strcmp(key, "shared") == 0)
        p->shared = strcmp(value, "1") == 0 || strcmp(value, "true") == 0;
    else if (strcmp(key, "beams") == 0)
        rc = parse_size(value, "preset beams", &p->beams, c->e);
    else if (strcmp(key, "tokens") == 0)
        rc = parse_size(value, "preset tokens", &p->tokens, c->e);
    else if (strcmp(key, "view_tokens") == 0)
        rc = parse_size(value, "preset view_tokens", &p->view_tokens, c->e);
    else if (strcmp(key, "prompt_len") == 0)
        rc = parse_size(value, "preset prompt_len", &p->prompt_len, c->e);
    else
        rc = err_set(c->e, ERR_USAGE, "unknown preset key '%s'", key);
    if (rc < 0) {
        c->failed = 1;
        return 0;
    }
    return 1;
}

void preset_list(char *buf, size_t cap)
{
    char dir[PATH_MAX];
    buf[0] = '\0';
    if (config_data_path("presets", dir, sizeof dir) == 0)
        files_list(dir, ".ini", buf, cap);
}

int preset_scan(int argc, char **argv, Preset *p, Err *e)
{
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--preset") == 0 && i + 1 < argc)
            name = argv[i + 1];
        else if (strncmp(argv[i], "--preset=", 9) == 0)
            name = argv[i] + 9;
    }
    if (!name)
        return 0;
    memset(p, 0, sizeof *p);
    char rel[96], path[PATH_MAX], list[256];
    if (strlen(name) >= sizeof p->name || strchr(name, '/'))
        return err_set(e, ERR_USAGE, "unknown preset '%.40s'", name);
    snprintf(rel, sizeof rel, "presets/%s.ini", name);
    if (config_data_path(rel, path, sizeof path) < 0) {
        preset_list(list, sizeof list);
        return err_set(e, ERR_USAGE, "unknown preset '%s' (presets: %s)", name, list[0] ? list : "none found");
    }
    snprintf(p->name, sizeof p->name, "%s", name);
    Ctx c = { p, e, 0 };
    int line = ini_parse(path, on_value, &c);
    if (c.failed)
        return err_wrap(e, "preset %s line %d", name, line);
    if (line != 0)
        return err_set(e, ERR_USAGE, "preset %s: cannot read line %d", name, line);
    return 1;
}
