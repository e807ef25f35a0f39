#include "ui/keys.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int key;
} named[] = {
    { "space", ' ' },      { "left", VK_LEFT }, { "right", VK_RIGHT }, { "up", VK_UP },     { "down", VK_DOWN },
    { "tab", VK_TAB },     { "btab", VK_BTAB }, { "enter", VK_ENTER }, { "esc", VK_ESC },   { "f1", VK_F1 },
    { "c-c", VK_CTRL_C },  { "pgup", VK_PGUP }, { "pgdn", VK_PGDN },   { "home", VK_HOME }, { "end", VK_END },
    { "tick", VK_TICK },   { "lt", '<' },       { "bs", VK_BACKSPACE }, { "c-u", VK_CTRL_U },
};

static int push(ScriptKey **keys, size_t *n, size_t *cap, ScriptKey k, Err *e)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        ScriptKey *grown = realloc(*keys, ncap * sizeof *grown);
        if (!grown)
            return err_set(e, ERR_RUNTIME, "out of memory for the key script");
        *keys = grown;
        *cap = ncap;
    }
    (*keys)[(*n)++] = k;
    return 0;
}

/* One <name> (without the brackets) into keys. */
static int parse_named(const char *name, ScriptKey **keys, size_t *n, size_t *cap, Err *e)
{
    int w, h, used = 0;
    if (sscanf(name, "resize:%dx%d%n", &w, &h, &used) == 2 && name[used] == '\0') {
        if (w < 1 || h < 1 || w > 1000 || h > 1000)
            return err_set(e, ERR_USAGE, "--keys: <%s>: sizes run from 1x1 to 1000x1000", name);
        return push(keys, n, cap, (ScriptKey){ VK_RESIZE, w, h }, e);
    }
    int count;
    if (sscanf(name, "tick:%d%n", &count, &used) == 1 && name[used] == '\0') {
        if (count < 1 || count > 100000)
            return err_set(e, ERR_USAGE, "--keys: <%s>: a tick count runs from 1 to 100000", name);
        for (int i = 0; i < count; i++)
            if (push(keys, n, cap, (ScriptKey){ VK_TICK, 0, 0 }, e) < 0)
                return -1;
        return 0;
    }
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(name, named[i].name) == 0)
            return push(keys, n, cap, (ScriptKey){ named[i].key, 0, 0 }, e);
    return err_set(e, ERR_USAGE,
                   "--keys: unknown key <%s> (named keys: space left right up down tab btab enter esc f1 c-c "
                   "pgup pgdn home end bs c-u tick tick:N resize:WxH lt)",
                   name);
}

int keys_parse_script(const char *script, ScriptKey **out, size_t *n, Err *e)
{
    ScriptKey *keys = NULL;
    size_t cap = 0;
    *n = 0;
    for (const char *p = script; *p;) {
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        if (*p == '<') {
            const char *close = strchr(p, '>');
            char name[64];
            size_t len = close ? (size_t)(close - p - 1) : 0;
            if (!close || len == 0 || len >= sizeof name) {
                free(keys);
                return err_set(e, ERR_USAGE, "--keys: '<' opens no <name> at \"%.20s\" (a '<' key is <lt>)", p);
            }
            memcpy(name, p + 1, len);
            name[len] = '\0';
            if (parse_named(name, &keys, n, &cap, e) < 0) {
                free(keys);
                return -1;
            }
            p = close + 1;
            continue;
        }
        if ((unsigned char)*p >= 0x80) {
            free(keys);
            return err_set(e, ERR_USAGE, "--keys: only ASCII keys and <names> are accepted");
        }
        if (push(&keys, n, &cap, (ScriptKey){ (unsigned char)*p, 0, 0 }, e) < 0) {
            free(keys);
            return -1;
        }
        p++;
    }
    *out = keys;
    return 0;
}

const char *keys_name(int key, char *buf, size_t cap)
{
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (named[i].key == key) {
            snprintf(buf, cap, "<%s>", named[i].name);
            return buf;
        }
    if (key == VK_RESIZE)
        snprintf(buf, cap, "<resize>");
    else if (key > 32 && key < 127)
        snprintf(buf, cap, "%c", key);
    else
        snprintf(buf, cap, "<%d>", key);
    return buf;
}
