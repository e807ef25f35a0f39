/* lesson_lint.c: the course lint (see lesson_lint.h). */
#include "course/lesson_lint.h"

#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "course/lesson_doc.h"
#include "course/lesson_exec.h"
#include "course/lesson_rules.h"
#include "course/lesson_run.h"
#include "course/lesson_value.h"

typedef struct {
    FILE *out;
    const LintProgress *progress; /* NULL: nobody is told */
    size_t commands, n_commands;  /* run so far, of all */
    size_t problems;
    const char *where; /* the lesson file being read, for figure problems */
    char ids[1024][96]; /* copies: check ids live in documents freed meanwhile */
    size_t n_ids;
} Lint;

/* A line (or lines) to out, the caller's progress line cleared first. */
__attribute__((format(printf, 2, 3))) static void say(Lint *l, const char *fmt, ...)
{
    if (l->progress && l->progress->clear)
        l->progress->clear(l->progress->user);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(l->out, fmt, ap);
    va_end(ap);
}

/* The next command is about to run. */
static void step(Lint *l, const char *what)
{
    if (l->progress && l->progress->step)
        l->progress->step(l->progress->user, what, l->commands, l->n_commands);
    l->commands++;
}

static void problem(Lint *l, const char *fmt, const char *a, const char *b)
{
    char line[2048];
    l->problems++;
    snprintf(line, sizeof line, fmt, a, b);
    say(l, "  FAIL  %s\n", line);
}

static void unique(Lint *l, const char *kind, const char *id)
{
    if (!*id) {
        problem(l, "a %s has an empty id%s", kind, "");
        return;
    }
    for (size_t i = 0; i < l->n_ids; i++)
        if (strcmp(l->ids[i], id) == 0) {
            problem(l, "id '%s' is used twice (ids are unique in the course; this one is a %s)", id, kind);
            return;
        }
    if (l->n_ids < sizeof l->ids / sizeof l->ids[0])
        snprintf(l->ids[l->n_ids++], sizeof l->ids[0], "%s", id);
}

static void nonempty(Lint *l, const char *what, const char *id, const char *text)
{
    const char *p = text;
    while (*p && isspace((unsigned char)*p))
        p++;
    if (!*p)
        problem(l, "%s has an empty %s", id, what);
}

static void figure_problem(void *user, size_t line, const char *msg)
{
    Lint *l = user;
    char where[128];
    snprintf(where, sizeof where, "%s, line %zu", l->where, line);
    problem(l, "%s: %s", where, msg);
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The numbers of the configuration a check's command runs (its --model
 * and --set, as `kvscope calc` prints them), into cfg; their count. The
 * last configuration asked is remembered: a lesson's checks share few. */
static size_t config_of(const CheckSpec *ck, RuleConfigValue *cfg, size_t cap)
{
    static char last_cmd[1024];
    static RuleConfigValue last[48];
    static size_t n_last;
    char buf[2048], cmd[1024];
    char *argv[64];
    Err e = { 0 };
    snprintf(buf, sizeof buf, "%s", ck->run);
    int argc = exec_split(buf, argv, 64, &e);
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "kvscope calc");
    for (int i = 2; argc > 0 && i + 1 < argc && n < sizeof cmd; i++)
        if (strcmp(argv[i], "--model") == 0 || strcmp(argv[i], "--set") == 0) {
            n += (size_t)snprintf(cmd + n, sizeof cmd - n, " %s '%s'", argv[i], argv[i + 1]);
            i++;
        }
    if (n >= sizeof cmd - 16)
        return 0;
    snprintf(cmd + n, sizeof cmd - n, " --format json");
    if (strcmp(cmd, last_cmd) != 0) {
        snprintf(last_cmd, sizeof last_cmd, "%s", cmd);
        n_last = 0;
        ExecResult r;
        if (exec_kvscope(cmd, &r, &e) == 0 && r.status == 0) {
            json_t *root = lv_parse_output(r.out, &e);
            json_t *model = root ? json_object_get(root, "model") : NULL;
            const char *key;
            json_t *v;
            json_object_foreach(model, key, v) {
                if (json_is_number(v) && n_last < sizeof last / sizeof last[0] && json_number_value(v) != 0) {
                    snprintf(last[n_last].name, sizeof last[n_last].name, "%s", key);
                    last[n_last++].value = json_number_value(v);
                }
            }
            json_decref(root);
        }
        exec_result_free(&r);
    }
    size_t k = n_last < cap ? n_last : cap;
    memcpy(cfg, last, k * sizeof *cfg);
    return k;
}

static void lint_checks(Lint *l, const Course *c, const Lesson *ls, size_t *n_checks)
{
    char path[PATH_MAX + 64];
    course_path(c, ls->file, path, sizeof path);
    char expect_prefix[8];
    snprintf(expect_prefix, sizeof expect_prefix, "%02zu-", ls->number);
    if (strncmp(ls->file, expect_prefix, 3) != 0 || strchr(ls->file, '/'))
        problem(l, "lesson file %s should be lessons/%s<name>.md (numbered as its place in the manifest)",
                ls->file, expect_prefix);
    LessonDoc d;
    Err e = { 0 };
    if (doc_load(path, &d, &e) < 0) {
        problem(l, "%s: %s", ls->file, e.msg);
        return;
    }
    l->where = ls->file;
    doc_lint_figures(&d, figure_problem, l);
    size_t checks = 0, passed = 0;
    for (size_t i = 0; i < d.n; i++) {
        if (d.blocks[i].kind == BLK_FENCE && strcmp(d.blocks[i].info, "sh") && strcmp(d.blocks[i].info, "c") &&
            strcmp(d.blocks[i].info, "text")) {
            char where[96];
            snprintf(where, sizeof where, "%s, line %zu", ls->file, d.blocks[i].line);
            problem(l, "%s: a fence is ```check, ```sh (commands to type), ```c or ```text, not ```%s", where,
                    d.blocks[i].info);
        }
        if (d.blocks[i].kind != BLK_CHECK)
            continue;
        const CheckSpec *ck = &d.blocks[i].check;
        checks++;
        unique(l, "check", ck->id);
        nonempty(l, "hint", ck->id, ck->hint);
        char why[600];
        if (rule_check_static(ck, why, sizeof why))
            problem(l, "check %s: %s", ck->id, why);
        for (size_t j = 0; j < d.n; j++)
            if (d.blocks[j].kind == BLK_CHECK && rule_halves_another(ck, &d.blocks[j].check, why, sizeof why)) {
                problem(l, "check %s: %s", ck->id, why);
                break;
            }
        CheckOutcome o;
        Err ce = { 0 };
        step(l, ck->id);
        int rc = run_check(ck, &o, &ce);
        if (rc == 0 && !o.pass && *ck->measured) { /* a figure of this machine: once more, afresh */
            run_forget(ck->run);
            rc = run_check(ck, &o, &ce);
        }
        if (rc < 0) {
            problem(l, "%s: %s", ls->file, ce.msg);
            continue;
        }
        if (o.pass) {
            RuleConfigValue cfg[48];
            size_t n_cfg = config_of(ck, cfg, sizeof cfg / sizeof cfg[0]);
            if (rule_value_is_input(ck, o.actual, why, sizeof why) ||
                rule_reads_back(ck, o.actual, cfg, n_cfg, why, sizeof why) ||
                rule_rounds_as_written(ck, o.actual, why, sizeof why))
                problem(l, "check %s: %s", ck->id, why);
            passed++;
            continue;
        }
        if (*ck->measured) {
            say(l, "  warn  check %s (measured on this machine): expected %s within %s, got %s twice; a busy or "
                "unusual machine, so not counted as a problem\n", ck->id, ck->expect, ck->tol,
                o.have_value ? o.actual_text : o.problem);
            passed++;
            continue;
        }
        char detail[700];
        if (o.have_value)
            snprintf(detail, sizeof detail, "expected %s, got %s", ck->expect, o.actual_text);
        else
            snprintf(detail, sizeof detail, "%s", o.problem);
        problem(l, "check %s: %s", ck->id, detail);
        say(l, "        $ %s\n", ck->run);
    }
    say(l, "  %s  lesson %2zu %-24s %zu of %zu checks pass\n", passed == checks ? "ok  " : "FAIL", ls->number, ls->id,
        passed, checks);
    if (checks == 0)
        problem(l, "lesson %s has no check block%s", ls->id, "");
    *n_checks += checks;
    doc_free(&d);
}

static void lint_quiz(Lint *l, const Lesson *ls, size_t *n_quiz)
{
    for (size_t i = 0; i < ls->n_quiz; i++) {
        const QuizQuestion *q = &ls->quiz[i];
        unique(l, "quiz question", q->id);
        nonempty(l, "question", q->id, q->ask);
        nonempty(l, "hint", q->id, q->hint);
        Err e = { 0 };
        if (lv_check_syntax(q->value, &e) < 0 || (*q->tol && lv_parse_tol(q->tol, &(LvTol){ 0 }, &e) < 0)) {
            problem(l, "quiz %s: %s", q->id, e.msg);
            continue;
        }
        double v;
        int choice;
        char how[1024];
        step(l, q->id);
        if (run_quiz_answer(q, &v, &choice, how, sizeof how, &e) < 0) {
            problem(l, "%s%s", e.msg, "");
            continue;
        }
        char shown[64];
        lv_format_answer(shown, sizeof shown, v);
        say(l, "  ok    quiz %-30s answer %s\n", q->id, choice >= 0 ? q->choices[choice] : shown);
        (*n_quiz)++;
    }
}

static void lint_exercise(Lint *l, const Course *c, const Lesson *ls)
{
    const Exercise *x = &ls->ex;
    unique(l, "exercise", x->id);
    nonempty(l, "hint", x->id, x->hint);
    nonempty(l, "title", x->id, x->title);
    const char *files[3] = { x->starter, x->solution, x->harness };
    for (int i = 0; i < 3; i++) {
        char p[PATH_MAX + 64];
        course_path(c, files[i], p, sizeof p);
        if (!file_exists(p)) {
            problem(l, "exercise %s: lessons/%s does not exist", x->id, files[i]);
            return;
        }
    }
    for (int sol = 0; sol < 2; sol++) {
        char p[PATH_MAX + 64];
        course_path(c, sol ? x->solution : x->starter, p, sizeof p);
        ExerciseOutcome o;
        Err e = { 0 };
        const char *name = sol ? "solution" : "starter";
        char what[160];
        snprintf(what, sizeof what, "exercise %s, the %s", x->id, name);
        step(l, what);
        if (run_exercise(c, x, p, &o, &e) < 0) {
            problem(l, "exercise %s: %s", x->id, e.msg);
            return;
        }
        if (!o.compiled) {
            problem(l, "exercise %s: the %s does not compile", x->id, name);
            say(l, "%s\n", o.output ? o.output : "");
        } else if (sol && !o.passed) {
            problem(l, "exercise %s: the %s fails its check", x->id, name);
            say(l, "%s\n", o.output ? o.output : "");
        } else if (!sol && o.passed) {
            problem(l, "exercise %s: the %s passes its check (a starter must leave work to do)", x->id, name);
        } else {
            say(l, "  ok    exercise %-26s the %s %s\n", x->id, name,
                sol ? "passes its check" : "compiles and fails its check");
        }
        exercise_outcome_free(&o);
    }
    for (size_t i = 0; i < x->n_wrong; i++) {
        char p[PATH_MAX + 64], what[160];
        course_path(c, x->wrong[i], p, sizeof p);
        snprintf(what, sizeof what, "exercise %s, lessons/%s", x->id, x->wrong[i]);
        if (!file_exists(p)) {
            problem(l, "exercise %s: lessons/%s does not exist", x->id, x->wrong[i]);
            continue;
        }
        ExerciseOutcome o;
        Err e = { 0 };
        step(l, what);
        if (run_exercise(c, x, p, &o, &e) < 0) {
            problem(l, "exercise %s: %s", x->id, e.msg);
            return;
        }
        if (!o.compiled) {
            problem(l, "%s, a wrong solution, does not compile%s", what, "");
            say(l, "%s\n", o.output ? o.output : "");
        } else if (o.passed) {
            problem(l, "%s, a wrong solution, passes its check: the checker cannot see that mistake%s", what, "");
        } else if (!o.output || !strstr(o.output, x->wrong_says[i])) {
            problem(l, "%s fails its check without naming the mistake (no '%s' in the checker's output)", what,
                    x->wrong_says[i]);
            say(l, "%s\n", o.output ? o.output : "");
        } else {
            say(l, "  ok    exercise %-26s lessons/%s fails, naming the mistake\n", x->id, x->wrong[i]);
        }
        exercise_outcome_free(&o);
    }
}

/* Lesson files (NN-*.md) that the manifest does not list. */
static void lint_orphans(Lint *l, const Course *c)
{
    DIR *dir = opendir(c->dir);
    if (!dir)
        return;
    struct dirent *ent;
    while ((ent = readdir(dir))) {
        const char *n = ent->d_name;
        size_t len = strlen(n);
        if (len < 7 || !isdigit((unsigned char)n[0]) || !isdigit((unsigned char)n[1]) || n[2] != '-' ||
            strcmp(n + len - 3, ".md") != 0)
            continue;
        int listed = 0;
        for (size_t i = 0; i < c->n; i++)
            if (c->lessons[i].file && strcmp(c->lessons[i].file, n) == 0)
                listed = 1;
        if (!listed)
            problem(l, "lessons/%s is not in the manifest%s", n, "");
    }
    closedir(dir);
}

/* The commands the lint will run: each check, quiz question, exercise
 * build (starter and solution) and probe, as far as the files say. */
static size_t count_commands(const Course *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++) {
        const Lesson *ls = &c->lessons[i];
        if (!ls->file) {
            n += *ls->probe != '\0';
            continue;
        }
        char path[PATH_MAX + 64];
        course_path(c, ls->file, path, sizeof path);
        LessonDoc d;
        Err e = { 0 };
        if (!file_exists(path) || doc_load(path, &d, &e) < 0)
            continue;
        for (size_t b = 0; b < d.n; b++)
            n += d.blocks[b].kind == BLK_CHECK;
        doc_free(&d);
        n += ls->n_quiz + (ls->ex.present ? 2 + ls->ex.n_wrong : 0);
    }
    return n;
}

size_t lesson_lint(const Course *c, FILE *out, const LintProgress *progress)
{
    static Lint l;
    memset(&l, 0, sizeof l);
    l.out = out;
    l.progress = progress;
    l.n_commands = progress ? count_commands(c) : 0;
    size_t n_checks = 0, n_quiz = 0, n_ex = 0, n_written = 0, n_waiting = 0;
    for (size_t i = 0; i < c->n; i++) {
        const Lesson *ls = &c->lessons[i];
        unique(&l, "lesson", ls->id);
        nonempty(&l, "title", ls->id, ls->title);
        if (ls->file) {
            char p[PATH_MAX + 64];
            course_path(c, ls->file, p, sizeof p);
            n_written++;
            if (*ls->waiting_for)
                problem(&l, "lesson %s has a file and waits for %s: one or the other", ls->id, ls->waiting_for);
            if (!file_exists(p)) {
                problem(&l, "lesson %s: lessons/%s does not exist", ls->id, ls->file);
                continue;
            }
            lint_checks(&l, c, ls, &n_checks);
            lint_quiz(&l, ls, &n_quiz);
            if (ls->ex.present) {
                lint_exercise(&l, c, ls);
                n_ex++;
            }
            continue;
        }
        n_waiting++;
        if (ls->n_quiz || ls->ex.present)
            problem(&l, "lesson %s waits for %s but lists quiz questions or an exercise", ls->id, ls->waiting_for);
        say(&l, "  wait  lesson %2zu %-24s waiting for %s\n", ls->number, ls->id, ls->waiting_for);
        if (*ls->probe) {
            ExecResult r;
            Err e = { 0 };
            step(&l, ls->probe);
            if (exec_kvscope(ls->probe, &r, &e) == 0 && r.status == 0)
                say(&l, "  note  lesson %zu (%s): its probe `%s` already succeeds: the engine part may have landed, "
                    "and the lesson can be written\n", ls->number, ls->id, ls->probe);
            exec_result_free(&r);
        }
    }
    lint_orphans(&l, c);
    say(&l, "check-lessons: %zu lessons written (%zu checks, %zu quiz questions, %zu exercises), %zu waiting; %zu "
        "problem%s\n", n_written, n_checks, n_quiz, n_ex, n_waiting, l.problems, l.problems == 1 ? "" : "s");
    return l.problems;
}
