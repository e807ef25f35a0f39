/* mapfile.h: a whole file mapped read-only into memory (mmap), so a
 * checkpoint of gigabytes is never read whole: the kernel pages in what the
 * readers touch. */
#ifndef KVSCOPE_CKPT_MAPFILE_H
#define KVSCOPE_CKPT_MAPFILE_H

#include <stddef.h>

#include "util/err.h"

typedef struct {
    const unsigned char *data; /* [size] bytes of the file; NULL for an empty file */
    size_t size;
} MappedFile;

/* Map the regular file at path. ERR_RUNTIME when it cannot be opened or
 * mapped (the message names the system's reason), ERR_USAGE when path is a
 * directory or another non-regular file. An empty file maps to data NULL,
 * size 0 (the readers then report it as truncated). */
int mapfile_open(MappedFile *f, const char *path, Err *e);

/* Unmap; f may be zeroed or already closed. */
void mapfile_close(MappedFile *f);

#endif
