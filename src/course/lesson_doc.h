/* lesson_doc.h: a lesson's Markdown, read as blocks, its check blocks, and
 * the rule that keeps its figures honest.
 *
 * Blocks: headings (#...), paragraphs (runs of non-blank lines: text,
 * lists, tables), quotes (> ...), fences (```info ... ```), and check
 * blocks (```check ... ```), whose lines are `key: value`:
 *
 *   id:     unique in the course
 *   run:    a kvscope command that prints --format json or tsv
 *   value:  an expression picking a number from its output (lesson_value.h)
 *   expect: the figure as the prose writes it ("15,150", "3.88", "yes")
 *   tol:    optional: "0.01" or "5%" (measured figures need one)
 *   measured: yes, for a figure measured on the learner's machine (time,
 *           bandwidth): it needs a tol, and the lint only warns when it fails
 *   hint:   what to think about when it fails
 *
 * The figure rule (the lint): a figure is a number in the prose with three
 * or more digits, or a decimal point, or a ratio or share (3.88x, 8x, 3%),
 * or two digits and a unit (B, KiB, MiB, GiB, KB, MB, GB, TB, bytes, ms,
 * GB/s, FLOPs: "18 B" is a figure, "2 bytes a value" a definition). Every figure must be
 * beside a check: equal to the expect of, or a number in the command, value
 * or tolerance of, a check block in the same section (between two headings; put the check
 * right after the paragraph that states it). Exempt: headings, fences other than check
 * (code and commands to type, never results), quotes that open with
 * "Seed NNN" (a source document's words, quoted), inline code that is a
 * command (`kvscope ...`, `cc ...`, `make ...`), numbers that are part of a
 * name (q8_0, Llama-3-8B, AVX-512) and numbers after "seed" or "lesson".
 * Conversely, each check's expected figure must appear in the prose of its
 * section, so no check hides from the reader. */
#ifndef KVSCOPE_COURSE_LESSON_DOC_H
#define KVSCOPE_COURSE_LESSON_DOC_H

#include <stddef.h>
#include <stdio.h>

#include "util/err.h"

typedef enum { BLK_HEADING, BLK_PARA, BLK_QUOTE, BLK_FENCE, BLK_CHECK } BlockKind;

typedef struct {
    const char *id, *run, *value, *expect, *tol, *hint, *measured;
    size_t line;
} CheckSpec;

typedef struct {
    BlockKind kind;
    size_t line;       /* first line, 1-based */
    char *text;        /* the block's lines joined by '\n' (fences: the inside only) */
    char info[32];     /* a fence's info string */
    CheckSpec check;   /* BLK_CHECK: fields point into text */
} Block;

typedef struct {
    Block *blocks;
    size_t n;
} LessonDoc;

/* Parse Markdown text. Fails (ERR_RUNTIME, naming the line) on an
 * unterminated fence or a malformed check block. */
int doc_parse(const char *markdown, LessonDoc *d, Err *e);
/* Read and parse a file. */
int doc_load(const char *path, LessonDoc *d, Err *e);
void doc_free(LessonDoc *d);

/* Print the lesson for a terminal: the prose as written, fences indented,
 * each check as its command and the figure it must give. */
void doc_render(FILE *f, const LessonDoc *d);

/* A figure found in prose. */
typedef struct {
    char text[48];
    double value;
    size_t line;
} DocFigure;

/* Numbers of `text` (prose); with only_figures, just the figures of the
 * rule above. Returns how many were found (at most cap are stored). */
size_t doc_numbers(const char *text, size_t line, int only_figures, DocFigure *out, size_t cap);

/* One problem the figure rule found. */
typedef void (*DocProblemFn)(void *user, size_t line, const char *msg);

/* Apply the figure rule to d; calls fn for each problem, returns how many. */
size_t doc_lint_figures(const LessonDoc *d, DocProblemFn fn, void *user);

#endif
