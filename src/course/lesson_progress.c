/* lesson_progress.c: the learner's progress file (see lesson_progress.h). */
#include "course/lesson_progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/outfile.h"
#include "util/state_dir.h"

static ProgressEntry *entry(Progress *p, const char *id, int create)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->e[i].id, id) == 0)
            return &p->e[i];
    if (!create || p->n == PROGRESS_MAX || strlen(id) >= sizeof p->e[0].id)
        return NULL;
    ProgressEntry *x = &p->e[p->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->id, sizeof x->id, "%s", id);
    return x;
}

void progress_load(Progress *p)
{
    memset(p, 0, sizeof *p);
    (void)state_dir_file("progress", p->path, sizeof p->path);
    if (!p->path[0])
        return;
    FILE *f = fopen(p->path, "r");
    if (!f)
        return;
    char line[256], id[64];
    while (fgets(line, sizeof line, f)) {
        int right, total;
        if (sscanf(line, "done %63s", id) == 1) {
            ProgressEntry *x = entry(p, id, 1);
            if (x)
                x->done = 1;
        } else if (sscanf(line, "quiz %63s %d %d", id, &right, &total) == 3 && total > 0 && right >= 0 &&
                   right <= total) {
            ProgressEntry *x = entry(p, id, 1);
            if (x) {
                x->quiz_right = right;
                x->quiz_total = total;
            }
        }
    }
    fclose(f);
}

const ProgressEntry *progress_get(const Progress *p, const char *id)
{
    return entry((Progress *)p, id, 0);
}

void progress_mark_done(Progress *p, const char *id)
{
    ProgressEntry *x = entry(p, id, 1);
    if (x)
        x->done = 1;
}

void progress_record_quiz(Progress *p, const char *id, int right, int total)
{
    ProgressEntry *x = entry(p, id, 1);
    if (!x)
        return;
    /* better means a larger share right; a new quiz length replaces the old */
    if (x->quiz_total == 0 || x->quiz_total != total || right > x->quiz_right) {
        x->quiz_right = right;
        x->quiz_total = total;
    }
}

int progress_save(const Progress *p, Err *e)
{
    if (!p->path[0])
        return err_set(e, ERR_RUNTIME, "cannot save progress: neither XDG_STATE_HOME nor HOME is an absolute path");
    if (state_dir_make(p->path) < 0)
        return err_set(e, ERR_RUNTIME, "cannot create the state directory for progress: %s", strerror(errno));
    OutFile o;
    if (outfile_open(&o, p->path, e) < 0)
        return err_wrap(e, "cannot save progress");
    fprintf(o.f, "# kvscope lesson progress: `done ID` and `quiz ID RIGHT TOTAL` lines\n");
    for (size_t i = 0; i < p->n; i++) {
        if (p->e[i].done)
            fprintf(o.f, "done %s\n", p->e[i].id);
        if (p->e[i].quiz_total)
            fprintf(o.f, "quiz %s %d %d\n", p->e[i].id, p->e[i].quiz_right, p->e[i].quiz_total);
    }
    if (outfile_commit(&o, e) < 0)
        return err_wrap(e, "cannot save progress");
    return 0;
}
