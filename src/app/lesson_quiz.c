/* lesson_quiz.c: `kvscope lesson quiz N`: each question asked, its answer
 * computed by kvscope when the learner gives theirs, the score kept in the
 * learner's progress (lesson_quiz.h). */
#include "app/lesson_quiz.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "course/lesson_progress.h"
#include "course/lesson_run.h"
#include "course/lesson_value.h"

/* Read one line of stdin into buf (without its newline); 0 at EOF. */
static int read_answer(char *buf, size_t cap)
{
    fflush(stdout);
    if (!fgets(buf, (int)cap, stdin))
        return 0;
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!isatty(0)) /* piped: show what was answered, so the transcript reads well */
        printf("%s\n", buf);
    return 1;
}

/* Ask question q until an answer (or EOF: *line empty, returns 0); `hint`
 * shows the hint, and a numeric question asks again for what is not a
 * number. *hinted says whether the hint was shown. */
static int ask(const QuizQuestion *q, char *line, size_t cap, int *hinted)
{
    *hinted = 0;
    for (;;) {
        printf("answer%s%s%s> ", *q->unit ? " (" : "", q->unit, *q->unit ? ")" : "");
        if (!read_answer(line, cap)) {
            printf("\n(no more answers)\n");
            return 0;
        }
        const char *t = line + strspn(line, " ");
        double v;
        if (strcmp(t, "hint") == 0 || strcmp(t, "?") == 0) {
            printf("hint: %s%s\n", q->hint, *hinted ? " (that is the only hint)" : "");
            *hinted = 1;
        } else if (*t && !q->n_choices && quiz_answer_number(t, &v) < 0) {
            printf("a number is expected (such as 15,150 or 52.4); `hint` shows the hint, an empty line skips\n");
        } else {
            return 1;
        }
    }
}

/* kvscope computes q's answer and grades `given`: 1 right, 0 not, -1 when
 * the computation failed (e says why). */
static int grade(const QuizQuestion *q, const char *given, int hinted, Err *e)
{
    double v;
    int choice;
    char how[1024], expected[128];
    if (run_quiz_answer(q, &v, &choice, how, sizeof how, e) < 0)
        return -1;
    if (choice >= 0)
        snprintf(expected, sizeof expected, "%c) %s", 'a' + choice, q->choices[choice]);
    else
        lv_format_answer(expected, sizeof expected, v);
    int right = 0;
    if (!*given)
        printf("skipped: the answer is %s\n", expected);
    else if ((right = quiz_answer_matches(q, given, v, choice)))
        printf("right: %s\n", expected);
    else {
        printf("wrong: the answer is %s (you said %s)\n", expected, given);
        if (!hinted)
            printf("hint: %s\n", q->hint);
    }
    printf("computed by: %s\n", how);
    return right;
}

int lesson_quiz(const Lesson *l)
{
    if (!l->n_quiz) {
        Err e;
        err_set(&e, ERR_RUNTIME, "lesson %zu (%s) has no quiz; `kvscope lesson check %zu` runs its checks",
                l->number, l->id, l->number);
        return cli_fail(&e);
    }
    printf("Quiz on lesson %zu, %s: %zu question%s. Answer with a number or a choice;\n"
           "`hint` shows a hint, an empty line skips. kvscope computes each answer when you give yours.\n",
           l->number, l->title, l->n_quiz, l->n_quiz == 1 ? "" : "s");
    int right = 0;
    for (size_t i = 0; i < l->n_quiz; i++) {
        const QuizQuestion *q = &l->quiz[i];
        printf("\n%zu. %s\n", i + 1, q->ask);
        for (size_t k = 0; k < q->n_choices; k++)
            printf("   %c) %s\n", (int)('a' + k), q->choices[k]);
        char line[256];
        int hinted;
        if (!ask(q, line, sizeof line, &hinted))
            break;
        Err e = { 0 };
        int got = grade(q, line + strspn(line, " "), hinted, &e);
        if (got < 0)
            return cli_fail(&e);
        right += got;
    }
    printf("\n%d of %zu right.\n", right, l->n_quiz);
    Progress p;
    progress_load(&p);
    progress_record_quiz(&p, l->id, right, (int)l->n_quiz);
    Err e = { 0 };
    if (progress_save(&p, &e) < 0)
        return cli_fail(&e);
    return EXIT_OK;
}

