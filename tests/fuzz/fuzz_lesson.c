/* fuzz_lesson.c: libFuzzer target for the lesson document parser
 * (course/lesson_doc.h).
 *
 * Each input is parsed as a lesson's Markdown; a document that parses is
 * rendered (to /dev/null), its prose searched for numbers and its figures
 * linted, which is what `kvscope lesson` and `lesson lint` do with it. */
#include "course/lesson_doc.h"
#include "fuzz_util.h"

static void count_problem(void *user, size_t line, const char *msg)
{
    (void)line;
    if (!msg || !*msg)
        abort();
    ++*(size_t *)user;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    char *s = fuzz_cstr(data, size);
    if (!s)
        return 0;
    LessonDoc d;
    Err e;
    if (doc_parse(s, &d, &e) < 0) {
        fuzz_check_err(&e, s);
        if (d.n || d.blocks)
            abort(); /* a failed parse leaves nothing to free */
    } else {
        doc_render(sink, &d);
        DocFigure fig[16];
        for (size_t i = 0; i < d.n; i++) {
            size_t n = doc_numbers(d.blocks[i].text, d.blocks[i].line, 0, fig, 16);
            for (size_t k = 0; k < n && k < 16; k++)
                if (!memchr(fig[k].text, '\0', sizeof fig[k].text))
                    abort();
            (void)doc_numbers(d.blocks[i].text, d.blocks[i].line, 1, fig, 16);
        }
        size_t problems = 0;
        if (doc_lint_figures(&d, count_problem, &problems) != problems)
            abort();
        doc_free(&d);
    }
    free(s);
    return 0;
}
