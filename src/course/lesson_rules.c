/* lesson_rules.c: the checks that could hardly fail, and the figures a
 * tolerance hides (lesson_rules.h). */
#include "course/lesson_rules.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "course/lesson_exec.h"
#include "course/lesson_value.h"

#define RULE_MAX_WORDS 64

/* Subcommands that run the engine on a configuration. */
static const char *const engine_cmds[] = { "run", "calc", "bench", "eval", "example", "dump",
                                           "serve", "train", "tokenize", NULL };
/* Options that make a command print something other than a computation. */
static const char *const info_opts[] = { "--help", "-h", "--list", "--version", NULL };

static int in_list(const char *w, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(w, list[i]) == 0)
            return 1;
    return 0;
}

/* The words of ck->run, split in buf; the count, or -1 when malformed. */
static int split_run(const CheckSpec *ck, char *buf, size_t cap, char **argv)
{
    snprintf(buf, cap, "%s", ck->run);
    Err e = { 0 };
    return exec_split(buf, argv, RULE_MAX_WORDS, &e);
}

/* Does the command line name `field` as an option (--field, --field=...)
 * or a --set key (--set field=...)? Underscores and dashes are the same. */
static int names_input(int argc, char **argv, const char *field)
{
    char opt[96];
    size_t n = 0;
    for (const char *p = field; *p && n + 1 < sizeof opt; p++)
        opt[n++] = *p == '_' ? '-' : *p;
    opt[n] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (w[0] == '-' && w[1] == '-') {
            size_t len = strcspn(w + 2, "=");
            if (len == n && strncmp(w + 2, opt, n) == 0)
                return 1;
        }
        if (strcmp(w, "--set") == 0 && i + 1 < argc) {
            const char *kv = argv[i + 1];
            size_t len = strcspn(kv, "=");
            if (len == strlen(field) && strncmp(kv, field, len) == 0)
                return 1;
        }
    }
    return 0;
}

/* Is this first step of a path an echo of the input? */
static int echo_root(const char *root, size_t len, int single, int argc, char **argv)
{
    /* the configuration printed back, or rearranged: calc's row shapes are
     * head_dim and the latent's widths, its cached_positions min(context,
     * window) */
    static const char *const echo_roots[] = { "model", "config", "shape", "reference_shape", "cached_positions",
                                              NULL };
    for (size_t i = 0; echo_roots[i]; i++)
        if (len == strlen(echo_roots[i]) && strncmp(root, echo_roots[i], len) == 0)
            return 1;
    if (!single)
        return 0;
    char name[96];
    if (len >= sizeof name)
        return 0;
    memcpy(name, root, len);
    name[len] = '\0';
    return names_input(argc, argv, name);
}

/* Walk the value expression: count its paths, and those that echo the
 * input. Numbers, operators, function names and [selectors] are skipped. */
static void scan_paths(const char *expr, int argc, char **argv, size_t *n_paths, size_t *n_echo)
{
    *n_paths = *n_echo = 0;
    const char *p = expr;
    while (*p) {
        if (*p == '[') { /* a selector: its words are keys and values, not paths */
            int depth = 0;
            do {
                depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
                p++;
            } while (*p && depth > 0);
            continue;
        }
        if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
            while (isdigit((unsigned char)*p) || *p == '.')
                p++;
            if ((*p == 'e' || *p == 'E') &&
                (isdigit((unsigned char)p[1]) || ((p[1] == '-' || p[1] == '+') && isdigit((unsigned char)p[2])))) {
                p += 2;
                while (isdigit((unsigned char)*p))
                    p++;
            }
            continue;
        }
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *root = p;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            size_t len = (size_t)(p - root);
            const char *q = p;
            while (*q == ' ')
                q++;
            if (*q == '(') /* sum( max( ...: a function, its argument is scanned next */
                continue;
            int single = *p != '.' && *p != '[';
            (*n_paths)++;
            if (echo_root(root, len, single, argc, argv))
                (*n_echo)++;
            /* the rest of this path: .steps and [selectors] */
            while (*p == '.' || *p == '[' || isalnum((unsigned char)*p) || *p == '_') {
                if (*p == '[') {
                    int depth = 0;
                    do {
                        depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
                        p++;
                    } while (*p && depth > 0);
                } else {
                    p++;
                }
            }
            continue;
        }
        p++;
    }
}

int rule_check_static(const CheckSpec *ck, char *why, size_t cap)
{
    char buf[2048];
    char *argv[RULE_MAX_WORDS];
    int argc = split_run(ck, buf, sizeof buf, argv);
    if (argc < 2 || strcmp(argv[0], "kvscope") != 0 || !in_list(argv[1], engine_cmds)) {
        snprintf(why, cap, "its command runs no engine computation (`kvscope %s`): a check runs one of run, calc, "
                 "bench, eval, example, dump, serve, train, tokenize", argc >= 2 ? argv[1] : "");
        return 1;
    }
    for (int i = 2; i < argc; i++)
        if (in_list(argv[i], info_opts)) {
            snprintf(why, cap, "its command asks for %s, not for a computation", argv[i]);
            return 1;
        }
    size_t n_paths, n_echo;
    scan_paths(ck->value, argc, argv, &n_paths, &n_echo);
    if (n_paths == 0) {
        snprintf(why, cap, "its value '%s' reads nothing from the command's output: it is arithmetic on constants, "
                 "which no engine computed", ck->value);
        return 1;
    }
    if (n_echo == n_paths) {
        snprintf(why, cap, "its value '%s' only reads back the input (the model's configuration, or an option the "
                 "command was given): check what the engine computes from it", ck->value);
        return 1;
    }
    return 0;
}

/* Does expr name `key` as a word (a path step or a selector's field)?
 * Dashes in key match underscores. */
static int expr_names(const char *expr, const char *key, size_t klen)
{
    for (const char *p = expr; *p; p++) {
        if (p > expr && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        size_t i = 0;
        while (i < klen && p[i] && (p[i] == key[i] || (key[i] == '-' && p[i] == '_')))
            i++;
        if (i == klen && !isalnum((unsigned char)p[i]) && p[i] != '_')
            return 1;
    }
    return 0;
}

/* The numbers an option's value word states, each with the key it is
 * given to: "8" (the option's own name), "paged:page=16", "window=8,sinks=2",
 * "sliding_window=6" (after --set). Parts of names (llama-3-8b) are not
 * numbers. Returns 1 and names the key in *key when one equals v and expr
 * reads a field of that name. */
static int echoed_number(const char *opt, const char *word, const char *expr, double v, char *key, size_t cap)
{
    char buf[512], *save = NULL;
    snprintf(buf, sizeof buf, "%s", word);
    for (char *tok = strtok_r(buf, ",:;+", &save); tok; tok = strtok_r(NULL, ",:;+", &save)) {
        const char *k = opt, *num = tok;
        size_t klen = strlen(opt);
        char *eq = strchr(tok, '=');
        if (eq) {
            k = tok, klen = (size_t)(eq - tok), num = eq + 1;
        }
        char *end;
        double x = strtod(num, &end);
        if (end == num || *end != '\0' || fabs(x - v) > 1e-9 * fabs(v))
            continue;
        if (klen && expr_names(expr, k, klen)) {
            snprintf(key, cap, "%.*s", (int)klen, k);
            return 1;
        }
    }
    return 0;
}

int rule_value_is_input(const CheckSpec *ck, double actual, char *why, size_t cap)
{
    LvFigure fig;
    Err e = { 0 };
    if (lv_parse_figure(ck->expect, &fig, &e) < 0 || fig.is_bool)
        return 0;
    char buf[2048];
    char *argv[RULE_MAX_WORDS];
    int argc = split_run(ck, buf, sizeof buf, argv);
    for (int i = 2; i + 1 < argc; i++) {
        const char *w = argv[i];
        if (w[0] != '-' || w[1] != '-')
            continue;
        char opt[96], key[96];
        snprintf(opt, sizeof opt, "%s", w + 2);
        const char *val = argv[i + 1];
        char *eq = strchr(opt, '=');
        if (eq) { /* --opt=value */
            *eq = '\0';
            val = w + 2 + (eq - opt) + 1;
        }
        if (strcmp(opt, "model") == 0 || strcmp(opt, "prompt") == 0)
            continue; /* a name, and token ids */
        if (echoed_number(strcmp(opt, "set") == 0 ? "" : opt, val, ck->value, actual, key, sizeof key)) {
            snprintf(why, cap, "its value %s is the %s its own command sets (`%s %s`), read back: the check would "
                     "pass whatever the engine did", ck->expect, key, w, eq ? "" : val);
            return 1;
        }
    }
    return 0;
}

int rule_rounds_as_written(const CheckSpec *ck, double actual, char *why, size_t cap)
{
    if (!ck->tol || !*ck->tol || (ck->measured && *ck->measured))
        return 0;
    LvFigure fig;
    Err e = { 0 };
    if (lv_parse_figure(ck->expect, &fig, &e) < 0 || fig.is_bool)
        return 0;
    if (lv_matches(actual, &fig, NULL))
        return 0;
    char shown[64];
    lv_format(shown, sizeof shown, actual, lv_decimals(ck->expect));
    if (strcmp(shown, ck->expect) == 0) /* same text at this precision: a float's last bits */
        return 0;
    snprintf(why, cap, "the prose says %s, but the engine gives %s at that precision (its tol %s lets the check "
             "pass, not the text): write %s, or fewer digits", ck->expect, shown, ck->tol, shown);
    return 1;
}

/* The expression with its spaces removed. */
static void squeeze(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (; *in && n + 1 < cap; in++)
        if (!isspace((unsigned char)*in))
            out[n++] = *in;
    out[n] = '\0';
}

int rule_halves_another(const CheckSpec *ck, const CheckSpec *other, char *why, size_t cap)
{
    if (ck == other || strcmp(ck->run, other->run) != 0)
        return 0;
    char a[1024], b[1024], forms[4][1100];
    squeeze(ck->value, a, sizeof a);
    squeeze(other->value, b, sizeof b);
    snprintf(forms[0], sizeof forms[0], "%s/2", b);
    snprintf(forms[1], sizeof forms[1], "%s*2", b);
    snprintf(forms[2], sizeof forms[2], "2*%s", b);
    snprintf(forms[3], sizeof forms[3], "(%s)/2", b);
    for (int i = 0; i < 4; i++)
        if (strcmp(a, forms[i]) == 0) {
            snprintf(why, cap, "its value '%s' is check %s's value %s: it passes whenever that one does, and "
                     "checks nothing of its own; compare with an independent computation", ck->value, other->id,
                     i == 1 || i == 2 ? "doubled" : "halved");
            return 1;
        }
    return 0;
}

/* Does expr read exactly one path, with nothing else (no arithmetic, no
 * function)? */
static int bare_path(const char *expr)
{
    char e[1024];
    squeeze(expr, e, sizeof e);
    int depth = 0;
    for (const char *p = e; *p; p++) {
        depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
        if (depth == 0 && strchr("+-*/()", *p))
            return 0;
    }
    return isalpha((unsigned char)e[0]) || e[0] == '_';
}

/* Is expr a per-unit conversion of one quantity into another, P * Q / R
 * (bytes reserved times positions over bytes used: positions reserved)? */
static int ratio_of_paths(const char *expr)
{
    char e[1024];
    squeeze(expr, e, sizeof e);
    int depth = 0, times = 0, over = 0;
    for (const char *p = e; *p; p++) {
        depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
        if (depth)
            continue;
        if (*p == '+' || *p == '-' || *p == '(' || isdigit((unsigned char)*p) ||
            (*p == '.' && isdigit((unsigned char)p[1])))
            if (p == e || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.'))
                return 0; /* a sum, a grouping or a constant: a computation of the check's own */
        times += *p == '*';
        over += *p == '/';
    }
    return times == 1 && over == 1;
}

static int same(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b);
}

int rule_reads_back(const CheckSpec *ck, double actual, const RuleConfigValue *cfg, size_t n_cfg, char *why,
                    size_t cap)
{
    LvFigure fig;
    Err e = { 0 };
    if (lv_parse_figure(ck->expect, &fig, &e) < 0 || fig.is_bool)
        return 0;
    if (actual == floor(actual) && fabs(actual) < 10)
        return 0; /* a single-digit count is a definition, not a figure: it meets small inputs by chance */
    const int bare = bare_path(ck->value), ratio = !bare && ratio_of_paths(ck->value);
    if (!bare && !ratio)
        return 0;
    char names[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n_cfg && used < sizeof names; i++)
        if (same(actual, cfg[i].value))
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? " = " : "", cfg[i].name);
    if (used) {
        snprintf(why, cap, "its value %s is the model's %s (%g), %s: the check would pass whatever the engine "
                 "computed; compare with an independent computation", ck->expect, names, actual,
                 bare ? "read back" : "read back through a ratio that cancels to it");
        return 1;
    }
    if (!bare)
        return 0;
    /* numbers of the command line: one of them, or one over another (positions over a page) */
    char buf[2048];
    char *argv[RULE_MAX_WORDS];
    int argc = split_run(ck, buf, sizeof buf, argv);
    double nums[RULE_MAX_WORDS * 4];
    size_t n = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--model") == 0 || strcmp(argv[i], "--prompt") == 0 || strcmp(argv[i], "--format") == 0) {
            i++;
            continue;
        }
        char w[512], *save = NULL;
        snprintf(w, sizeof w, "%s", argv[i]);
        for (char *tok = strtok_r(w, ",:;+=", &save); tok && n < sizeof nums / sizeof nums[0];
             tok = strtok_r(NULL, ",:;+=", &save)) {
            char *end;
            double x = strtod(tok, &end);
            if (end != tok && *end == '\0' && x > 1)
                nums[n++] = x;
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (i != j && nums[j] != nums[i] && same(actual * nums[j], nums[i])) {
                snprintf(why, cap, "its value %s is %g / %g, two numbers of its own command line, read back: the "
                         "check would pass whatever the engine computed; compare with an independent computation",
                         ck->expect, nums[i], nums[j]);
                return 1;
            }
    return 0;
}
