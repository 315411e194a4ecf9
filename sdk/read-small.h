/*
 * sdk (internal): a small file read whole, for the sdk and the static
 * observer alike (both compile read-small.c).
 */
#ifndef CORDON_SDK_READ_SMALL_H
#define CORDON_SDK_READ_SMALL_H

#include <stddef.h>
#include <sys/types.h>

/* The first size - 1 bytes of a small file (a /proc file, a lock file's
 * owner, a canary) into the caller's buf, NUL-terminated: name under dirfd
 * (AT_FDCWD for a path), never through a last-component link nor blocking
 * on a FIFO. The length, or -1 with errno. */
ssize_t cordon__fs_read_small(int dirfd, const char *name, char *buf, size_t size);

#endif
