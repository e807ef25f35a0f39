/* files.h: finding kvscope's own files (data, scripts) without knowing
 * where it was installed, and listing them. */
#ifndef KVSCOPE_UTIL_FILES_H
#define KVSCOPE_UTIL_FILES_H

#include <stddef.h>
#include <stdio.h>

#include "util/err.h"

/* Find rel under the folder named `folder` ("data", "plots"): in $env_var
 * when that is set, else in that folder beside the executable, one level
 * above it, or in share/kvscope one level above it, else in the working
 * directory. Returns 0 and fills out (cap
 * bytes) with the path of a readable file or folder, -1 when none is found. */
int files_find(const char *env_var, const char *folder, const char *rel, char *out, size_t cap);

/* The names of the files in folder dir that end in suffix, without it,
 * sorted and comma-separated into buf (empty when the folder is missing). */
void files_list(const char *dir, const char *suffix, char *buf, size_t cap);

/* Open an input file for reading: a descriptor, or -1 with e filled.
 * Opened without blocking, so a FIFO or a device is refused instead of
 * waited on: ERR_USAGE, one line, for a path that is a folder or any other
 * thing but a regular file (the rule of every input kvscope reads by name);
 * ERR_RUNTIME "cannot read 'PATH': reason" when it cannot be opened, with
 * errno kept for a caller that words it its own way. */
int files_open_input(const char *path, Err *e);

/* files_open_input's check alone, for a reader that opens the file itself
 * (a library's): 0, or -1 with e filled as files_open_input fills it. */
int files_check_input(const char *path, Err *e);

/* files_open_input as a stdio stream ("rb"); NULL with e filled. */
FILE *files_fopen_input(const char *path, Err *e);

/* Read a whole text file (path "-" is stdin) into *out, NUL-terminated,
 * its length in *len; the caller frees *out. ERR_RUNTIME, one line, for a
 * missing or unreadable file; ERR_USAGE for one that is empty, one larger
 * than max_bytes, or one that holds a NUL byte (binary, not text). */
int files_read_text(const char *path, size_t max_bytes, char **out, size_t *len, Err *e);

#endif
