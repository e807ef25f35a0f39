/* tempfiles.c: the registry of temporaries and the handler that removes
 * them on a fatal signal (tempfiles.h).
 *
 * Entries are added and forgotten by one thread (the command's); the handler
 * may run on any thread, so the slots are atomic pointers and an entry is
 * freed only when no handler has started (the Dekker pattern of `dying` and
 * the slot, both sequentially consistent): a handler never reads freed
 * memory. Slots are a stack: an entry goes on top, and the top shrinks past
 * forgotten ones. */
#include "util/tempfiles.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

typedef struct {
    TempKind kind;
    char *to;     /* TEMP_RESTORE: where the copy goes back; else NULL */
    char path[];
} Entry;

#define MAX_ENTRIES 4096
static _Atomic(Entry *) slots[MAX_ENTRIES];
static atomic_int top; /* slots [0, top) may be in use */
static atomic_int dying;

int tempfiles_add(TempKind kind, const char *path, const char *to)
{
    int n = atomic_load(&top);
    if (n >= MAX_ENTRIES)
        return -1;
    size_t len = strlen(path) + 1, to_len = to ? strlen(to) + 1 : 0;
    Entry *en = malloc(sizeof *en + len + to_len);
    if (!en)
        return -1;
    en->kind = kind;
    memcpy(en->path, path, len);
    en->to = to ? en->path + len : NULL;
    if (to)
        memcpy(en->to, to, to_len);
    atomic_store(&slots[n], en); /* whole before it is seen */
    atomic_store(&top, n + 1);
    return n;
}

void tempfiles_forget(int id)
{
    if (id < 0 || id >= MAX_ENTRIES)
        return;
    Entry *en = atomic_exchange(&slots[id], NULL);
    if (en && !atomic_load(&dying))
        free(en); /* else a handler may be reading it; the process is ending anyway */
    int n = atomic_load(&top);
    while (n > 0 && !atomic_load(&slots[n - 1]))
        n--;
    atomic_store(&top, n);
}

int tempfiles_mark(void)
{
    return atomic_load(&top);
}

/* Remove the files in dir, one level, with system calls only (opendir
 * allocates, which a signal handler must not). */
static void remove_files_in(const char *dir)
{
#ifdef __linux__
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096] __attribute__((aligned(8)));
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long at = 0; at < n;) {
            /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
            unsigned short reclen;
            memcpy(&reclen, buf + at + 16, sizeof reclen);
            const char *name = buf + at + 19;
            if (!(name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))))
                unlinkat(fd, name, 0);
            at += reclen;
        }
    }
    close(fd);
#else
    (void)dir;
#endif
}

static void undo(const Entry *en)
{
    switch (en->kind) {
    case TEMP_FILE:
        unlink(en->path);
        break;
    case TEMP_TREE:
        remove_files_in(en->path);
        rmdir(en->path);
        break;
    case TEMP_DIR:
        rmdir(en->path);
        break;
    case TEMP_RESTORE:
        rename(en->path, en->to);
        break;
    }
}

void tempfiles_undo_from(int from)
{
    for (int i = atomic_load(&top) - 1; i >= from && i >= 0; i--) {
        Entry *en = atomic_load(&slots[i]);
        if (en)
            undo(en);
        tempfiles_forget(i);
    }
}

void tempfiles_forget_from(int from)
{
    for (int i = atomic_load(&top) - 1; i >= from && i >= 0; i--)
        tempfiles_forget(i);
}

static const int caught[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };

void tempfiles_on_signal(int sig)
{
    atomic_store(&dying, 1);
    for (int i = MAX_ENTRIES - 1; i >= 0; i--) { /* every slot: one being added may be above top yet */
        Entry *en = atomic_load(&slots[i]);
        if (en)
            undo(en);
    }
    /* die of the signal, as without the handler: the shell sees 128 + sig */
    struct sigaction dfl = { 0 };
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
}

void tempfiles_catch_signals(void)
{
    struct sigaction sa = { 0 };
    sa.sa_handler = tempfiles_on_signal;
    sigfillset(&sa.sa_mask); /* one cleanup at a time */
    for (size_t i = 0; i < sizeof caught / sizeof caught[0]; i++) {
        struct sigaction old;
        if (sigaction(caught[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
            sigaction(caught[i], &sa, NULL);
    }
}
