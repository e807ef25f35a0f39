#include "ckpt/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int mapfile_open(MappedFile *f, const char *path, Err *e)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO is refused below, not waited on */
    if (fd < 0)
        return err_set(e, ERR_RUNTIME, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int saved = errno;
        close(fd);
        return err_set(e, ERR_RUNTIME, "%s: cannot stat: %s", path, strerror(saved));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(e, ERR_USAGE, "%s: not a regular file", path);
    }
    if (st.st_size == 0) { /* mmap refuses a length of 0 */
        close(fd);
        return 0;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd); /* the mapping keeps the file */
    if (p == MAP_FAILED)
        return err_set(e, ERR_RUNTIME, "%s: cannot map %lld bytes: %s", path, (long long)st.st_size,
                       strerror(saved));
    f->data = p;
    f->size = (size_t)st.st_size;
    return 0;
}

void mapfile_close(MappedFile *f)
{
    if (f->data)
        munmap((void *)f->data, f->size);
    f->data = NULL;
    f->size = 0;
}
