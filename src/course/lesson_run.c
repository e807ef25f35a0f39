/* lesson_run.c: checks, quiz answers and exercises, run against the engine. */
#include "course/lesson_run.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "course/lesson_exec.h"
#include "course/lesson_value.h"

/* Outputs of the commands run so far in this process: a lesson asks the same
 * command for several figures, and the lint asks every lesson's. */
#define MEMO_MAX 128
static struct {
    char *cmd;
    ExecResult r;
} memo[MEMO_MAX];
static size_t memo_n;

static char *dup_text(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* Run cmd once per process; *r is a copy the caller frees. */
static int run_memo(const char *cmd, ExecResult *r, Err *e)
{
    for (size_t i = 0; i < memo_n; i++)
        if (strcmp(memo[i].cmd, cmd) == 0) {
            r->status = memo[i].r.status;
            r->out = dup_text(memo[i].r.out);
            r->err = dup_text(memo[i].r.err);
            if (!r->out || !r->err) {
                exec_result_free(r);
                return err_set(e, ERR_RUNTIME, "out of memory");
            }
            return 0;
        }
    if (exec_kvscope(cmd, r, e) < 0)
        return -1;
    if (memo_n < MEMO_MAX) {
        memo[memo_n].cmd = dup_text(cmd);
        memo[memo_n].r.status = r->status;
        memo[memo_n].r.out = dup_text(r->out);
        memo[memo_n].r.err = dup_text(r->err);
        if (memo[memo_n].cmd && memo[memo_n].r.out && memo[memo_n].r.err)
            memo_n++;
        else {
            free(memo[memo_n].cmd);
            exec_result_free(&memo[memo_n].r);
        }
    }
    return 0;
}

void run_forget(const char *cmd)
{
    for (size_t i = 0; i < memo_n; i++)
        if (strcmp(memo[i].cmd, cmd) == 0) {
            free(memo[i].cmd);
            exec_result_free(&memo[i].r);
            memo[i] = memo[--memo_n];
            return;
        }
}

/* Run cmd and read expr from its output; on failure fill problem. */
static int command_value(const char *cmd, const char *expr, double *out, char *problem, size_t cap, Err *e)
{
    ExecResult r;
    if (run_memo(cmd, &r, e) < 0)
        return -1;
    int rc = -1;
    if (r.status != 0) {
        char *nl = strchr(r.err, '\n');
        if (nl)
            *nl = '\0';
        snprintf(problem, cap, "the command failed (exit %d): %s", r.status, *r.err ? r.err : "no message");
        rc = 1;
        goto done;
    }
    Err pe = { 0 };
    json_t *root = lv_parse_output(r.out, &pe);
    if (!root) {
        snprintf(problem, cap, "%s", pe.msg);
        rc = 1;
        goto done;
    }
    if (lv_eval(root, expr, out, &pe) < 0) {
        snprintf(problem, cap, "%s", pe.msg);
        rc = pe.kind == ERR_USAGE ? -1 : 1;
        if (rc < 0)
            *e = pe;
    } else {
        rc = 0;
    }
    json_decref(root);
done:
    exec_result_free(&r);
    return rc;
}

int run_check(const CheckSpec *c, CheckOutcome *o, Err *e)
{
    memset(o, 0, sizeof *o);
    LvFigure fig;
    LvTol tol;
    if (lv_parse_figure(c->expect, &fig, e) < 0 || lv_parse_tol(c->tol, &tol, e) < 0 ||
        lv_check_syntax(c->value, e) < 0)
        return err_wrap(e, "check %s", c->id);
    double v;
    int rc = command_value(c->run, c->value, &v, o->problem, sizeof o->problem, e);
    if (rc < 0)
        return err_wrap(e, "check %s", c->id);
    if (rc > 0)
        return 0;
    o->have_value = 1;
    o->actual = v;
    if (fig.is_bool)
        snprintf(o->actual_text, sizeof o->actual_text, "%s", v != 0 ? "yes" : "no");
    else
        lv_format(o->actual_text, sizeof o->actual_text, v, tol.given ? lv_decimals(c->expect) : -1);
    if (!fig.is_bool && !tol.given && fig.half_ulp > 0) /* show it at the precision written */
        lv_format(o->actual_text, sizeof o->actual_text, v, lv_decimals(c->expect));
    o->pass = fig.is_bool ? ((v != 0) == (fig.value != 0)) : lv_matches(v, &fig, &tol);
    if (!o->pass && !fig.is_bool && strcmp(o->actual_text, c->expect) == 0) /* same text, not the same number */
        lv_format(o->actual_text, sizeof o->actual_text, v, -1);
    return 0;
}

/* --- quizzes ----------------------------------------------------------------- */

static void substitute(const char *tmpl, const char *choice, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *p = tmpl; *p && k + 1 < cap;) {
        if (strncmp(p, "{choice}", 8) == 0) {
            k += (size_t)snprintf(out + k, cap - k, "%s", choice);
            if (k >= cap)
                k = cap - 1;
            p += 8;
        } else {
            out[k++] = *p++;
        }
    }
    out[k] = '\0';
}

int run_quiz_answer(const QuizQuestion *q, double *value, int *choice, char *how, size_t how_cap, Err *e)
{
    char problem[512];
    *choice = -1;
    if (q->n_choices == 0) {
        snprintf(how, how_cap, "%s   (then %s)", q->run, q->value);
        int rc = command_value(q->run, q->value, value, problem, sizeof problem, e);
        if (rc > 0)
            return err_set(e, ERR_RUNTIME, "quiz %s: %s", q->id, problem);
        return rc < 0 ? err_wrap(e, "quiz %s", q->id) : 0;
    }
    double best = 0, vals[8];
    int best_i = -1, ties = 0;
    for (size_t i = 0; i < q->n_choices; i++) {
        char cmd[1024];
        substitute(q->run, q->choices[i], cmd, sizeof cmd);
        int rc = command_value(cmd, q->value, &vals[i], problem, sizeof problem, e);
        if (rc > 0)
            return err_set(e, ERR_RUNTIME, "quiz %s, choice %s: %s", q->id, q->choices[i], problem);
        if (rc < 0)
            return err_wrap(e, "quiz %s", q->id);
        int better = best_i < 0 || (strcmp(q->pick, "max") == 0 ? vals[i] > best : vals[i] < best);
        if (best_i >= 0 && vals[i] == best)
            ties++;
        if (better) {
            best = vals[i];
            best_i = (int)i;
            ties = 0;
        }
    }
    if (ties)
        return err_set(e, ERR_RUNTIME, "quiz %s: more than one choice has the %s value %g", q->id, q->pick, best);
    *choice = best_i;
    *value = best;
    snprintf(how, how_cap, "for each choice, %s; the answer is the one with the %s %s", q->run,
             strcmp(q->pick, "max") == 0 ? "largest" : "smallest", q->value);
    return 0;
}

int quiz_answer_number(const char *typed, double *v)
{
    while (isspace((unsigned char)*typed))
        typed++;
    char num[64];
    size_t k = 0;
    for (const char *p = typed; *p && k + 1 < sizeof num; p++) {
        if (*p == ',')
            continue;
        if (!(isdigit((unsigned char)*p) || *p == '.' || *p == '-' || *p == '+' || *p == 'e' || *p == 'E'))
            break;
        num[k++] = *p;
    }
    num[k] = '\0';
    char *end;
    *v = strtod(num, &end);
    return end == num ? -1 : 0;
}

int quiz_answer_matches(const QuizQuestion *q, const char *typed, double value, int choice)
{
    while (isspace((unsigned char)*typed))
        typed++;
    if (q->n_choices) {
        size_t n = strlen(typed);
        while (n && isspace((unsigned char)typed[n - 1]))
            n--;
        if (n == 1 && tolower((unsigned char)typed[0]) == 'a' + choice)
            return 1;
        return n == strlen(q->choices[choice]) && strncasecmp(typed, q->choices[choice], n) == 0;
    }
    double v;
    if (quiz_answer_number(typed, &v) < 0)
        return 0;
    LvTol tol;
    if (lv_parse_tol(q->tol, &tol, NULL) < 0 || !tol.given) {
        memset(&tol, 0, sizeof tol);
        tol.given = 1;
        if (value != floor(value)) /* a fraction: 1% will do */
            tol.rel = 0.01;
    }
    LvFigure fig = { .value = value };
    return lv_matches(v, &fig, &tol);
}

/* --- exercises ----------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define KV_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KV_SANITIZED 1
#endif
#endif

/* The compiler that built kvscope, so the library links: $CC overrides. */
static const char *compiler(void)
{
    const char *cc = getenv("CC");
    if (cc && *cc)
        return cc;
#if defined(__clang__)
    return "clang";
#else
    return "cc";
#endif
}

static const char *extra_flags(void)
{
#ifdef KV_SANITIZED
    return " -fsanitize=address,undefined";
#else
    return "";
#endif
}

/* out = a + b, or "" when it does not fit (then nothing will be found there). */
static void join(char *out, size_t cap, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s%s", a, b);
    if (n < 0 || (size_t)n >= cap)
        out[0] = '\0';
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

void exercise_outcome_free(ExerciseOutcome *o)
{
    free(o->output);
    o->output = NULL;
}

/* Where an exercise's pieces are: the learner's file, the checker, the
 * headers (src/ and the starter's folder), the library, the program name. */
typedef struct {
    char learner[PATH_MAX], harness[PATH_MAX], src[PATH_MAX], exdir[PATH_MAX], lib[PATH_MAX];
    char prog[64]; /* the checker's file name without .c */
} ExercisePaths;

static int find_paths(const Course *c, const Exercise *x, const char *learner_file, ExercisePaths *p, Err *e)
{
    if (!learner_file)
        course_path(c, x->starter, p->learner, sizeof p->learner);
    else if (!realpath(learner_file, p->learner))
        return err_set(e, ERR_RUNTIME, "cannot read '%s' (the exercise file to check)", learner_file);
    if (!file_exists(p->learner))
        return err_set(e, ERR_USAGE, "'%s' is not a file", learner_file ? learner_file : x->starter);
    course_path(c, x->harness, p->harness, sizeof p->harness);
    join(p->src, sizeof p->src, c->root, "/src");
    /* the exercise headers sit beside the starters */
    course_path(c, x->starter, p->exdir, sizeof p->exdir);
    char *slash = strrchr(p->exdir, '/');
    if (slash)
        *slash = '\0';
    /* the library: beside the binary (a build), in the tree's build/, or where make install put it */
    char self[PATH_MAX];
    if (exec_self_dir(self, sizeof self) < 0)
        return err_set(e, ERR_RUNTIME, "cannot find this executable's directory");
    join(p->lib, sizeof p->lib, self, "/libkvscope.a");
    if (!file_exists(p->lib))
        join(p->lib, sizeof p->lib, c->root, "/build/libkvscope.a");
    if (!file_exists(p->lib))
        join(p->lib, sizeof p->lib, c->root, "/lib/libkvscope.a");
    if (!file_exists(p->lib))
        return err_set(e, ERR_RUNTIME, "cannot find libkvscope.a beside kvscope (run `make` first)");
    const char *base = strrchr(x->harness, '/');
    base = base ? base + 1 : x->harness;
    snprintf(p->prog, sizeof p->prog, "%.*s", (int)strcspn(base, "."), base);
    return 0;
}

/* The build command with every path made by `path` (shown or quoted),
 * the program written to `out_prog`. */
static int build_command(const ExercisePaths *p, void (*path)(const char *, char *, size_t), const char *out_prog,
                         char *cmd, size_t cap)
{
    char src[PATH_MAX + 8], ex[PATH_MAX + 8], learner[PATH_MAX + 8], harness[PATH_MAX + 8], lib[PATH_MAX + 8];
    path(p->src, src, sizeof src);
    path(p->exdir, ex, sizeof ex);
    path(p->learner, learner, sizeof learner);
    path(p->harness, harness, sizeof harness);
    path(p->lib, lib, sizeof lib);
    int n = snprintf(cmd, cap, "%s -std=c11 -Wall%s -I%s -I%s %s %s %s $(pkg-config --libs gsl inih jansson) -lm -pthread -o %s",
                     compiler(), extra_flags(), src, ex, learner, harness, lib, out_prog);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Run the built checker with the data it needs; its output after the
 * compiler's warnings (taken over) into o. */
static int run_checker(const Course *c, const char *q_exe, char *warnings, ExerciseOutcome *o, Err *e)
{
    static char data_env[PATH_MAX + 16];
    char *env[2] = { NULL, NULL };
    const char *have = getenv("KVSCOPE_DATA");
    if (!have || !*have) {
        char root_data[PATH_MAX + 8];
        join(root_data, sizeof root_data, c->root, "/data");
        join(data_env, sizeof data_env, "KVSCOPE_DATA=", root_data);
        env[0] = data_env;
    }
    ExecResult r;
    int rc = exec_shell(q_exe, env, &r, e);
    if (rc == 0) {
        o->passed = r.status == 0;
        size_t nw = warnings ? strlen(warnings) : 0, nr = strlen(r.out);
        o->output = malloc(nw + nr + 1);
        if (o->output) {
            memcpy(o->output, warnings ? warnings : "", nw);
            memcpy(o->output + nw, r.out, nr + 1);
        }
        exec_result_free(&r);
    }
    free(warnings);
    return rc;
}

int run_exercise(const Course *c, const Exercise *x, const char *learner_file, ExerciseOutcome *o, Err *e)
{
    memset(o, 0, sizeof *o);
    ExercisePaths p;
    if (find_paths(c, x, learner_file, &p, e) < 0)
        return -1;
    /* as the learner would type it */
    char shown_cmd[sizeof o->build_cmd];
    if (build_command(&p, exec_display_path, p.prog, shown_cmd, sizeof shown_cmd) < 0 ||
        snprintf(o->build_cmd, sizeof o->build_cmd, "%s && ./%s", shown_cmd, p.prog) >= (int)sizeof o->build_cmd)
        return err_set(e, ERR_RUNTIME, "the paths of the exercise are too long");

    /* as it runs: absolute paths, a private directory for the program */
    const char *tmpdir = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/kvscope-exercise-XXXXXX", tmpdir && tmpdir[0] == '/' ? tmpdir : P_tmpdir);
    if (!mkdtemp(dir))
        return err_set(e, ERR_RUNTIME, "cannot make a temporary directory to build the exercise");
    char exe[PATH_MAX + 80], q_exe[PATH_MAX + 96], cmd[8 * PATH_MAX];
    snprintf(exe, sizeof exe, "%s/%s", dir, p.prog);
    exec_sh_quote(exe, q_exe, sizeof q_exe);
    ExecResult r;
    int rc = build_command(&p, exec_sh_quote, q_exe, cmd, sizeof cmd) < 0
                 ? err_set(e, ERR_RUNTIME, "the paths of the exercise are too long")
                 : exec_shell(cmd, NULL, &r, e);
    if (rc == 0) {
        o->compiled = r.status == 0 && file_exists(exe);
        if (o->compiled) /* the compiler's warnings come before the checker's verdict */
            rc = run_checker(c, q_exe, r.out, o, e);
        else
            o->output = r.out;
        r.out = NULL;
        exec_result_free(&r);
    }
    unlink(exe);
    rmdir(dir);
    return rc;
}
