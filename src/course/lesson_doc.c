/* lesson_doc.c: lesson Markdown into blocks; check blocks; the figure rule
 * (see lesson_doc.h). */
#include "course/lesson_doc.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/files.h"

/* --- parsing ------------------------------------------------------------- */

typedef struct {
    Block *b;
    size_t n, cap;
} BlockVec;

static int push(BlockVec *v, BlockKind kind, size_t line, const char *text, size_t len, Err *e)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 32;
        Block *b = realloc(v->b, cap * sizeof *b);
        if (!b)
            return err_set(e, ERR_RUNTIME, "out of memory");
        v->b = b;
        v->cap = cap;
    }
    Block *blk = &v->b[v->n];
    memset(blk, 0, sizeof *blk);
    blk->kind = kind;
    blk->line = line;
    blk->text = malloc(len + 1);
    if (!blk->text)
        return err_set(e, ERR_RUNTIME, "out of memory");
    memcpy(blk->text, text, len);
    blk->text[len] = '\0';
    v->n++;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Split a check block's text (edited in place) into its fields. */
static int parse_check(Block *b, Err *e)
{
    CheckSpec *c = &b->check;
    c->line = b->line;
    c->id = c->run = c->value = c->expect = c->tol = c->hint = c->measured = "";
    size_t ln = b->line;
    char *save = NULL;
    for (char *line = strtok_r(b->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        ln++;
        char *t = trim(line);
        if (!*t)
            continue;
        char *colon = strchr(t, ':');
        if (!colon)
            return err_set(e, ERR_RUNTIME, "line %zu: a check line is `key: value`, not '%s'", ln, t);
        *colon = '\0';
        char *key = trim(t), *val = trim(colon + 1);
        const char **slot = strcmp(key, "id") == 0       ? &c->id
                            : strcmp(key, "run") == 0    ? &c->run
                            : strcmp(key, "value") == 0  ? &c->value
                            : strcmp(key, "expect") == 0 ? &c->expect
                            : strcmp(key, "tol") == 0    ? &c->tol
                            : strcmp(key, "hint") == 0   ? &c->hint
                            : strcmp(key, "measured") == 0 ? &c->measured
                                                         : NULL;
        if (!slot)
            return err_set(e, ERR_RUNTIME,
                           "line %zu: unknown check key '%s' (id, run, value, expect, tol, measured, hint)", ln,
                           key);
        *slot = val;
    }
    if (!*c->id || !*c->run || !*c->value || !*c->expect)
        return err_set(e, ERR_RUNTIME, "line %zu: a check block needs id, run, value and expect", b->line);
    if (*c->measured && (strcmp(c->measured, "yes") != 0 || !*c->tol))
        return err_set(e, ERR_RUNTIME, "line %zu: `measured: yes` goes with a tolerance (tol: 50%%)", b->line);
    return 0;
}

/* The paragraph or quote being gathered, line by line. */
typedef struct {
    char *text;   /* its lines so far, joined by newlines */
    size_t len, line;
    int kind;     /* BLK_PARA or BLK_QUOTE while gathering, -1 between blocks */
} Gather;

static int flush(Gather *g, BlockVec *v, Err *e)
{
    if (g->kind >= 0 && push(v, (BlockKind)g->kind, g->line, g->text, g->len, e) < 0)
        return -1;
    g->kind = -1;
    g->len = 0;
    return 0;
}

/* The fenced block whose opening line is t (tlen bytes, after the indent):
 * its body up to the closing fence becomes a block (a check block parsed as
 * one). *p moves past the closing fence, *line_no to its line. */
static int parse_fence(const char *t, size_t tlen, const char *after, const char **p, size_t *line_no, BlockVec *v,
                       Err *e)
{
    char info[32] = "";
    size_t il = tlen - 3 < sizeof info - 1 ? tlen - 3 : sizeof info - 1;
    memcpy(info, t + 3, il);
    info[il] = '\0';
    char *inf = trim(info);
    const size_t start_line = *line_no;
    const char *q = after, *body = after, *end = NULL;
    while (*q) {
        const char *qnl = strchr(q, '\n');
        size_t qlen = qnl ? (size_t)(qnl - q) : strlen(q);
        ++*line_no;
        const char *qt = q;
        while (qt < q + qlen && *qt == ' ' && qt - q < 3)
            qt++;
        if ((size_t)(q + qlen - qt) >= 3 && strncmp(qt, "```", 3) == 0) {
            end = q;
            *p = qnl ? qnl + 1 : q + qlen;
            break;
        }
        q = qnl ? qnl + 1 : q + qlen;
    }
    if (!end)
        return err_set(e, ERR_RUNTIME, "line %zu: a ``` fence is never closed", start_line);
    size_t blen = (size_t)(end - body);
    if (blen && body[blen - 1] == '\n')
        blen--;
    int is_check = strcmp(inf, "check") == 0;
    if (push(v, is_check ? BLK_CHECK : BLK_FENCE, start_line, body, blen, e) < 0)
        return -1;
    snprintf(v->b[v->n - 1].info, sizeof v->b[v->n - 1].info, "%s", inf);
    return is_check ? parse_check(&v->b[v->n - 1], e) : 0;
}

/* One line of prose (s, len bytes; t after up to 3 spaces of indent):
 * a blank ends the block, a heading is one, other lines gather. */
static int prose_line(const char *s, size_t len, const char *t, size_t line_no, Gather *g, BlockVec *v, Err *e)
{
    int blank = 1;
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)s[i]))
            blank = 0;
    if (blank)
        return flush(g, v, e);
    if (t[0] == '#')
        return flush(g, v, e) < 0 ? -1 : push(v, BLK_HEADING, line_no, s, len, e);
    int kind = t[0] == '>' ? BLK_QUOTE : BLK_PARA;
    if (g->kind != kind && flush(g, v, e) < 0)
        return -1;
    if (g->kind < 0) {
        g->kind = kind;
        g->line = line_no;
    } else {
        g->text[g->len++] = '\n';
    }
    memcpy(g->text + g->len, s, len);
    g->len += len;
    return 0;
}

int doc_parse(const char *md, LessonDoc *d, Err *e)
{
    memset(d, 0, sizeof *d);
    BlockVec v = { 0 };
    Gather g = { .text = malloc(strlen(md) + 1), .kind = -1 };
    if (!g.text)
        return err_set(e, ERR_RUNTIME, "out of memory");
    const char *p = md;
    size_t line_no = 0;
    int rc = 0;
    while (*p && rc == 0) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        line_no++;
        size_t lead = 0;
        while (lead < 3 && p[lead] == ' ')
            lead++;
        const char *t = p + lead;
        if (len - lead >= 3 && strncmp(t, "```", 3) == 0) {
            rc = flush(&g, &v, e) < 0 ? -1 : parse_fence(t, len - lead, nl ? nl + 1 : p + len, &p, &line_no, &v, e);
            continue;
        }
        rc = prose_line(p, len, t, line_no, &g, &v, e);
        p = nl ? nl + 1 : p + len;
    }
    if (rc == 0)
        rc = flush(&g, &v, e);
    free(g.text);
    d->blocks = v.b;
    d->n = v.n;
    if (rc < 0)
        doc_free(d);
    return rc;
}

int doc_load(const char *path, LessonDoc *d, Err *e)
{
    FILE *f = files_fopen_input(path, e);
    if (!f)
        return e && e->kind == ERR_USAGE ? -1 : err_set(e, ERR_RUNTIME, "cannot read the lesson file");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        fclose(f);
        return err_set(e, ERR_RUNTIME, "cannot read the lesson file");
    }
    fclose(f);
    text[n] = '\0';
    const char *nul = memchr(text, '\0', (size_t)n);
    if (nul) { /* the parser would stop there and take the rest as missing */
        size_t at = (size_t)(nul - text);
        free(text);
        return err_set(e, ERR_RUNTIME, "a NUL byte at offset %zu: a lesson is text", at);
    }
    int rc = doc_parse(text, d, e);
    free(text);
    return rc;
}

void doc_free(LessonDoc *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->blocks[i].text);
    free(d->blocks);
    d->blocks = NULL;
    d->n = 0;
}

/* --- rendering ----------------------------------------------------------- */

void doc_render(FILE *f, const LessonDoc *d)
{
    for (size_t i = 0; i < d->n; i++) {
        const Block *b = &d->blocks[i];
        switch (b->kind) {
        case BLK_HEADING:
        case BLK_PARA:
        case BLK_QUOTE:
            fprintf(f, "%s\n\n", b->text);
            break;
        case BLK_FENCE: {
            const char *p = b->text;
            while (*p) {
                const char *nl = strchr(p, '\n');
                int len = nl ? (int)(nl - p) : (int)strlen(p);
                fprintf(f, "    %.*s\n", len, p);
                p += len + (nl ? 1 : 0);
            }
            fprintf(f, "\n");
            break;
        }
        case BLK_CHECK: {
            const CheckSpec *c = &b->check;
            fprintf(f, "    check %s%s\n      $ %s\n      %s  should be %s%s%s\n\n", c->id,
                    *c->measured ? " (measured on this machine)" : "", c->run, c->value, c->expect,
                    *c->tol ? " within " : "", c->tol);
            break;
        }
        }
    }
}

/* --- numbers and figures -------------------------------------------------- */

static const char *const attached_units[] = { "x", "B", "KB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "TiB", "ms" };
static const char *const spaced_units[] = { "B",   "bytes", "KB", "KiB", "MB",    "MiB",  "GB",
                                            "GiB", "TB",    "TiB", "ms", "FLOPs", "FLOP", "GB/s" };

static int word_in(const char *w, size_t n, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(list[i]) == n && strncmp(w, list[i], n) == 0)
            return 1;
    return 0;
}

/* Blank out inline code that is a command; drop the other backticks. */
static void strip_commands(char *s)
{
    static const char *const cmds[] = { "kvscope", "cc ", "make", "cp ", "$ " };
    char *p = s;
    while ((p = strchr(p, '`'))) {
        char *close = strchr(p + 1, '`');
        if (!close)
            break;
        int is_cmd = 0;
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
            if (strncmp(p + 1, cmds[i], strlen(cmds[i])) == 0)
                is_cmd = 1;
        for (char *q = p; q <= close; q++)
            if (is_cmd || q == p || q == close)
                *q = ' ';
        p = close + 1;
    }
}

static int prev_word_is(const char *start, const char *at, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(at - start) < n + 1 || at[-1] != ' ')
        return 0;
    const char *w = at - 1 - n;
    if (strncasecmp(w, word, n) != 0)
        return 0;
    return w == start || !isalnum((unsigned char)w[-1]);
}

/* Whether the digits at start (in s) belong to a name: "v2", "x_1",
 * "Llama-3", "seed 42", "lesson 4". */
static int name_before(const char *s, const char *start)
{
    if (start > s) {
        char c = start[-1];
        if (isalpha((unsigned char)c) || c == '_' || c == '.')
            return 1;
        if (c == '-' && start - 1 > s && isalnum((unsigned char)start[-2]))
            return 1;
    }
    return prev_word_is(s, start, "seed") || prev_word_is(s, start, "lesson") || prev_word_is(s, start, "lessons");
}

/* The end of the number at p: digits, thousands groups, one decimal part. */
static const char *number_end(const char *p, int *has_dot)
{
    const char *q = p;
    while (isdigit((unsigned char)*q))
        q++;
    while (*q == ',' && isdigit((unsigned char)q[1]) && isdigit((unsigned char)q[2]) && isdigit((unsigned char)q[3]) &&
           !isdigit((unsigned char)q[4]))
        q += 4;
    *has_dot = 0;
    if (*q == '.' && isdigit((unsigned char)q[1])) {
        *has_dot = 1;
        q++;
        while (isdigit((unsigned char)*q))
            q++;
    }
    return q;
}

/* What follows a number ending at q: a unit (*unit set), or letters or an
 * underscore that make it part of a name (returns 1). *after is where the
 * scan goes on. */
static int name_after(const char *q, int *unit, const char **after)
{
    const char *r = q;
    while (isalpha((unsigned char)*r))
        r++;
    *after = r;
    *unit = 0;
    if (r > q) {
        if (!isalnum((unsigned char)*r) && *r != '_' && word_in(q, (size_t)(r - q), attached_units, 11))
            return *unit = 1, 0;
        return 1;
    }
    if (*q == '%')
        *unit = 1;
    else if (*q == '_')
        return 1;
    else if (*q == ' ') {
        const char *w = q + 1, *we = w;
        while (isalpha((unsigned char)*we) || *we == '/')
            we++;
        *unit = we > w && word_in(w, (size_t)(we - w), spaced_units, sizeof spaced_units / sizeof *spaced_units);
    }
    return 0;
}

/* The number [start, end) of s, a minus before it included, into f. */
static void record(const char *s, const char *start, const char *end, size_t line, DocFigure *f, size_t *digits)
{
    char num[48];
    size_t k = 0;
    int neg = start > s && start[-1] == '-' && (start - 1 == s || !isalnum((unsigned char)start[-2]));
    if (neg)
        num[k++] = '-';
    *digits = 0;
    for (const char *c = start; c < end && k + 1 < sizeof num; c++) {
        *digits += isdigit((unsigned char)*c) != 0;
        if (*c != ',')
            num[k++] = *c;
    }
    num[k] = '\0';
    size_t tl = (size_t)(end - start) + (size_t)neg;
    if (tl >= sizeof f->text)
        tl = sizeof f->text - 1;
    memcpy(f->text, start - neg, tl);
    f->text[tl] = '\0';
    f->value = strtod(num, NULL);
    f->line = line;
}

size_t doc_numbers(const char *text, size_t line, int only_figures, DocFigure *out, size_t cap)
{
    char *s = strdup(text);
    if (!s)
        return 0;
    strip_commands(s);
    size_t found = 0, ln = line;
    const char *p = s;
    while (*p) {
        if (*p == '\n')
            ln++;
        if (!isdigit((unsigned char)*p)) {
            p++;
            continue;
        }
        const char *start = p, *after;
        int has_dot, unit;
        const char *q = number_end(p, &has_dot);
        int name = name_after(q, &unit, &after) | name_before(s, start);
        p = after > q ? after : q;
        if (name)
            continue;
        DocFigure f;
        size_t digits;
        record(s, start, q, ln, &f, &digits);
        /* a unit of bytes makes a figure from two digits on ("2 bytes a value"
         * is a definition); a ratio or a share from one ("8x", "3%") */
        int ratio = unit && (*q == 'x' || *q == '%');
        int figure = digits >= 3 || has_dot || ratio || (unit && digits >= 2);
        if (only_figures && !figure)
            continue;
        if (found < cap)
            out[found] = f;
        found++;
    }
    free(s);
    return found;
}

/* --- the figure rule ------------------------------------------------------ */

/* A quote of a source document's own words, to be corrected: it begins
 * with the document's short title (lessons/README.md, "The source documents"). */
static int is_source_quote(const Block *b)
{
    static const char *const titles[] = { "The Marlin design", "The MLA notes", "The teaching notes",
                                          "The encoder-decoder notes", "The mixed-precision proposal" };
    const char *p = b->text;
    while (*p == '>' || *p == ' ')
        p++;
    for (size_t i = 0; i < sizeof titles / sizeof titles[0]; i++)
        if (strncmp(p, titles[i], strlen(titles[i])) == 0)
            return 1;
    return 0;
}

/* Blocks whose numbers are prose (ours to check). */
static int is_prose(const Block *b)
{
    return b->kind == BLK_PARA || (b->kind == BLK_QUOTE && !is_source_quote(b));
}

/* A section: the blocks between two headings, [first, last]. */
typedef struct {
    size_t first, last;
} Section;

static int same_number(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

#define MAX_NUMS 512

/* Is v the expect of, or a number in the command, value or tolerance of, a
 * check of section seg? */
static int group_covers(const LessonDoc *d, const Section *seg, double v)
{
    static DocFigure nums[MAX_NUMS];
    for (size_t i = seg->first; i <= seg->last; i++) {
        if (d->blocks[i].kind != BLK_CHECK)
            continue;
        const CheckSpec *c = &d->blocks[i].check;
        char buf[512];
        snprintf(buf, sizeof buf, "%s %s %s %s", c->expect, c->run, c->value, c->tol);
        /* commands are full of names (q8_0, --set n_layers=2); read numbers plainly */
        for (char *q = buf; *q; q++)
            if (*q == '=' || *q == '-' || *q == '_' || *q == '[' || *q == ']' || *q == '(' || *q == ')')
                *q = ' ';
        size_t n = doc_numbers(buf, 0, 0, nums, MAX_NUMS);
        for (size_t k = 0; k < n && k < MAX_NUMS; k++)
            if (same_number(nums[k].value, v))
                return 1;
        /* the expect as written ("15,150") */
        char *end;
        char ex[64];
        size_t m = 0;
        for (const char *q = c->expect; *q && m + 1 < sizeof ex; q++)
            if (*q != ',')
                ex[m++] = *q;
        ex[m] = '\0';
        double ev = strtod(ex, &end);
        if (end != ex && !*end && same_number(ev, v))
            return 1;
    }
    return 0;
}

/* Is v a number of the prose of section seg? */
static int run_says(const LessonDoc *d, const Section *seg, double v)
{
    static DocFigure nums[MAX_NUMS];
    for (size_t i = seg->first; i <= seg->last; i++) {
        if (!is_prose(&d->blocks[i]))
            continue;
        size_t n = doc_numbers(d->blocks[i].text, d->blocks[i].line, 0, nums, MAX_NUMS);
        for (size_t k = 0; k < n && k < MAX_NUMS; k++)
            if (same_number(nums[k].value, v))
                return 1;
    }
    return 0;
}

size_t doc_lint_figures(const LessonDoc *d, DocProblemFn fn, void *user)
{
    static DocFigure figs[MAX_NUMS];
    char msg[1024];
    size_t problems = 0;
    for (size_t first = 0; first < d->n;) {
        /* the section: up to the next heading */
        size_t last = first;
        while (last + 1 < d->n && d->blocks[last + 1].kind != BLK_HEADING)
            last++;
        Section sec = { first, last };
        for (size_t i = first; i <= last; i++) {
            const Block *b = &d->blocks[i];
            if (is_prose(b)) {
                size_t n = doc_numbers(b->text, b->line, 1, figs, MAX_NUMS);
                for (size_t k = 0; k < n && k < MAX_NUMS; k++) {
                    if (group_covers(d, &sec, figs[k].value))
                        continue;
                    snprintf(msg, sizeof msg, "the figure %.40s has no check beside it (a check block in the same "
                             "section must expect it, or name it in its command)", figs[k].text);
                    fn(user, figs[k].line, msg);
                    problems++;
                }
            } else if (b->kind == BLK_CHECK) {
                const CheckSpec *c = &b->check;
                if (!strcmp(c->expect, "yes") || !strcmp(c->expect, "no") || !strcmp(c->expect, "true") ||
                    !strcmp(c->expect, "false"))
                    continue;
                char ex[64];
                size_t m = 0;
                for (const char *q = c->expect; *q && m + 1 < sizeof ex; q++)
                    if (*q != ',')
                        ex[m++] = *q;
                ex[m] = '\0';
                if (run_says(d, &sec, strtod(ex, NULL)))
                    continue;
                snprintf(msg, sizeof msg, "check %.64s expects %.40s, but the text of its section never says %.40s",
                         c->id, c->expect, c->expect);
                fn(user, c->line, msg);
                problems++;
            }
        }
        first = last + 1;
    }
    return problems;
}
