/* cmd_lesson.c: `kvscope lesson`: the lessons, their self-checks, quizzes
 * and exercises. The course is lessons/manifest.json (lesson_course.h);
 * progress lives in the user's state directory (lesson_progress.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/commands.h"
#include "app/lesson_quiz.h"
#include "app/progress_line.h"
#include "course/lesson_course.h"
#include "course/lesson_doc.h"
#include "course/lesson_exec.h"
#include "course/lesson_lint.h"
#include "course/lesson_progress.h"
#include "course/lesson_run.h"

static void help(void)
{
    printf("usage: kvscope lesson                       list the lessons and say which to open next\n"
           "       kvscope lesson list                  list the lessons with their done marks\n"
           "       kvscope lesson show N                print lesson N (a number or an id)\n"
           "       kvscope lesson check N [--file F]    run lesson N's checks, and build and check its exercise\n"
           "       kvscope lesson quiz N                answer lesson N's questions in the terminal\n"
           "       kvscope lesson lint                  the course lint, for authors (`make check-lessons`)\n"
           "\n"
           "check and lint show which check runs on stderr, when it is a terminal:\n"
           "%s"
           "\n"
           "Every figure a lesson states is recomputed by kvscope: a check block beside it names the command\n"
           "and the number it must print, and `lesson check` runs them all. A failing check prints the\n"
           "expected and the actual figure, a hint, and the command to re-run.\n"
           "\n"
           "Exercises are C files written against kvscope's library (build/libkvscope.a, headers in src/).\n"
           "Copy the starter the lesson names, fill in its TODOs, and check it with --file; without --file,\n"
           "check builds the starter in lessons/exercises/ (edit it in place if you prefer).\n"
           "\n"
           "A quiz reads one answer per line from standard input: a number (15,150 and 15150 both work) or\n"
           "a choice (its name or letter); `hint` shows the hint, an empty line skips. The right answer is\n"
           "computed by running kvscope when you answer, and the command is shown.\n"
           "\n"
           "Progress is kept in $XDG_STATE_HOME/kvscope/progress (default ~/.local/state/kvscope/progress),\n"
           "never in the repository. KVSCOPE_LESSONS names another course directory.\n"
           "example: kvscope lesson check 1\n",
           progress_line_help);
}

/* --- list and show --------------------------------------------------------- */

static const Lesson *first_unfinished(const Course *c, const Progress *p)
{
    for (size_t i = 0; i < c->n; i++) {
        const ProgressEntry *x = progress_get(p, c->lessons[i].id);
        if (c->lessons[i].file && !(x && x->done))
            return &c->lessons[i];
    }
    return NULL;
}

static void print_list(const Course *c, const Progress *p)
{
    size_t written = 0, done = 0;
    for (size_t i = 0; i < c->n; i++) {
        const ProgressEntry *x = progress_get(p, c->lessons[i].id);
        written += c->lessons[i].file != NULL;
        done += c->lessons[i].file && x && x->done;
    }
    printf("kvscope lessons: %zu written, %zu done; %zu waiting for parts of the engine still to come\n\n",
           written, done, c->n - written);
    for (size_t i = 0; i < c->n; i++) {
        const Lesson *l = &c->lessons[i];
        const ProgressEntry *x = progress_get(p, l->id);
        if (!l->file) {
            printf("  [-] %2zu  %-20s %s\n               waiting for %s\n", l->number, l->id, l->title,
                   l->waiting_for);
            continue;
        }
        char extra[64] = "";
        if (x && x->quiz_total)
            snprintf(extra, sizeof extra, "  (quiz %d/%d)", x->quiz_right, x->quiz_total);
        printf("  [%c] %2zu  %-20s %s%s%s\n", x && x->done ? 'x' : ' ', l->number, l->id, l->title,
               l->ex.present ? " + exercise" : "", extra);
    }
    printf("\n[x] done: its checks (and exercise) passed.  `kvscope lesson show N` reads one.\n");
}

static void print_footer(const Course *c, const Lesson *l)
{
    printf("----\n");
    printf("check it:   kvscope lesson check %zu\n", l->number);
    if (l->n_quiz)
        printf("quiz:       kvscope lesson quiz %zu   (%zu question%s)\n", l->number, l->n_quiz,
               l->n_quiz == 1 ? "" : "s");
    if (l->ex.present) {
        char starter[PATH_MAX], shown[PATH_MAX];
        course_path(c, l->ex.starter, starter, sizeof starter);
        exec_display_path(starter, shown, sizeof shown);
        const char *base = strrchr(l->ex.starter, '/');
        base = base ? base + 1 : l->ex.starter;
        printf("exercise:   %s\n            cp %s my_%s\n            (fill in the TODOs, then)\n"
               "            kvscope lesson check %zu --file my_%s\n",
               l->ex.title, shown, base, l->number, base);
    }
}

static int not_written(const Lesson *l)
{
    Err e;
    err_set(&e, ERR_RUNTIME, "lesson %zu (%s) is not written yet: it waits for %s", l->number, l->id,
            l->waiting_for);
    return cli_fail(&e);
}

/* The lesson file at path; an error names it as the user can find it. */
static int load_doc(const char *path, LessonDoc *d, Err *e)
{
    if (doc_load(path, d, e) == 0)
        return 0;
    char shown[PATH_MAX];
    exec_display_path(path, shown, sizeof shown);
    return err_wrap(e, "%s", shown);
}

static int show(const Course *c, const Lesson *l)
{
    if (!l->file)
        return not_written(l);
    char path[PATH_MAX + 64];
    course_path(c, l->file, path, sizeof path);
    LessonDoc d;
    Err e = { 0 };
    if (load_doc(path, &d, &e) < 0)
        return cli_fail(&e);
    doc_render(stdout, &d);
    doc_free(&d);
    print_footer(c, l);
    return EXIT_OK;
}

/* --- check ------------------------------------------------------------------ */

static void indent(const char *text, const char *pad, size_t max_lines)
{
    size_t n = 0;
    const char *p = text;
    while (*p && n < max_lines) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        printf("%s%.*s\n", pad, len, p);
        p += len + (nl ? 1 : 0);
        n++;
    }
    if (*p)
        printf("%s...\n", pad);
}

/* The progress line as step k of n starts: what runs. */
static void show_step(ProgressLine *line, size_t k, size_t n, const char *what)
{
    progress_line_detail(line, what);
    progress_line_count(line, k, n);
}

/* Run every check block of d, printing ok or what failed; *passed of
 * *checks; the line counts them of steps. A measured check (a figure of
 * this machine) whose command ran but whose value is outside its tolerance
 * is a warning and counts as passed. -1 with e set when a check could not
 * be run at all. */
static int run_checks(const LessonDoc *d, ProgressLine *line, size_t steps, size_t *checks, size_t *passed, Err *e)
{
    *checks = *passed = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (d->blocks[i].kind != BLK_CHECK)
            continue;
        const CheckSpec *ck = &d->blocks[i].check;
        show_step(line, (*checks)++, steps, ck->id);
        CheckOutcome o;
        int rc = run_check(ck, &o, e);
        progress_line_clear(line);
        if (rc < 0)
            return -1;
        if (o.pass) {
            ++*passed;
            printf("  ok    %-34s %s\n", ck->id, o.actual_text);
            continue;
        }
        if (*ck->measured && o.have_value) { /* this machine's figure, busy or unusual: shown, not held against it */
            ++*passed;
            printf("  warn  %-34s %s, expected %s within %s: measured on this machine, so not counted\n"
                   "        hint:     %s\n", ck->id, o.actual_text, ck->expect, ck->tol, ck->hint);
            continue;
        }
        printf("  FAIL  %s\n", ck->id);
        printf("        expected: %s%s%s\n", ck->expect, *ck->tol ? " within " : "", ck->tol);
        if (o.have_value)
            printf("        actual:   %s\n", o.actual_text);
        else
            printf("        actual:   no value: %s\n", o.problem);
        printf("        hint:     %s\n", ck->hint);
        printf("        command:  %s\n", ck->run);
        printf("                  (then %s)\n", ck->value);
    }
    return 0;
}

/* Build and check the lesson's exercise (file, or the starter), the line
 * cleared before the outcome prints; *ok says whether it passed. -1 with e
 * set when it could not be tried. */
static int check_exercise(const Course *c, const Lesson *l, const char *file, ProgressLine *line, int *ok, Err *e)
{
    ExerciseOutcome o;
    int rc = run_exercise(c, &l->ex, file, &o, e);
    progress_line_clear(line);
    if (rc < 0)
        return -1;
    char starter[PATH_MAX], shown[PATH_MAX];
    course_path(c, l->ex.starter, starter, sizeof starter);
    exec_display_path(starter, shown, sizeof shown);
    printf("exercise %s: %s (%s)\n", l->ex.id, l->ex.title, file ? file : shown);
    *ok = o.compiled && o.passed;
    printf("  %s\n", !o.compiled ? "FAIL  it does not compile:"
                   : !o.passed  ? "FAIL  the checker compared it with the reference behaviour:"
                                : "ok    the checker compared it with the reference behaviour:");
    indent(o.output ? o.output : "", "        ", 40);
    if (!*ok) {
        printf("        hint:     %s\n", l->ex.hint);
        printf("        build it by hand: %s\n", o.build_cmd);
    }
    exercise_outcome_free(&o);
    return 0;
}

static int check(const Course *c, const Lesson *l, const char *file, int quiet)
{
    if (!l->file)
        return not_written(l);
    char path[PATH_MAX + 64];
    course_path(c, l->file, path, sizeof path);
    LessonDoc d;
    Err e = { 0 };
    if (load_doc(path, &d, &e) < 0)
        return cli_fail(&e);
    if (file && access(file, R_OK) != 0)
        err_set(&e, ERR_RUNTIME, "cannot read '%s' (the exercise file to check)", file);
    else if (file && !l->ex.present)
        err_set(&e, ERR_USAGE, "lesson %zu has no exercise: --file has nothing to check", l->number);
    if (e.kind != ERR_NONE) {
        doc_free(&d);
        return cli_fail(&e);
    }
    printf("lesson %zu, %s: %s\n", l->number, l->id, l->title);
    size_t checks, passed, steps = l->ex.present; /* every check, and the exercise */
    for (size_t i = 0; i < d.n; i++)
        steps += d.blocks[i].kind == BLK_CHECK;
    char label[64];
    snprintf(label, sizeof label, "kvscope lesson check %zu", l->number);
    ProgressLine line;
    progress_line_init(&line, quiet);
    progress_line_begin(&line, label, "step");
    int rc = run_checks(&d, &line, steps, &checks, &passed, &e);
    doc_free(&d);
    if (rc == 0 && checks == 0) { /* every lesson checks its figures: none is a file cut short */
        char shown[PATH_MAX];
        exec_display_path(path, shown, sizeof shown);
        err_set(&e, ERR_RUNTIME, "%s has no checks: nothing was verified, so the lesson is not done", shown);
        progress_line_end(&line);
        return cli_fail(&e);
    }
    int ex_ok = 1;
    if (rc == 0 && l->ex.present) {
        show_step(&line, checks, steps, "the exercise");
        rc = check_exercise(c, l, file, &line, &ex_ok, &e);
    }
    progress_line_end(&line);
    if (rc < 0)
        return cli_fail(&e);

    printf("lesson %zu: %zu of %zu checks pass%s", l->number, passed, checks,
           l->ex.present ? (ex_ok ? ", exercise passes" : ", exercise fails") : "");
    if (passed != checks || !ex_ok) {
        printf("\nre-run: kvscope lesson check %zu%s%s\n", l->number, file ? " --file " : "", file ? file : "");
        return EXIT_RUNTIME;
    }
    Progress p;
    progress_load(&p);
    progress_mark_done(&p, l->id);
    if (progress_save(&p, &e) < 0) {
        printf("\n");
        fflush(stdout);
        return cli_fail(&e);
    }
    printf("; done.\n");
    if (l->ex.present && !file)
        printf("(you checked the starter in lessons/exercises/ itself)\n");
    return EXIT_OK;
}

/* --- lint ------------------------------------------------------------------- */

static void lint_step(void *user, const char *what, size_t done, size_t total)
{
    show_step(user, done, total, what);
}

static void lint_clear(void *user)
{
    progress_line_clear(user);
}

static int lint(const Course *c, int quiet)
{
    ProgressLine line;
    progress_line_init(&line, quiet);
    progress_line_begin(&line, "kvscope lesson lint", "command");
    const LintProgress lp = { lint_step, lint_clear, &line };
    size_t problems = lesson_lint(c, stdout, &lp);
    progress_line_end(&line);
    return problems ? EXIT_RUNTIME : EXIT_OK;
}

/* --- the command ----------------------------------------------------------- */

enum { SUB_RESUME = -1, SUB_LIST, SUB_SHOW, SUB_CHECK, SUB_QUIZ, SUB_LINT, N_SUBS };

/* The subcommand, its lesson (N for show, check and quiz), --file (for
 * check) and --quiet (check and lint). 1 after --help, -1 after a usage
 * error (printed), else 0. */
static int parse_args(int argc, char **argv, int *which, const char **key, const char **file, int *quiet)
{
    static const char *const subs[N_SUBS] = { "list", "show", "check", "quiz", "lint" };
    const char *sub = argc > 1 ? argv[1] : NULL;
    if (sub && (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0))
        return 1;
    *which = SUB_RESUME;
    for (int i = 0; sub && i < N_SUBS; i++)
        if (strcmp(sub, subs[i]) == 0)
            *which = i;
    if (sub && *which == SUB_RESUME)
        return cli_usage("lesson", "unknown lesson command '%s' (list, show, check, quiz, lint)", sub), -1;
    const int takes_lesson = *which >= SUB_SHOW && *which <= SUB_QUIZ;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
        if (strcmp(argv[i], "--file") == 0) {
            if (*which != SUB_CHECK)
                return cli_usage("lesson", "--file goes with `lesson check`"), -1;
            if (i + 1 >= argc)
                return cli_usage("lesson", "'--file' needs a value"), -1;
            *file = argv[++i];
        } else if (strncmp(argv[i], "--file=", 7) == 0 && *which == SUB_CHECK) {
            *file = argv[i] + 7;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            if (*which != SUB_CHECK && *which != SUB_LINT)
                return cli_usage("lesson", "--quiet goes with `lesson check` and `lesson lint`"), -1;
            *quiet = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage("lesson", "unknown option '%s'", argv[i]), -1;
        } else if (!*key && takes_lesson) {
            *key = argv[i];
        } else {
            return cli_usage("lesson", "unexpected argument '%s'", argv[i]), -1;
        }
    }
    if (takes_lesson && !*key)
        return cli_usage("lesson", "`lesson %s` needs a lesson number or id", sub), -1;
    return 0;
}

int cmd_lesson(int argc, char **argv)
{
    int which;
    const char *key = NULL, *file = NULL;
    int quiet = 0;
    int pr = parse_args(argc, argv, &which, &key, &file, &quiet);
    if (pr == 1) {
        help();
        return EXIT_OK;
    }
    if (pr < 0)
        return EXIT_USAGE;

    Course c;
    Err e = { 0 };
    if (course_load(&c, &e) < 0)
        return cli_fail(&e);
    int rc = EXIT_OK;
    const Lesson *l = NULL;
    if (key && !(l = course_find(&c, key, &e))) {
        rc = cli_fail(&e);
        goto done;
    }
    Progress p;
    switch (which) {
    case SUB_RESUME: /* the list, and the lesson to open next */
        progress_load(&p);
        print_list(&c, &p);
        l = first_unfinished(&c, &p);
        if (!l)
            printf("\nEvery written lesson is done. More come as the engine grows.\n");
        else
            printf("\nNext: lesson %zu, %s. Read it with\n    kvscope lesson show %zu\nthen check it with "
                   "`kvscope lesson check %zu`.\n", l->number, l->title, l->number, l->number);
        break;
    case SUB_LIST:
        progress_load(&p);
        print_list(&c, &p);
        break;
    case SUB_SHOW:
        rc = show(&c, l);
        break;
    case SUB_CHECK:
        rc = check(&c, l, file, quiet);
        break;
    case SUB_QUIZ:
        rc = l->file ? lesson_quiz(l) : not_written(l);
        break;
    case SUB_LINT:
        rc = lint(&c, quiet);
        break;
    }
done:
    course_free(&c);
    return rc;
}
