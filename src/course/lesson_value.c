/* lesson_value.c: the expressions of check blocks and quizzes (see
 * lesson_value.h for the grammar). A small recursive-descent evaluator: a
 * path yields a list of JSON nodes; functions fold the list; arithmetic is
 * on doubles. */
#include "course/lesson_value.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- output ------------------------------------------------------------- */

/* One TSV line into an array of cells (tabs separate; the line is edited). */
static size_t split_tabs(char *line, char **cells, size_t cap)
{
    size_t n = 0;
    char *p = line;
    while (n < cap) {
        cells[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

json_t *lv_parse_output(const char *text, Err *e)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_DECODE_ANY, &je);
    if (root && json_is_object(root))
        return root;
    json_decref(root);

    /* TSV: a header row of names, then rows of the same width */
    char *copy = strdup(text);
    if (!copy) {
        err_set(e, ERR_RUNTIME, "out of memory");
        return NULL;
    }
    json_t *rows = json_array();
    char *names[64], *cells[64];
    size_t n_names = 0, line_no = 0;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[len - 1] = '\0';
        if (!*line)
            continue;
        line_no++;
        if (line_no == 1) {
            n_names = split_tabs(line, names, 64);
            if (n_names < 2)
                break;
            continue;
        }
        size_t n = split_tabs(line, cells, 64);
        if (n != n_names) {
            n_names = 0; /* not a table */
            break;
        }
        json_t *row = json_object();
        for (size_t i = 0; i < n; i++)
            json_object_set_new(row, names[i], json_string(cells[i]));
        json_array_append_new(rows, row);
    }
    if (n_names < 2 || json_array_size(rows) == 0) {
        free(copy);
        json_decref(rows);
        err_set(e, ERR_RUNTIME, "the command printed neither JSON nor a TSV table (give it --format json or tsv)");
        return NULL;
    }
    free(copy);
    root = json_object();
    json_object_set_new(root, "rows", rows);
    return root;
}

/* --- evaluation ---------------------------------------------------------- */

typedef struct {
    const char *s;      /* the whole expression, for messages */
    const char *p;      /* where we are */
    const json_t *root; /* NULL: check the syntax only */
    Err *e;
} Parser;

#define MAX_NODES 4096

typedef struct {
    const json_t *node[MAX_NODES];
    size_t n;
} NodeList;

static void skip_ws(Parser *ps)
{
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

static int fail(Parser *ps, ErrKind kind, const char *what)
{
    return err_set(ps->e, kind, "value '%s': %s (at '%.20s')", ps->s, what, *ps->p ? ps->p : "the end");
}

static int is_name_start(int c)
{
    return isalpha(c) || c == '_';
}
static int is_name_char(int c)
{
    return isalnum(c) || c == '_';
}

/* A JSON node as a number: numbers, booleans, numeric strings. */
static int node_number(const json_t *n, double *out)
{
    if (json_is_integer(n)) {
        *out = (double)json_integer_value(n);
        return 0;
    }
    if (json_is_real(n)) {
        *out = json_real_value(n);
        return 0;
    }
    if (json_is_boolean(n)) {
        *out = json_is_true(n) ? 1 : 0;
        return 0;
    }
    if (json_is_string(n)) {
        const char *s = json_string_value(n);
        char *end;
        double v = strtod(s, &end);
        if (end != s && *end == '\0') {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Does field `key` of object n equal `want` (as text, or as a number)? */
static int field_matches(const json_t *n, const char *key, const char *want)
{
    const json_t *f = json_is_object(n) ? json_object_get(n, key) : NULL;
    if (!f)
        return 0;
    if (json_is_string(f))
        return strcmp(json_string_value(f), want) == 0;
    if (json_is_boolean(f))
        return strcmp(want, json_is_true(f) ? "true" : "false") == 0;
    double v, w;
    char *end;
    w = strtod(want, &end);
    if (end == want || *end || node_number(f, &v) < 0)
        return 0;
    return v == w;
}

/* "[...]" after a step: narrow every array in `in` to the chosen elements. */
static int apply_select(Parser *ps, NodeList *in)
{
    ps->p++; /* '[' */
    const char *start = ps->p, *close = strchr(ps->p, ']');
    if (!close)
        return fail(ps, ERR_USAGE, "'[' without ']'");
    char sel[256];
    size_t len = (size_t)(close - start);
    if (len == 0 || len >= sizeof sel)
        return fail(ps, ERR_USAGE, "empty or overlong selector");
    memcpy(sel, start, len);
    sel[len] = '\0';
    ps->p = close + 1;
    if (!ps->root)
        return 0;

    NodeList out = { .n = 0 };
    char *end;
    long idx = strtol(sel, &end, 10);
    int is_index = end != sel && *end == '\0';
    for (size_t i = 0; i < in->n; i++) {
        const json_t *a = in->node[i];
        if (!json_is_array(a))
            return err_set(ps->e, ERR_RUNTIME, "value '%s': [%s] applied to something that is not a list", ps->s,
                           sel);
        size_t n = json_array_size(a);
        if (is_index) {
            long k = idx < 0 ? (long)n + idx : idx;
            if (k < 0 || (size_t)k >= n)
                return err_set(ps->e, ERR_RUNTIME, "value '%s': index %ld is outside a list of %zu", ps->s, idx,
                               n);
            out.node[out.n++] = json_array_get(a, (size_t)k);
            continue;
        }
        for (size_t j = 0; j < n && out.n < MAX_NODES; j++) {
            const json_t *el = json_array_get(a, j);
            int ok = 1;
            if (strcmp(sel, "*") != 0) {
                char buf[256];
                memcpy(buf, sel, len + 1);
                char *save = NULL;
                for (char *cond = strtok_r(buf, ",", &save); cond && ok; cond = strtok_r(NULL, ",", &save)) {
                    char *eq = strchr(cond, '=');
                    if (!eq)
                        return err_set(ps->e, ERR_USAGE, "value '%s': selector '%s' is not KEY=VALUE", ps->s,
                                       cond);
                    *eq = '\0';
                    while (isspace((unsigned char)*cond))
                        cond++;
                    ok = field_matches(el, cond, eq + 1);
                }
            }
            if (ok)
                out.node[out.n++] = el;
        }
    }
    *in = out;
    return 0;
}

static int parse_path(Parser *ps, NodeList *out)
{
    out->n = 0;
    if (ps->root)
        out->node[out->n++] = ps->root;
    for (;;) {
        skip_ws(ps);
        if (!is_name_start((unsigned char)*ps->p))
            return fail(ps, ERR_USAGE, "expected a field name");
        const char *start = ps->p;
        while (is_name_char((unsigned char)*ps->p))
            ps->p++;
        char name[128];
        size_t len = (size_t)(ps->p - start);
        if (len >= sizeof name)
            return fail(ps, ERR_USAGE, "field name too long");
        memcpy(name, start, len);
        name[len] = '\0';
        if (ps->root) {
            size_t k = 0;
            for (size_t i = 0; i < out->n; i++) {
                const json_t *f = json_is_object(out->node[i]) ? json_object_get(out->node[i], name) : NULL;
                if (!f)
                    return err_set(ps->e, ERR_RUNTIME, "value '%s': no field '%s' in this output", ps->s, name);
                out->node[k++] = f;
            }
            out->n = k;
        }
        while (*ps->p == '[')
            if (apply_select(ps, out) < 0)
                return -1;
        if (*ps->p != '.')
            return 0;
        ps->p++;
    }
}

static int parse_expr(Parser *ps, double *out);

static int path_values(Parser *ps, const NodeList *l, double *vals)
{
    for (size_t i = 0; i < l->n; i++)
        if (node_number(l->node[i], &vals[i]) < 0) {
            char *txt = json_dumps(l->node[i], JSON_ENCODE_ANY | JSON_COMPACT);
            err_set(ps->e, ERR_RUNTIME, "value '%s': %.60s is not a number", ps->s, txt ? txt : "?");
            free(txt);
            return -1;
        }
    return 0;
}

/* The functions of a path, in the order of funcs[]. */
enum { FN_SUM, FN_MAX, FN_MIN, FN_MEAN, FN_COUNT, FN_FIRST, FN_LAST };
static const char *const funcs[] = { "sum", "max", "min", "mean", "count", "first", "last" };

/* The function whose name is [p, q), when a '(' follows it; else -1 (a path). */
static int func_at(const char *p, const char *q)
{
    int fn = -1;
    for (size_t i = 0; i < sizeof funcs / sizeof funcs[0]; i++)
        if ((size_t)(q - p) == strlen(funcs[i]) && strncmp(p, funcs[i], (size_t)(q - p)) == 0 && *q == '(')
            fn = (int)i;
    return fn;
}

/* Fold n >= 1 values with function fn (any but count). */
static double fold(int fn, const double *vals, size_t n)
{
    double acc = vals[0];
    for (size_t i = 1; i < n; i++) {
        if (fn == FN_SUM || fn == FN_MEAN)
            acc += vals[i];
        else if (fn == FN_MAX)
            acc = fmax(acc, vals[i]);
        else if (fn == FN_MIN)
            acc = fmin(acc, vals[i]);
    }
    if (fn == FN_MEAN)
        acc /= (double)n;
    else if (fn == FN_LAST)
        acc = vals[n - 1];
    return acc;
}

/* FUNC "(" path ")", ps->p at the path: the path's values folded by fn. */
static int parse_call(Parser *ps, int fn, double *out)
{
    static NodeList l; /* large: not on the stack (the evaluator is not re-entered) */
    static double vals[MAX_NODES];
    if (parse_path(ps, &l) < 0)
        return -1;
    skip_ws(ps);
    if (*ps->p != ')')
        return fail(ps, ERR_USAGE, "expected ')' after the path");
    ps->p++;
    if (!ps->root) {
        *out = 0;
        return 0;
    }
    if (fn == FN_COUNT) { /* how many matched, whatever they are */
        *out = (double)l.n;
        return 0;
    }
    if (path_values(ps, &l, vals) < 0)
        return -1;
    if (l.n == 0)
        return err_set(ps->e, ERR_RUNTIME, "value '%s': %s() of nothing: the path matched no value", ps->s,
                       funcs[fn]);
    *out = fold(fn, vals, l.n);
    return 0;
}

/* A bare path: it must match exactly one value. */
static int parse_value_path(Parser *ps, double *out)
{
    static NodeList l; /* large: not on the stack (the evaluator is not re-entered) */
    if (parse_path(ps, &l) < 0)
        return -1;
    if (!ps->root) {
        *out = 0;
        return 0;
    }
    if (l.n != 1)
        return err_set(ps->e, ERR_RUNTIME, "value '%s': the path matched %zu values, not one (use sum(), max(), "
                       "first() ...)", ps->s, l.n);
    double v;
    if (path_values(ps, &l, &v) < 0)
        return -1;
    *out = v;
    return 0;
}

static int parse_factor(Parser *ps, double *out)
{
    skip_ws(ps);
    const char *p = ps->p;
    if (*p == '(') {
        ps->p++;
        if (parse_expr(ps, out) < 0)
            return -1;
        skip_ws(ps);
        if (*ps->p != ')')
            return fail(ps, ERR_USAGE, "expected ')'");
        ps->p++;
        return 0;
    }
    if (*p == '-') {
        ps->p++;
        if (parse_factor(ps, out) < 0)
            return -1;
        *out = -*out;
        return 0;
    }
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        char *end;
        *out = strtod(p, &end);
        ps->p = end;
        return 0;
    }
    if (!is_name_start((unsigned char)*p))
        return fail(ps, ERR_USAGE, "expected a number, a field or '('");

    /* a function call or a path */
    const char *q = p;
    while (is_name_char((unsigned char)*q))
        q++;
    int fn = func_at(p, q);
    if (fn < 0)
        return parse_value_path(ps, out);
    ps->p = q + 1;
    return parse_call(ps, fn, out);
}

static int parse_term(Parser *ps, double *out)
{
    if (parse_factor(ps, out) < 0)
        return -1;
    for (;;) {
        skip_ws(ps);
        char op = *ps->p;
        if (op != '*' && op != '/')
            return 0;
        ps->p++;
        double r;
        if (parse_factor(ps, &r) < 0)
            return -1;
        if (op == '*')
            *out *= r;
        else if (ps->root && r == 0)
            return err_set(ps->e, ERR_RUNTIME, "value '%s': division by zero", ps->s);
        else if (ps->root)
            *out /= r;
    }
}

static int parse_expr(Parser *ps, double *out)
{
    if (parse_term(ps, out) < 0)
        return -1;
    for (;;) {
        skip_ws(ps);
        char op = *ps->p;
        if (op != '+' && op != '-')
            return 0;
        ps->p++;
        double r;
        if (parse_term(ps, &r) < 0)
            return -1;
        *out = op == '+' ? *out + r : *out - r;
    }
}

static int eval(const json_t *root, const char *expr, double *out, Err *e)
{
    Parser ps = { .s = expr, .p = expr, .root = root, .e = e };
    double v = 0;
    if (parse_expr(&ps, &v) < 0)
        return -1;
    skip_ws(&ps);
    if (*ps.p)
        return fail(&ps, ERR_USAGE, "unexpected text");
    *out = v;
    return 0;
}

int lv_eval(const json_t *root, const char *expr, double *out, Err *e)
{
    if (eval(NULL, expr, out, e) < 0)
        return -1;
    return eval(root, expr, out, e);
}

int lv_check_syntax(const char *expr, Err *e)
{
    double v;
    return eval(NULL, expr, &v, e);
}

/* --- figures and tolerances ---------------------------------------------- */

int lv_decimals(const char *text)
{
    const char *dot = strchr(text, '.');
    if (!dot)
        return 0;
    int n = 0;
    for (const char *p = dot + 1; isdigit((unsigned char)*p); p++)
        n++;
    return n;
}

int lv_parse_figure(const char *text, LvFigure *out, Err *e)
{
    memset(out, 0, sizeof *out);
    if (strcmp(text, "yes") == 0 || strcmp(text, "true") == 0 || strcmp(text, "no") == 0 ||
        strcmp(text, "false") == 0) {
        out->value = (text[0] == 'y' || text[0] == 't') ? 1 : 0;
        out->is_bool = 1;
        return 0;
    }
    char buf[64];
    size_t k = 0;
    for (const char *p = text; *p && k + 1 < sizeof buf; p++) {
        if (*p == ',') {
            /* a thousands separator sits between digits, with 3 after it */
            if (p == text || !isdigit((unsigned char)p[-1]) || !isdigit((unsigned char)p[1]) ||
                !isdigit((unsigned char)p[2]) || !isdigit((unsigned char)p[3]) || isdigit((unsigned char)p[4]))
                return err_set(e, ERR_USAGE, "'%s' is not a figure (a misplaced ',')", text);
            continue;
        }
        buf[k++] = *p;
    }
    buf[k] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (!k || *end || !isfinite(v))
        return err_set(e, ERR_USAGE, "'%s' is not a figure (write 15,150 or 3.88 or yes/no)", text);
    out->value = v;
    if (!strpbrk(buf, "eE")) {
        int d = lv_decimals(buf);
        out->half_ulp = d ? 0.5 * pow(10, -d) : 0;
    }
    return 0;
}

int lv_parse_tol(const char *text, LvTol *out, Err *e)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return 0;
    char *end;
    double v = strtod(text, &end);
    if (end == text || v < 0 || !isfinite(v))
        return err_set(e, ERR_USAGE, "tolerance '%s' is not a number >= 0 or a percentage", text);
    if (*end == '%' && end[1] == '\0')
        out->rel = v / 100;
    else if (*end == '\0')
        out->abs = v;
    else
        return err_set(e, ERR_USAGE, "tolerance '%s' is not a number >= 0 or a percentage", text);
    out->given = 1;
    return 0;
}

int lv_matches(double value, const LvFigure *fig, const LvTol *tol)
{
    if (!isfinite(value))
        return 0;
    double d = fabs(value - fig->value);
    if (tol && tol->given)
        return d <= tol->abs + tol->rel * fabs(fig->value) + 1e-12 * fabs(fig->value);
    /* as written: rounds to the figure; integers exactly (up to float noise) */
    return d <= fig->half_ulp * (1 + 1e-9) + 1e-9 * fabs(fig->value);
}

void lv_format(char *buf, size_t cap, double value, int decimals)
{
    char raw[64];
    if (decimals < 0) {
        snprintf(raw, sizeof raw, "%.6f", value);
        char *dot = strchr(raw, '.');
        if (dot) {
            char *z = raw + strlen(raw) - 1;
            while (z > dot && *z == '0')
                *z-- = '\0';
            if (z == dot)
                *z = '\0';
        }
    } else {
        snprintf(raw, sizeof raw, "%.*f", decimals, value);
    }
    if (fabs(value) >= 1e15 || strchr(raw, 'e')) { /* huge: leave it alone */
        snprintf(buf, cap, "%s", raw);
        return;
    }
    /* thousands separators in the integer part */
    const char *p = raw;
    char out[96];
    size_t k = 0;
    if (*p == '-')
        out[k++] = *p++;
    size_t int_len = strcspn(p, ".");
    for (size_t i = 0; i < int_len; i++) {
        if (i && (int_len - i) % 3 == 0)
            out[k++] = ',';
        out[k++] = p[i];
    }
    snprintf(out + k, sizeof out - k, "%s", p + int_len);
    snprintf(buf, cap, "%s", out);
}

void lv_format_answer(char *buf, size_t cap, double value)
{
    double a = fabs(value);
    if (value == floor(value) && a < 1e15)
        lv_format(buf, cap, value, 0);
    else if (a >= 1 || a == 0)
        lv_format(buf, cap, value, 2);
    else {
        int d = 2 - (int)floor(log10(a));
        lv_format(buf, cap, value, d > 12 ? 12 : d);
    }
}
