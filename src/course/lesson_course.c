/* lesson_course.c: load lessons/manifest.json into Lessons. */
#include "course/lesson_course.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "course/lesson_exec.h"
#include "util/parse.h"

/* A string field; "" when absent and optional, an error when required. */
static int get_str(json_t *obj, const char *key, int required, const char **out, const char *where, Err *e)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        *out = "";
        return required ? err_set(e, ERR_RUNTIME, "%s has no \"%s\"", where, key) : 0;
    }
    if (!json_is_string(v))
        return err_set(e, ERR_RUNTIME, "%s: \"%s\" is not a string", where, key);
    *out = json_string_value(v);
    return 0;
}

static int load_question(json_t *q, QuizQuestion *out, const char *where, Err *e)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(q))
        return err_set(e, ERR_RUNTIME, "%s: a quiz question is not an object", where);
    if (get_str(q, "id", 1, &out->id, where, e) < 0 || get_str(q, "ask", 1, &out->ask, out->id, e) < 0 ||
        get_str(q, "run", 1, &out->run, out->id, e) < 0 || get_str(q, "value", 1, &out->value, out->id, e) < 0 ||
        get_str(q, "hint", 0, &out->hint, out->id, e) < 0 || get_str(q, "tol", 0, &out->tol, out->id, e) < 0 ||
        get_str(q, "unit", 0, &out->unit, out->id, e) < 0 || get_str(q, "pick", 0, &out->pick, out->id, e) < 0)
        return -1;
    json_t *ch = json_object_get(q, "choices");
    if (ch) {
        if (!json_is_array(ch) || json_array_size(ch) < 2 ||
            json_array_size(ch) > sizeof out->choices / sizeof out->choices[0])
            return err_set(e, ERR_RUNTIME, "%s: \"choices\" must list 2 to 8 strings", out->id);
        for (size_t i = 0; i < json_array_size(ch); i++) {
            if (!json_is_string(json_array_get(ch, i)))
                return err_set(e, ERR_RUNTIME, "%s: a choice is not a string", out->id);
            out->choices[out->n_choices++] = json_string_value(json_array_get(ch, i));
        }
        if (strcmp(out->pick, "max") != 0 && strcmp(out->pick, "min") != 0)
            return err_set(e, ERR_RUNTIME, "%s: a choice question needs \"pick\": \"max\" or \"min\"",
                           out->id);
    }
    return 0;
}

static int load_lesson(json_t *l, Lesson *out, size_t number, Err *e)
{
    char where[64];
    snprintf(where, sizeof where, "lesson %zu", number);
    memset(out, 0, sizeof *out);
    out->number = number;
    if (!json_is_object(l))
        return err_set(e, ERR_RUNTIME, "%s is not an object", where);
    const char *file = "";
    if (get_str(l, "id", 1, &out->id, where, e) < 0 || get_str(l, "title", 1, &out->title, where, e) < 0 ||
        get_str(l, "file", 0, &file, where, e) < 0 || get_str(l, "sources", 0, &out->sources, where, e) < 0 ||
        get_str(l, "waiting_for", 0, &out->waiting_for, where, e) < 0 ||
        get_str(l, "probe", 0, &out->probe, where, e) < 0)
        return -1;
    out->file = *file ? file : NULL;
    if (!out->file && !*out->waiting_for)
        return err_set(e, ERR_RUNTIME, "%s (%s) has neither \"file\" nor \"waiting_for\"", where,
                       out->id);
    json_t *quiz = json_object_get(l, "quiz");
    if (quiz) {
        if (!json_is_array(quiz))
            return err_set(e, ERR_RUNTIME, "%s: \"quiz\" is not a list", where);
        out->n_quiz = json_array_size(quiz);
        out->quiz = calloc(out->n_quiz ? out->n_quiz : 1, sizeof *out->quiz);
        if (!out->quiz)
            return err_set(e, ERR_RUNTIME, "out of memory");
        for (size_t i = 0; i < out->n_quiz; i++)
            if (load_question(json_array_get(quiz, i), &out->quiz[i], out->id, e) < 0)
                return -1;
    }
    json_t *ex = json_object_get(l, "exercise");
    if (ex) {
        Exercise *x = &out->ex;
        if (!json_is_object(ex))
            return err_set(e, ERR_RUNTIME, "%s: \"exercise\" is not an object", where);
        x->present = 1;
        if (get_str(ex, "id", 1, &x->id, where, e) < 0 || get_str(ex, "title", 1, &x->title, x->id, e) < 0 ||
            get_str(ex, "starter", 1, &x->starter, x->id, e) < 0 ||
            get_str(ex, "solution", 1, &x->solution, x->id, e) < 0 ||
            get_str(ex, "harness", 1, &x->harness, x->id, e) < 0 || get_str(ex, "hint", 0, &x->hint, x->id, e) < 0)
            return -1;
        json_t *wrong = json_object_get(ex, "wrong");
        if (wrong) {
            if (!json_is_array(wrong) || json_array_size(wrong) > sizeof x->wrong / sizeof x->wrong[0])
                return err_set(e, ERR_RUNTIME, "%s: \"wrong\" must list at most 8 objects", x->id);
            for (size_t i = 0; i < json_array_size(wrong); i++) {
                json_t *w = json_array_get(wrong, i);
                if (!json_is_object(w))
                    return err_set(e, ERR_RUNTIME, "%s: a wrong solution is not an object", x->id);
                if (get_str(w, "file", 1, &x->wrong[i], x->id, e) < 0 ||
                    get_str(w, "says", 1, &x->wrong_says[i], x->id, e) < 0)
                    return -1;
                x->n_wrong++;
            }
        }
    }
    return 0;
}

int course_load(Course *c, Err *e)
{
    memset(c, 0, sizeof *c);
    if (exec_find_course(c->dir, sizeof c->dir, e) < 0)
        return -1;
    snprintf(c->root, sizeof c->root, "%s", c->dir);
    char *slash = strrchr(c->root, '/');
    if (slash && slash != c->root)
        *slash = '\0';

    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/manifest.json", c->dir);
    char shown[PATH_MAX];
    exec_display_path(path, shown, sizeof shown);
    json_error_t je;
    c->json = json_load_file(path, 0, &je);
    if (!c->json)
        return err_set(e, ERR_RUNTIME, "%s, line %d: %s", shown, je.line, je.text);
    json_t *lessons = json_object_get(c->json, "lessons");
    if (!json_is_array(lessons) || json_array_size(lessons) == 0) {
        course_free(c);
        return err_set(e, ERR_RUNTIME, "%s: no \"lessons\" list", shown);
    }
    c->n = json_array_size(lessons);
    c->lessons = calloc(c->n, sizeof *c->lessons);
    if (!c->lessons) {
        course_free(c);
        return err_set(e, ERR_RUNTIME, "out of memory");
    }
    for (size_t i = 0; i < c->n; i++)
        if (load_lesson(json_array_get(lessons, i), &c->lessons[i], i + 1, e) < 0) {
            course_free(c);
            return err_wrap(e, "%s", shown);
        }
    return 0;
}

void course_free(Course *c)
{
    for (size_t i = 0; c->lessons && i < c->n; i++)
        free(c->lessons[i].quiz);
    free(c->lessons);
    json_decref(c->json);
    c->lessons = NULL;
    c->json = NULL;
    c->n = 0;
}

const Lesson *course_find(const Course *c, const char *key, Err *e)
{
    size_t num;
    if (parse_size(key, "lesson", &num, NULL) == 0) {
        if (num >= 1 && num <= c->n)
            return &c->lessons[num - 1];
        err_set(e, ERR_USAGE, "no lesson %s: the course has lessons 1 to %zu (`kvscope lesson list`)", key, c->n);
        return NULL;
    }
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->lessons[i].id, key) == 0)
            return &c->lessons[i];
    err_set(e, ERR_USAGE, "no lesson '%s': give a number 1 to %zu or an id (`kvscope lesson list`)", key, c->n);
    return NULL;
}

void course_path(const Course *c, const char *rel, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", c->dir, rel);
}
